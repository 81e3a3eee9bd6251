"""verl 0.9.1 accepts what tirlab's translation gives it, and its refusals come back naming tirlab's fields.

Every paper preset (those that need a GPU), with engine 'verl' on 1 x 8 and 2 x 8 GPUs, translated by
trainer.verl.overrides, goes through what main_ppo does before it needs GPUs (trainer.verl.validate: hydra's
composition of verl's ppo_trainer, verl's validate_config, the workers' config dataclasses). A preset part
of which main_ppo cannot run (tests/trainer/test_verl_overrides.py PRESET_REFUSALS) is checked without that
part. A misspelt verl key is refused by hydra with its key, a batch verl cannot split over the GPUs by verl
naming tirlab's fields, and a misspelt or mistyped tirlab field by tirlab before any translation. All of it
in one subprocess of verl's python: importing verl takes seconds.
"""

from __future__ import annotations

import pytest

from tests.trainer.test_verl_overrides import PAPER_PRESETS, PATHS, preset_verl_config, verl_config, without_refusals
from tests.verl_env import verl_python
from trainer.config import ConfigError, validate_config
from trainer.verl.overrides import verl_overrides
from trainer.verl.validate import check_with_verl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CLUSTERS = {"1x8": (1, 8), "2x8": (2, 8)}
MISSPELT_KEY = "actor_rollout_ref.actor.clip_ratio_hgh"


def _items() -> dict[str, list[str]]:
    items = {}
    for preset in PAPER_PRESETS:
        for shape, (nnodes, gpus) in CLUSTERS.items():
            config, _ = without_refusals(preset_verl_config(preset, nnodes=nnodes, gpus_per_node=gpus))
            items[f"{preset}@{shape}"] = verl_overrides(config, PATHS)
    base = verl_overrides(verl_config(), PATHS)
    items["misspelt verl key"] = [*base, f"{MISSPELT_KEY}=0.3"]
    # 3 prompts x 3 samples do not split over 8 GPUs: verl's own check (verl/utils/config.py:123-127).
    items["indivisible batch"] = verl_overrides(
        verl_config({"rollout": {"prompts_per_step": 3, "group_size": 3}}), PATHS
    )
    return items


@pytest.fixture(scope="module")
def verdicts() -> dict[str, list[str]]:
    items = _items()
    answers = check_with_verl(list(items.items()), python=verl_python())
    assert set(answers) == set(items)
    return answers


@pytest.mark.parametrize("shape", sorted(CLUSTERS))
@pytest.mark.parametrize("preset", PAPER_PRESETS)
def test_paper_presets_pass_verls_own_checks(verdicts: dict[str, list[str]], preset: str, shape: str) -> None:
    assert verdicts[f"{preset}@{shape}"] == []


def test_a_misspelt_verl_key_is_refused_by_verl_with_its_key(verdicts: dict[str, list[str]]) -> None:
    errors = verdicts["misspelt verl key"]
    assert len(errors) == 1 and MISSPELT_KEY in errors[0] and "hydra" in errors[0]


def test_a_batch_verl_cannot_split_names_tirlabs_fields(verdicts: dict[str, list[str]]) -> None:
    (error,) = verdicts["indivisible batch"]
    assert "must be divisible" in error
    named = error.split(":", 1)[0]
    assert "rollout.prompts_per_step" in named and "rollout.group_size" in named and "cluster.gpus_per_node" in named


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"engine": "verl", "grpo": {"clip_hgh": 0.3}}, "grpo.clip_hgh"),
        ({"engine": "verl", "rollout": {"group_size": "many"}}, "rollout.group_size"),
        ({"engine": "verl", "cluster": {"gpus_per_nod": 8}}, "cluster.gpus_per_nod"),
        ({"engine": "verl", "cluster": {"nnodes": 0}}, "cluster.nnodes"),
    ],
)
def test_a_bad_tirlab_field_is_refused_before_translation(data: dict, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_config(data)
    assert field in caught.value.errors


def test_a_failed_verl_python_is_said_plainly() -> None:
    answers = check_with_verl([("x", ["trainer.nnodes=1"])], python="/nonexistent/python")
    assert answers["x"] and "did not run" in answers["x"][0]
