"""Every RunConfig option is real (issue 14, item 8): changing any leaf field changes what the run does.

`CHECKS` maps each leaf field of RunConfig (its dotted path) to a check that two values of that field
give two different observations of the component that consumes it: the rollout settings, the data
and prompts a Trainer loads, its rewards, the kept groups and trained samples of a step, the weights
after an update, the learning-rate curve, what a short run writes. `test_every_field_has_a_check`
fails when a field is added without one, so an option that nothing reads cannot come back unseen.

The checks are cheap: a Trainer on an untrained tiny model builds in milliseconds, and rollouts are
replaced by canned ones (`canned_roll`), so the update, the filters and the loop run on known text.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import BaseModel

from trainer import cli
from trainer.config import RunConfig, merge_overrides, validate_config
from trainer.loop.collect import Group
from trainer.loop.train import Trainer, run_training
from trainer.report import client as report
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings, Trajectory
from trainer.trajectory import Completion
from trainer.verl.overrides import VerlPaths, verl_overrides

FENCE = "```"
SEARCH = {"protocol": "search_r1", "environment": "search"}


def leaf_fields(model: type[BaseModel] = RunConfig, prefix: str = "") -> list[str]:
    """The dotted paths of a config model's leaf fields (a section's fields, recursively)."""
    paths = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            paths += leaf_fields(kind, f"{prefix}{name}.")
        else:
            paths.append(prefix + name)
    return paths


def at(path: str, value: Any) -> dict[str, Any]:
    """`{"a": {"b": value}}` for the path "a.b"."""
    head, _, rest = path.partition(".")
    return {head: at(rest, value) if rest else value}


@dataclass
class Context:
    model: Path  # an untrained tiny model
    other_model: Path  # another one, with other weights
    tmp_path: Path
    monkeypatch: pytest.MonkeyPatch

    def config(self, overrides: dict[str, Any]) -> RunConfig:
        base = {
            "model": {"name_or_path": str(self.model)},
            "data": {"train_dataset": "arithmetic", "prompt_template": "plain", "max_response_tokens": 64},
            "rollout": {"prompts_per_step": 2, "group_size": 5, "trajectories_to_report": 1},
            "schedule": {"max_steps": 1},
        }
        return validate_config(merge_overrides(base, overrides))

    def trainer(self, overrides: dict[str, Any]) -> Trainer:
        out = self.tmp_path / f"run-{time.perf_counter_ns()}"
        return Trainer(
            self.config(overrides), reporter=NullReporter(), out_dir=out, model_cache=out / "cache", log=_quiet
        )


class NullReporter:
    stopped_by_dashboard = False

    def log_metrics(self, step: int, values: dict[str, float]) -> None: ...
    def log_trajectories(self, trajectories: list) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def set_phase(self, *args: Any, **kwargs: Any) -> None: ...


def _quiet(message: str) -> None: ...


# --- canned rollouts ---------------------------------------------------------------------------


def canned_texts(truth: str) -> list[tuple[str, bool]]:
    """The responses of a canned group, in turn: (text, cut at the length limit)."""
    return [
        (f"The product is \\boxed{{{truth}}}.", False),  # right
        (f"{FENCE}python\nprint({truth})\n{FENCE}\n{FENCE}output\n{truth}\n{FENCE}\nSo \\boxed{{{truth}}}.", False),
        ("Let me think about it step by", True),  # cut, unsolved
        ("la la " * 12, False),  # repetitive, no answer
    ]


def canned_roll(self: Trainer, examples, *, group_size: int, seed: int, **how: Any):
    """Trainer.roll without a model: each group holds the canned responses in turn. The second is right
    with an output block the model wrote itself (a shortcut: no call ran)."""
    groups = []
    for index, example in examples:
        trajectories = []
        for sample in range(group_size):
            text, cut = canned_texts(str(example.ground_truth))[sample % 4]
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            completion = Completion(text, self.config.tools.protocol, (), truncated=cut, response_tokens=len(ids))
            trajectories.append(
                Trajectory(completion, self.prompt_ids(example), ids, [1] * len(ids), [0] * len(ids), [0.0] * len(ids))
            )
        groups.append(Group(index=index, example=example, trajectories=trajectories))
    everything = [t for g in groups for t in g.trajectories]
    return groups, RolloutResult(trajectories=everything, wall_s=0.0, gen_s=0.0, tool_s=0.0)


def canned_groups(trainer: Trainer) -> list[Group]:
    rollout = trainer.config.rollout
    groups, _ = canned_roll(
        trainer, trainer.draw(0, 0, rollout.prompts_per_step), group_size=rollout.group_size, seed=0
    )
    trainer.score(groups, 0)
    return groups


def weights(model: torch.nn.Module) -> str:
    return hashlib.sha256(b"".join(p.detach().float().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()


# --- observations: what a component makes of a config -----------------------------------------


def settings(ctx: Context, overrides: dict) -> RolloutSettings:
    return RolloutSettings.from_config(ctx.config(overrides))


def loaded_model(ctx: Context, overrides: dict) -> tuple[str, str, str]:
    try:
        trainer = ctx.trainer(overrides)
    except ValueError as exc:  # model.device 'cuda' without a GPU
        return ("refused", str(exc), "")
    parameter = next(trainer.model.parameters())
    return weights(trainer.model), str(parameter.dtype), str(parameter.device)


def engine_built(ctx: Context, overrides: dict) -> str:
    try:
        return type(ctx.trainer(overrides).engine).__name__
    except ValueError as exc:  # engine 'vllm' on a machine or model it cannot serve
        return f"refused: {exc}"


def train_rows(ctx: Context, overrides: dict) -> tuple:
    try:
        trainer = ctx.trainer(overrides)
    except ValueError as exc:  # every row dropped
        return ("refused", str(exc))
    drawn = trainer.draw(0, 0, 4)
    return len(trainer.train_data), len(trainer.val_data), [(i, e.id, json.dumps(e.prompt)) for i, e in drawn]


def prompt_ids(ctx: Context, overrides: dict) -> list[int]:
    trainer = ctx.trainer(overrides)
    return trainer.prompt_ids(trainer.train_data[0])


def rewards(ctx: Context, overrides: dict) -> list[float]:
    return [r.total for g in canned_groups(ctx.trainer(overrides)) for r in g.rewards]


def collected(ctx: Context, overrides: dict) -> tuple:
    """One step's kept groups (their sizes and untrained samples) and its group counts."""
    trainer = ctx.trainer(overrides)
    trainer.roll = types.MethodType(canned_roll, trainer)
    kept, metrics = trainer.collect(0)
    untrained = [sum(1 for t in g.trajectories if not any(t.loss_mask)) for g in kept]
    return [len(g.trajectories) for g in kept], untrained, metrics["groups/sampled"]


UPDATE_BASE = {"optim": {"learning_rate": 1e-2, "ppo_epochs": 2}}


# Updates are deterministic (a Trainer seeds everything): each config's is made once, keyed by the
# validated config, so the many checks against a default value share one.
_UPDATED: dict[str, str] = {}


def updated(ctx: Context, overrides: dict) -> str:
    """The weights after one update on canned groups: two epochs at a high rate, so the second is
    off-policy, the clips bind and the policy has moved from the KL reference."""
    config = ctx.config(merge_overrides(UPDATE_BASE, overrides))
    key = config.model_dump_json()
    if key not in _UPDATED:
        trainer = ctx.trainer(merge_overrides(UPDATE_BASE, overrides))
        trainer.update(canned_groups(trainer))
        _UPDATED[key] = weights(trainer.model)
    return _UPDATED[key]


def lr_curve(ctx: Context, overrides: dict) -> list[float]:
    trainer = ctx.trainer(merge_overrides({"schedule": {"max_steps": 6}}, overrides))
    curve = []
    for _ in range(6):
        curve.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.optimizer.step()  # no gradients: the weights stay; the schedule advances as in training
        trainer.scheduler.step()
    return curve


def ray_rollout_made(ctx: Context, overrides: dict) -> dict | None:
    """What the Trainer asks of trainer.rollout.ray.RayRollout (a stand-in: no Ray is started)."""
    made: dict[str, Any] = {}

    class RayRollout:
        def __init__(self, model, tokenizer, **kwargs: Any) -> None:
            made.update(kwargs)

    stand_in = types.ModuleType("trainer.rollout.ray")
    stand_in.RayRollout = RayRollout
    ctx.monkeypatch.setitem(sys.modules, "trainer.rollout.ray", stand_in)
    ctx.trainer(overrides)
    made.pop("log", None)
    return made or None


def run_outputs(ctx: Context, overrides: dict) -> tuple:
    """What a short run with canned rollouts and no update writes: metric names per step,
    trajectories, checkpoints."""
    ctx.monkeypatch.setattr(Trainer, "roll", canned_roll)
    ctx.monkeypatch.setattr(Trainer, "update", lambda self, *args, **kwargs: {})
    out = ctx.tmp_path / f"out-{time.perf_counter_ns()}"
    with report.Reporter(out) as reporter:
        run_training(ctx.config(overrides), reporter=reporter, out_dir=out, model_cache=out / "cache", log=_quiet)
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    names = [sorted(k for k in s["values"] if not k.startswith(("timing_s/", "perf/"))) for s in steps]
    reported = len((out / "trajectories.jsonl").read_text().splitlines())
    checkpoints = sorted(p.name for p in (out / "checkpoints").glob("*")) if (out / "checkpoints").exists() else []
    return names, reported, checkpoints


def eval_passes(ctx: Context, overrides: dict) -> list[tuple]:
    """The passes an evaluation asks of the rollout: (samples a prompt, greedy, temperature)."""
    trainer = ctx.trainer(merge_overrides({"data": {"val_dataset": "arithmetic:easy"}}, overrides))
    asked = []

    def roll(self: Trainer, examples, *, group_size: int, seed: int, greedy: bool = False, temperature=None):
        asked.append((group_size, greedy, temperature))
        return canned_roll(self, examples, group_size=group_size, seed=seed)

    trainer.roll = types.MethodType(roll, trainer)
    trainer.evaluate(0)
    return asked


def reporter_made(ctx: Context, overrides: dict) -> dict:
    """The keyword arguments `python -m trainer run` gives the Reporter (stopped right there)."""
    made: dict[str, Any] = {}

    class Made(Exception): ...

    def stand_in(out_dir: Any, **kwargs: Any) -> None:
        made.update(kwargs)
        raise Made

    ctx.monkeypatch.setattr(report, "Reporter", stand_in)
    path = ctx.tmp_path / f"config-{time.perf_counter_ns()}.json"
    path.write_text(json.dumps(ctx.config(overrides).model_dump(mode="json")))
    with pytest.raises(Made):
        cli.main(["run", "--config", str(path), "--out", str(ctx.tmp_path / "cli-out")])
    return made


TRACES = [
    {
        "prompt": f"What is {a} + {b}?",
        "response": f"{FENCE}python\nprint({a} + {b})\n{FENCE}\n{FENCE}output\n{a + b}\n{FENCE}\n\\boxed{{{a + b}}}",
    }
    for a, b in ((2, 3), (40, 2), (7, 8), (12, 30))
]


def traces_file(ctx: Context, rows: list[dict]) -> str:
    path = ctx.tmp_path / f"traces-{len(rows)}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def after_sft(ctx: Context, overrides: dict) -> str:
    """The policy's weights once the Trainer is built (the SFT cold start, if any, done)."""
    base = {"sft": {"dataset": traces_file(ctx, TRACES), "enabled": True, "batch_size": 2}}
    return loaded_model(ctx, merge_overrides(base, overrides))[0]


def verl_overrides_of(ctx: Context, overrides: dict) -> list[str]:
    """What verl's main_ppo is given for the run (trainer.verl.overrides): engine 'verl', a Hugging Face
    model name (tirlab's own CPU models are refused there)."""
    config = ctx.config(merge_overrides({"engine": "verl", "model": {"name_or_path": VERL_MODEL}}, overrides))
    return verl_overrides(config, VERL_PATHS)


VERL_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
VERL_PATHS = VerlPaths(
    train_files="train.parquet",
    val_files=None,
    agent_loop_config="agent_loop.yaml",
    run_config="run-config.json",
    checkpoints="checkpoints",
    rollout_data_dir="rollouts",
    project="tirlab",
    experiment="every-option",
)


# --- the checks ----------------------------------------------------------------------------------


Check = Callable[[Context], None]


def differs(observe: Callable[[Context, dict], Any], path: str, a: Any, b: Any, **base: Any) -> Check:
    """A check that `path` = a and `path` = b (over the `base` overrides) are observed differently."""

    def check(ctx: Context) -> None:
        seen_a = observe(ctx, merge_overrides(base, at(path, a)))
        seen_b = observe(ctx, merge_overrides(base, at(path, b)))
        assert seen_a != seen_b, f"{path} = {a!r} and {b!r}: the same {observe.__name__}: {seen_a!r}"

    return check


def differs_in(
    observe: Callable[[Context, dict], Any], path: str, a: Callable[[Context], Any], b: Callable[[Context], Any]
) -> Check:
    """As `differs`, for values made from the context (a model directory, a file)."""

    def check(ctx: Context) -> None:
        differs(observe, path, a(ctx), b(ctx))(ctx)

    return check


def rollouts_overlap_updates(ctx: Context) -> None:
    """rollout.async_rollouts: step 1's rollouts start while step 0's update is still running."""
    spans: dict[str, list[tuple[float, float]]] = {"roll": [], "update": []}

    def timed(name: str, body: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return body(*args, **kwargs)
            finally:
                spans[name].append((start, time.perf_counter()))

        return wrapper

    def slow_update(self: Trainer, *args: Any, **kwargs: Any) -> dict[str, float]:
        time.sleep(0.5)
        return {}

    ctx.monkeypatch.setattr(Trainer, "roll", timed("roll", canned_roll))
    ctx.monkeypatch.setattr(Trainer, "update", timed("update", slow_update))
    for async_rollouts in (False, True):
        spans["roll"].clear()
        spans["update"].clear()
        config = ctx.config({"rollout": {"async_rollouts": async_rollouts}, "schedule": {"max_steps": 2}})
        run_training(
            config,
            reporter=NullReporter(),
            out_dir=ctx.tmp_path / f"a{async_rollouts}",
            model_cache=ctx.tmp_path,
            log=_quiet,
        )
        overlapped = spans["roll"][1][0] < spans["update"][0][1]
        assert overlapped == async_rollouts, (
            f"async_rollouts={async_rollouts}: rollouts {spans['roll']}, updates {spans['update']}"
        )


ARITHMETIC_VAL = {"data": {"val_dataset": "arithmetic"}}

CHECKS: dict[str, Check] = {
    "seed": differs(train_rows, "seed", 0, 1),
    "model.name_or_path": differs_in(
        loaded_model, "model.name_or_path", lambda ctx: str(ctx.model), lambda ctx: str(ctx.other_model)
    ),
    "model.dtype": differs(loaded_model, "model.dtype", "float32", "bfloat16"),
    "model.device": differs(loaded_model, "model.device", "cpu", "cuda"),
    "engine": differs(engine_built, "engine", "hf", "vllm"),
    "data.train_dataset": differs(train_rows, "data.train_dataset", "arithmetic", "gsm8k"),
    "data.val_dataset": differs(train_rows, "data.val_dataset", None, "arithmetic"),
    "data.extra_val_datasets": differs(
        train_rows, "data.extra_val_datasets", [], ["arithmetic:hard"], **ARITHMETIC_VAL
    ),
    "data.prompt_template": differs(prompt_ids, "data.prompt_template", "plain", "torl"),
    "data.max_prompt_tokens": differs(prompt_ids, "data.max_prompt_tokens", 256, 8),
    # The plain prompts of about half the arithmetic rows fit in 34 tokens.
    "data.overlong_prompts": differs(
        train_rows, "data.overlong_prompts", "truncate", "drop", data={"max_prompt_tokens": 34}
    ),
    "data.max_response_tokens": differs(settings, "data.max_response_tokens", 64, 32),
    "tools.protocol": differs(settings, "tools.protocol", "python_markdown", "retool"),
    # What the rollout does with each (stop at </tool_call>, run, feed back): tests/trainer/test_envs.py.
    "tools.environment": differs(
        settings, "tools.environment", "none", "function_calling", tools={"protocol": "tool_call_json"}
    ),
    "tools.max_tool_calls": differs(settings, "tools.max_tool_calls", 1, 2),
    "tools.feedback": differs(settings, "tools.feedback", "torl", "tirlab"),
    "tools.output_max_chars": differs(settings, "tools.output_max_chars", 256, 100),
    "tools.sandbox_timeout_s": differs(settings, "tools.sandbox_timeout_s", 10.0, 2.0),
    "tools.sandbox_memory_mb": differs(settings, "tools.sandbox_memory_mb", 1024, 512),
    "tools.train_on_tool_output": differs(settings, "tools.train_on_tool_output", False, True),
    # What the search environment does with each (searches the corpus, asks the URL, returns k passages):
    # tests/trainer/test_search_environment.py.
    "tools.search_corpus": differs(settings, "tools.search_corpus", "search-mini", "corpus.jsonl", tools=SEARCH),
    "tools.search_url": differs(
        settings, "tools.search_url", "http://127.0.0.1:8000/retrieve", "http://127.0.0.1:8001/retrieve", tools=SEARCH
    ),
    "tools.search_topk": differs(settings, "tools.search_topk", 3, 5, tools={**SEARCH, "search_corpus": "search-mini"}),
    "reward.name": differs(rewards, "reward.name", "torl", "zerotir"),
    "reward.params": differs(rewards, "reward.params", {}, {"exec_error_penalty": 0.5}),
    "rollout.prompts_per_step": differs(collected, "rollout.prompts_per_step", 2, 3),
    "rollout.group_size": differs(collected, "rollout.group_size", 5, 4),
    "rollout.temperature": differs(settings, "rollout.temperature", 1.0, 0.7),
    "rollout.top_p": differs(settings, "rollout.top_p", 1.0, 0.9),
    "rollout.async_rollouts": rollouts_overlap_updates,
    "rollout.trajectories_to_report": differs(run_outputs, "rollout.trajectories_to_report", 1, 2),
    "rollout.backend": differs(ray_rollout_made, "rollout.backend", "local", "ray"),
    "rollout.replicas": differs(ray_rollout_made, "rollout.replicas", 1, 2, rollout={"backend": "ray"}),
    "rollout.sandbox_actors": differs(ray_rollout_made, "rollout.sandbox_actors", 1, 2, rollout={"backend": "ray"}),
    "optim.learning_rate": differs(lr_curve, "optim.learning_rate", 1e-5, 1e-4),
    "optim.lr_schedule": differs(lr_curve, "optim.lr_schedule", "constant", "cosine"),
    "optim.warmup_steps": differs(lr_curve, "optim.warmup_steps", 0, 2),
    "optim.grad_clip": differs(updated, "optim.grad_clip", 0.0, 1e-6),
    "optim.ppo_epochs": differs(updated, "optim.ppo_epochs", 1, 3),
    "optim.mini_batch_prompts": differs(updated, "optim.mini_batch_prompts", None, 1),
    "grpo.clip_low": differs(updated, "grpo.clip_low", 0.2, 0.01),
    "grpo.clip_high": differs(updated, "grpo.clip_high", 0.28, 0.01),
    "grpo.kl_coef": differs(updated, "grpo.kl_coef", 0.0, 0.1),
    "grpo.loss_agg": differs(updated, "grpo.loss_agg", "token-mean", "seq-mean-token-sum"),
    "grpo.scale_by_std": differs(updated, "grpo.scale_by_std", True, False),
    "grpo.entropy_coef": differs(updated, "grpo.entropy_coef", 0.0, 0.1),
    "grpo.clip_ratio_c": differs(updated, "grpo.clip_ratio_c", None, 1.01),
    # Canned groups of 5 are 3/5 right (torl: +1 / -1), all 0 under zerotir's format-gated reward.
    "filtering.drop_all_same_reward": differs(
        collected, "filtering.drop_all_same_reward", False, True, reward={"name": "zerotir"}
    ),
    "filtering.accuracy_min": differs(collected, "filtering.accuracy_min", None, 0.7),
    "filtering.accuracy_max": differs(collected, "filtering.accuracy_max", None, 0.4),
    "filtering.max_resample_batches": differs(
        collected, "filtering.max_resample_batches", 0, 1, filtering={"accuracy_min": 0.7}
    ),
    "filtering.drop_truncated_unsolved": differs(collected, "filtering.drop_truncated_unsolved", False, True),
    "filtering.repeatness_max": differs(collected, "filtering.repeatness_max", None, 0.2),
    "filtering.trigram_repetition_max": differs(collected, "filtering.trigram_repetition_max", None, 0.6),
    "filtering.drop_shortcut": differs(collected, "filtering.drop_shortcut", False, True),
    "sft.enabled": differs(after_sft, "sft.enabled", False, True),
    "sft.dataset": differs_in(
        after_sft, "sft.dataset", lambda ctx: traces_file(ctx, TRACES), lambda ctx: traces_file(ctx, TRACES[:2])
    ),
    "sft.epochs": differs(after_sft, "sft.epochs", 1, 2),
    "sft.learning_rate": differs(after_sft, "sft.learning_rate", 1e-4, 1e-3),
    "sft.batch_size": differs(after_sft, "sft.batch_size", 1, 4),
    "schedule.max_steps": differs(run_outputs, "schedule.max_steps", 1, 2),
    "schedule.eval_every": differs(run_outputs, "schedule.eval_every", 0, 1, **ARITHMETIC_VAL),
    "schedule.eval_pass_k": differs(
        run_outputs, "schedule.eval_pass_k", 1, 2, schedule={"eval_every": 1}, **ARITHMETIC_VAL
    ),
    "schedule.eval_temperature": differs(
        eval_passes, "schedule.eval_temperature", None, 0.6, schedule={"eval_pass_k": 2}
    ),
    "schedule.eval_before_train": differs(run_outputs, "schedule.eval_before_train", False, True, **ARITHMETIC_VAL),
    "schedule.checkpoint_every": differs(run_outputs, "schedule.checkpoint_every", 0, 1),
    "schedule.heartbeat_s": differs(reporter_made, "schedule.heartbeat_s", 5.0, 1.0),
    # The cluster is verl's (tirlab's own trainer refuses other values): 2 prompts x 5 samples split over it.
    "cluster.nnodes": differs(verl_overrides_of, "cluster.nnodes", 1, 2),
    "cluster.gpus_per_node": differs(verl_overrides_of, "cluster.gpus_per_node", 1, 2),
    "cluster.tensor_parallel": differs(
        verl_overrides_of, "cluster.tensor_parallel", 1, 2, cluster={"gpus_per_node": 2}
    ),
}


def test_every_field_has_a_check() -> None:
    assert sorted(CHECKS) == sorted(leaf_fields()), "a RunConfig field without a check here, or a check of no field"


@pytest.fixture(autouse=True)
def one_thread():
    """The tiny model's small matmuls run many times slower on two threads of a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def other_tiny(tmp_path_factory) -> Path:
    from trainer.models import build_tiny_model

    path = tmp_path_factory.mktemp("tiny-other")
    model, tokenizer = build_tiny_model(seed=1)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize("path", sorted(CHECKS))
def test_changing_the_field_changes_the_run(path: str, random_tiny, other_tiny, tmp_path, monkeypatch) -> None:
    CHECKS[path](Context(model=random_tiny, other_model=other_tiny, tmp_path=tmp_path, monkeypatch=monkeypatch))
