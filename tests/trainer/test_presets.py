import pytest

from trainer.config import RunConfig, default_config
from trainer.presets import PRESET_DESCRIPTIONS, PRESETS, UnknownPreset, preset_config, preset_names, preset_overrides

PAPERS = ["torl", "zerotir", "retool", "otc-grpo", "otc-ppo", "toolrl", "tool-n1", "artist", "skyrl-async"]


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_validates_and_is_described(name):
    config = preset_config(name)
    assert isinstance(config, RunConfig)
    assert PRESET_DESCRIPTIONS[name]
    # The resolved config round-trips: what a run stores is what it was created from.
    assert RunConfig.model_validate(config.model_dump(mode="json")) == config


def test_there_is_a_preset_for_every_paper_and_the_quickstart_comes_first():
    assert preset_names()[:2] == ["quickstart", "quickstart-otc"]
    assert set(PAPERS) <= set(preset_names())
    assert set(PRESET_DESCRIPTIONS) == set(PRESETS)


def test_quickstart_is_the_issues_prototype_at_the_learning_rate_that_learns_from_our_cold_start():
    config = preset_config("quickstart")
    assert config.model.name_or_path == "tirlab/tiny-char"
    assert config.data.train_dataset == "arithmetic"
    assert config.tools.protocol == "python_markdown"
    assert config.reward.name == "torl"
    assert config.optim.learning_rate == 2e-4  # the prototype's 3e-5 barely moved our cold start
    assert config.rollout.prompts_per_step * config.rollout.group_size == 128
    assert (config.rollout.prompts_per_step, config.rollout.group_size) == (16, 8)
    assert config.schedule.max_steps == 20
    assert config.rollout.temperature == 1.0
    assert config.grpo.scale_by_std is True
    assert config.sft.enabled is True


def test_quickstart_otc_scores_wrong_answers_minus_one_and_keeps_close_to_the_cold_start():
    config = preset_config("quickstart-otc")
    assert config.model.name_or_path == "tirlab/tiny-char" and config.data.train_dataset == "arithmetic"
    assert config.reward.name == "otc_grpo" and config.reward.params["wrong_reward"] == -1.0
    assert config.optim.learning_rate == 3e-4
    assert config.grpo.kl_coef == 0.1  # holds the mental arithmetic that lr 3e-4 alone erodes
    assert config.schedule.max_steps == 50
    assert config.grpo.scale_by_std is True  # without it the prototype collapsed to always-code


def test_smollm2_preset_runs_torl_on_gsm8k_with_a_cpu_sized_batch():
    from trainer.models import SMOLLM2_MODEL

    config = preset_config("smollm2-gsm8k-cpu")
    assert config.model.name_or_path == SMOLLM2_MODEL
    assert config.engine == "hf" and config.model.dtype == "float32"
    assert config.data.train_dataset == "gsm8k"
    assert (config.tools.protocol, config.reward.name) == ("python_markdown", "torl")
    assert (config.rollout.prompts_per_step, config.rollout.group_size) == (4, 4)
    assert config.data.max_response_tokens == 256
    assert (config.optim.learning_rate, config.grpo.kl_coef) == (1e-6, 0.0)  # ToRL's
    assert config.sft.enabled is False


def test_the_tiny_cold_start_in_the_presets_is_the_one_the_model_cache_trains():
    from trainer.models.tiny_cold_start import TINY_SFT

    config = preset_config("quickstart")
    assert (config.sft.epochs, config.sft.learning_rate) == (TINY_SFT.epochs, TINY_SFT.lr)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("torl", {"reward": "torl", "group": 16, "temperature": 1.0, "kl": 0.0}),
        ("zerotir", {"reward": "zerotir", "clip": (0.22, 0.28), "accuracy": (0.05, 0.8)}),
        ("retool", {"reward": "retool", "protocol": "retool", "clip": (0.2, 0.28), "kl": 0.0, "sft": True}),
        ("otc-grpo", {"reward": "otc_grpo", "c": 3.0}),
        ("otc-ppo", {"reward": "otc_ppo", "c": 3.0}),
        ("toolrl", {"reward": "toolrl", "protocol": "tool_call_json", "group": 4}),
        ("tool-n1", {"reward": "tool_n1", "protocol": "tool_call_json", "temperature": 0.7, "kl": 1e-3}),
        ("artist", {"reward": "artist", "protocol": "artist"}),
        ("skyrl-async", {"async": True}),
    ],
)
def test_paper_presets_carry_the_papers_knobs(name, expected):
    config = preset_config(name)
    checks = {
        "reward": config.reward.name,
        "protocol": config.tools.protocol,
        "group": config.rollout.group_size,
        "temperature": config.rollout.temperature,
        "kl": config.grpo.kl_coef,
        "clip": (config.grpo.clip_low, config.grpo.clip_high),
        "accuracy": (config.filtering.accuracy_min, config.filtering.accuracy_max),
        "sft": config.sft.enabled,
        "c": config.reward.params.get("c"),
        "async": config.rollout.async_rollouts,
    }
    assert {key: checks[key] for key in expected} == expected


def test_a_preset_lists_only_overrides_and_a_copy_cannot_change_it():
    overrides = preset_overrides("quickstart")
    overrides["optim"]["learning_rate"] = 1.0
    assert preset_config("quickstart").optim.learning_rate == 2e-4
    defaults = default_config()
    for name, preset in PRESETS.items():
        assert set(preset) <= set(defaults), name


def test_an_unknown_preset_names_the_known_ones():
    with pytest.raises(UnknownPreset) as info:
        preset_config("tor1")
    assert "tor1" in str(info.value) and "quickstart" in str(info.value)
