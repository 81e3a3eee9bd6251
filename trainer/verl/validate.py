"""verl's own check of a run's overrides, the part of main_ppo that runs before it needs GPUs.

`python -m trainer.verl.validate` (in verl's environment) reads a JSON list of `{"name", "overrides"}` from
stdin and prints one JSON line per item, `{"name", "ok", "errors"}`, after doing with each what verl 0.9.1's
main_ppo does first (verl/trainer/main_ppo.py:166-181): hydra composes `ppo_trainer` from verl's config
directory with the overrides (a key that does not exist, or a value of the wrong type, is hydra's error),
then `verl.utils.config.validate_config(config, use_reference_policy=need_reference_policy(config),
use_critic=need_critic(config))` (batch divisibility, micro-batch settings, the actor's dataclass), then
builds the config dataclasses main_ppo's workers build from their sections (`omega_conf_to_dataclass`, whose
`__post_init__` checks enums and ranges): the rollout and its checkpoint engine, the reference when KL is
on, and the algorithm's. The model section is not built: its dataclass loads the checkpoint's tokenizer and
config (verl/workers/config/model.py). Nor is the reward section as a whole, which verl never builds as one
(its RewardManagerConfig fails to build alone in 0.9.1: 'super' object has no attribute '__post_init__').

TransferQueue's storage units (`transfer_queue.backend.SimpleStorage.num_data_storage_units`, 8 by default,
_generated_ppo_trainer.yaml:939) are Ray actors started by `tq.init` in main_ppo's TaskRunner
(verl/trainer/main_ppo.py:149), after all of this: composing and validating starts none of them.

`check_with_verl` runs that module from tirlab's environment in a subprocess of verl's python and returns
the errors by item, each naming the tirlab fields behind the verl keys it mentions (trainer.verl.overrides).
Only `main` imports verl.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer.verl.overrides import tirlab_fields

REPO = Path(__file__).resolve().parents[2]
# Importing verl, torch and ray takes seconds; composing each item a fraction of one.
TIMEOUT_S = 600.0


def _section_errors(config: Any) -> list[str]:
    """Build the config dataclasses of the sections main_ppo's trainer and workers build."""
    from verl.trainer.ppo.utils import need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass

    # verl/workers/engine_workers.py:553,651,679 (the actor's is validate_config's, verl/utils/config.py:164);
    # the algorithm's AlgoConfig is what verl's advantage functions take (verl/trainer/ppo/core_algos.py:274).
    sections = ["algorithm", "actor_rollout_ref.rollout", "actor_rollout_ref.rollout.checkpoint_engine"]
    nodes = {}
    for path in sections:
        node = config
        for part in path.split("."):
            node = node[part]
        nodes[path] = node
    if need_reference_policy(config):
        nodes["actor_rollout_ref.ref"] = _reference_section(config)
    errors = []
    for path, node in nodes.items():
        try:
            omega_conf_to_dataclass(node)
        except Exception as exc:  # noqa: BLE001 - any failure of verl's dataclass is the answer
            errors.append(f"{path}: {type(exc).__name__}: {exc}")
    return errors


def _reference_section(config: Any) -> Any:
    """The reference's section as the worker builds its ActorConfig from it: the actor's mini-batch and the
    log-prob settings renamed (verl/workers/engine_workers.py:544-553), on a copy."""
    from omegaconf import open_dict

    ref = copy.deepcopy(config.actor_rollout_ref.ref)
    with open_dict(ref):
        ref.ppo_mini_batch_size = config.actor_rollout_ref.actor.ppo_mini_batch_size
        ref.ppo_micro_batch_size = ref.pop("log_prob_micro_batch_size", None)
        ref.ppo_micro_batch_size_per_gpu = ref.pop("log_prob_micro_batch_size_per_gpu", None)
        ref.use_dynamic_bsz = ref.pop("log_prob_use_dynamic_bsz", False)
        ref.ppo_max_token_len_per_gpu = ref.pop("log_prob_max_token_len_per_gpu", None)
    return ref


def check(overrides: list[str], config_dir: str) -> list[str]:
    """verl's errors for one list of overrides; [] when main_ppo would accept them."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            config = compose(config_name="ppo_trainer", overrides=overrides)
    except Exception as exc:  # noqa: BLE001 - hydra's override and composition errors
        return [f"hydra: {type(exc).__name__}: {exc}"]
    try:
        auto_set_device(config)
        validate_config(
            config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
        )
    except Exception as exc:  # noqa: BLE001 - verl's assertions and ValueErrors
        return [f"verl validate_config: {type(exc).__name__}: {exc}"]
    return _section_errors(config)


def main() -> None:
    import contextlib
    import io

    import verl

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    items = json.load(sys.stdin)
    for item in items:
        # verl prints its progress; stdout carries only the answer lines.
        with contextlib.redirect_stdout(io.StringIO()):
            errors = check(list(item["overrides"]), config_dir)
        print(json.dumps({"name": item["name"], "ok": not errors, "errors": errors}), flush=True)


def check_with_verl(
    named_overrides: Sequence[tuple[str, list[str]]], *, python: str, timeout: float = TIMEOUT_S
) -> dict[str, list[str]]:
    """verl's errors for each named list of overrides, checked in one subprocess of verl's `python`; an
    error naming a verl key or quantity that a tirlab field sets starts with those fields. Every name
    gets an entry ([] when verl accepts it); a failed subprocess is said as such for every name."""
    payload = json.dumps([{"name": name, "overrides": list(overrides)} for name, overrides in named_overrides])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    names = [name for name, _ in named_overrides]
    try:
        done = subprocess.run(
            [python, "-m", "trainer.verl.validate"],
            input=payload,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {name: [f"verl's validation did not run ({python}): {exc}"] for name in names}
    answers: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(answer, dict) and answer.get("name") in names:
            answers[answer["name"]] = [_named(error) for error in answer["errors"]]
    missing = [name for name in names if name not in answers]
    if missing:
        tail = done.stderr.strip()[-2000:]
        failure = f"verl's validation failed (exit {done.returncode}) before answering: {tail}"
        answers |= {name: [failure] for name in missing}
    return answers


def _named(error: str) -> str:
    fields = tirlab_fields(error)
    return f"{', '.join(fields)}: {error}" if fields else error


if __name__ == "__main__":
    main()
