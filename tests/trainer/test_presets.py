import pytest

from trainer.config import RunConfig, default_config
from trainer.data.search_mini import TOPK
from trainer.presets import (
    ASYNC_MINIS,
    PRESET_DESCRIPTIONS,
    PRESETS,
    UnknownPreset,
    preset_config,
    preset_names,
    preset_overrides,
)

PAPERS = ["torl", "zerotir", "retool", "otc-grpo", "otc-ppo", "toolrl", "tool-n1", "artist", "skyrl-async"]


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_validates_and_is_described(name):
    config = preset_config(name)
    assert isinstance(config, RunConfig)
    assert PRESET_DESCRIPTIONS[name]
    # The resolved config round-trips: what a run stores is what it was created from.
    assert RunConfig.model_validate(config.model_dump(mode="json")) == config


def test_there_is_a_preset_for_every_paper_and_the_quickstart_comes_first():
    assert preset_names()[0] == "quickstart"
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
    # The shipped model is the cold start: the run starts learning at once.
    assert config.sft.enabled is False


def test_otc_mini_scores_with_the_papers_reward_and_keeps_close_to_the_cold_start():
    config = preset_config("otc-mini")
    assert config.model.name_or_path == "tirlab/tiny-char" and config.data.train_dataset == "arithmetic"
    # The otc-grpo preset's reward: c = 3, a wrong answer 0.
    assert config.reward.name == "otc_grpo"
    assert config.reward.params == preset_config("otc-grpo").reward.params
    assert config.reward.params["c"] == 3.0 and config.reward.params["wrong_reward"] == 0.0
    assert config.tools.max_tool_calls == 1
    assert config.optim.learning_rate == 4e-4  # 3e-4 opens the split too slowly, 5e-4 erodes mental arithmetic
    assert config.grpo.kl_coef == 0.1
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


def test_quickstart_sft_is_the_quickstart_with_the_shipped_models_recipe_as_its_sft_phase():
    from trainer.models.tiny.cold_start import TINY_SEED, TINY_SFT

    config, quickstart = preset_config("quickstart-sft"), preset_config("quickstart")
    assert config.model.name_or_path == "tirlab/tiny-char-init"
    assert config.sft.enabled and config.sft.dataset == "tiny-cold-start"
    assert (config.sft.epochs, config.sft.learning_rate, config.sft.batch_size) == (
        TINY_SFT.epochs,
        TINY_SFT.lr,
        TINY_SFT.batch_size,
    )
    assert config.seed == TINY_SEED  # the SFT's data order: the shipped model's
    rest = {k: v for k, v in config.model_dump().items() if k not in ("model", "sft")}
    assert rest == {k: v for k, v in quickstart.model_dump().items() if k not in ("model", "sft")}


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


def test_zerotir_mini_runs_the_zerotir_presets_algorithm_on_the_tiny_base_model():
    mini, paper = preset_config("zerotir-mini"), preset_config("zerotir")
    assert mini.model.name_or_path == "tirlab/tiny-char-base" and not mini.sft.enabled
    assert mini.tools.model_dump(include={"protocol", "max_tool_calls", "feedback"}) == paper.tools.model_dump(
        include={"protocol", "max_tool_calls", "feedback"}
    )
    assert mini.reward == paper.reward and mini.grpo == paper.grpo
    # The filters are ZeroTIR's but for resampling, which would triple a CPU step.
    assert mini.filtering.model_dump(exclude={"max_resample_batches"}) == paper.filtering.model_dump(
        exclude={"max_resample_batches"}
    )


@pytest.mark.parametrize(("mini", "paper", "model"), [
    ("toolrl-mini", "toolrl", "tirlab/tiny-char-toolrl"),
    ("tool-n1-mini", "tool-n1", "tirlab/tiny-char-tool-n1"),
])  # fmt: skip
def test_the_function_calling_minis_train_with_their_papers_reward_and_sampling(mini, paper, model):
    config, script = preset_config(mini), preset_config(paper)
    assert config.model.name_or_path == model
    assert config.reward == script.reward and config.rollout.temperature == script.rollout.temperature
    # Calls scored as written, as both papers train: nothing runs.
    assert config.tools.protocol == "tool_call_json" and config.tools.run_environment == "none"
    assert config.data.train_dataset == "function-calling" and config.data.prompt_template == "tool-signatures"


def test_artist_fc_mini_runs_its_calls_and_scores_them_with_artists_reward():
    config = preset_config("artist-fc-mini")
    assert config.model.name_or_path == "tirlab/tiny-char-artist-fc"
    # Multi-turn: each <tool> block's calls run in the sandbox and their results come back.
    assert config.tools.protocol == "artist_fc" and config.tools.run_environment == "function_calling"
    assert config.reward.name == "artist_fc" and config.data.train_dataset == "tool-chains"
    # The longest prompt and response fit the tiny model's positions.
    assert config.data.max_prompt_tokens + config.data.max_response_tokens <= 1024


def test_the_search_minis_run_search_r1_s_loop_on_the_generated_corpus_and_differ_only_in_the_reward():
    config, otc = preset_config("search-r1-mini"), preset_config("otc-search-mini")
    assert config.model.name_or_path == "tirlab/tiny-char-search" and config.data.prompt_template == "search_r1_mini"
    assert config.tools.run_environment == "search" and config.tools.protocol == "search_r1"
    assert config.tools.search_corpus == "search-mini" and config.tools.max_tool_calls == 2
    # One passage a search, as the cold start learned to read (trainer.data.search_mini.TOPK).
    assert config.tools.search_topk == TOPK == 1
    assert config.reward.name == "search_r1" and otc.reward.name == "otc_grpo"
    assert config.data.train_dataset == config.data.val_dataset == "search-mini"
    # Held-out questions evaluated before the first step and after the last: the run shows its own effect.
    assert config.schedule.eval_before_train and config.schedule.eval_every == config.schedule.max_steps
    assert config.data.max_prompt_tokens + config.data.max_response_tokens <= 1024
    same, other = config.model_dump(), otc.model_dump()
    same.pop("reward"), other.pop("reward")
    assert same == other


@pytest.mark.parametrize("mini", ASYNC_MINIS)
def test_each_mini_has_an_async_version_that_differs_only_in_async_rollouts(mini):
    sync, off_policy = preset_config(mini).model_dump(), preset_config(f"{mini}-async").model_dump()
    assert not sync["rollout"]["async_rollouts"] and off_policy["rollout"]["async_rollouts"]
    off_policy["rollout"]["async_rollouts"] = False
    assert off_policy == sync
    assert f"{mini}-async" in PRESET_DESCRIPTIONS


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


# The papers whose released training script we could read. Each preset spells out every value tirlab has a
# field for, cited in trainer/presets/, so that a change of tirlab's defaults cannot change a paper preset.
SCRIPTED = ["torl", "zerotir", "retool", "toolrl", "tool-n1", "skyrl-v0", "search-r1"]
SPELLED_OUT = {
    "model": {"name_or_path", "dtype"},
    "data": {"train_dataset", "max_prompt_tokens", "max_response_tokens"},
    "tools": {"protocol", "max_tool_calls"},
    "rollout": {"prompts_per_step", "group_size", "temperature", "top_p", "async_rollouts"},
    "optim": {"learning_rate", "lr_schedule", "warmup_steps", "grad_clip", "ppo_epochs"},
    "grpo": {"clip_low", "clip_high", "kl_coef", "loss_agg", "scale_by_std", "entropy_coef"},
    "schedule": {"max_steps"},
}


@pytest.mark.parametrize("name", SCRIPTED)
def test_a_scripted_paper_preset_spells_out_every_value_rather_than_inheriting_our_defaults(name):
    preset = preset_overrides(name)
    missing = {section: keys - set(preset.get(section, {})) for section, keys in SPELLED_OUT.items()}
    assert {section: keys for section, keys in missing.items() if keys} == {}


def test_torl_is_torl_1_5b_sh_on_the_verl_it_vendors():
    config = preset_config("torl")
    assert config.model.name_or_path == "Qwen/Qwen2.5-Math-1.5B"
    # verl 0.2's single clip_ratio 0.2 (ppo_trainer.yaml:35): no clip-higher.
    assert (config.grpo.clip_low, config.grpo.clip_high) == (0.2, 0.2)
    # data.max_prompt_length=400, max_gen_length=3072 (torl_1.5b.sh:24,11).
    assert (config.data.max_prompt_tokens, config.data.max_response_tokens) == (400, 3072)
    # ToRL's own data/torl_data/{train,test}.parquet, which tirlab may not ship.
    assert (config.data.train_dataset, config.data.val_dataset) == ("data/torl/train.parquet", "torl-test")
    assert (config.rollout.prompts_per_step, config.rollout.group_size, config.tools.max_tool_calls) == (128, 16, 1)
    assert (config.optim.learning_rate, config.grpo.kl_coef, config.grpo.entropy_coef) == (1e-6, 0.0, 0.0)
    assert (config.schedule.eval_every, config.schedule.checkpoint_every) == (4, 20)  # test_freq, save_freq
    assert config.rollout.async_rollouts is False  # verl samples a step, then trains on it


@pytest.mark.parametrize("name", ["otc-grpo", "otc-ppo"])
def test_otc_runs_on_torls_setup_with_its_own_reward_and_three_calls(name):
    config, torl = preset_config(name), preset_config("torl")
    assert config.tools.max_tool_calls == 3 and config.reward.params["c"] == 3.0
    assert config.reward.name == name.replace("-", "_")
    assert (config.grpo.clip_low, config.grpo.clip_high) == (0.2, 0.2)  # ToRL's verl, not tirlab's clip-higher
    assert (config.data.max_prompt_tokens, config.data.max_response_tokens) == (400, 3072)
    for section in ("model", "data", "rollout", "optim", "grpo", "schedule"):
        assert getattr(config, section) == getattr(torl, section), section


def test_zerotir_is_its_readme_command():
    config = preset_config("zerotir")
    assert config.model.name_or_path == "Qwen/Qwen2.5-7B"
    assert config.tools.max_tool_calls == 2  # ENV_ITER_NUM=2
    assert (config.data.max_prompt_tokens, config.data.max_response_tokens) == (1024, 8192)
    assert (config.grpo.clip_low, config.grpo.clip_high) == (0.22, 0.28)
    assert (config.filtering.accuracy_min, config.filtering.accuracy_max) == (0.05, 0.8)
    # reinforce_baseline: group mean subtracted, no division by the group's std.
    assert config.grpo.scale_by_std is False
    assert config.rollout.async_rollouts is True  # --async_train
    assert config.schedule.checkpoint_every == 50


def test_retool_is_the_recipes_dapo_script():
    config = preset_config("retool")
    # max_assistant_turns=16: the 16th turn ends the rollout before its call runs.
    assert config.tools.max_tool_calls == 15
    assert (config.tools.sandbox_timeout_s, config.tools.sandbox_memory_mb) == (30.0, 1024)
    assert config.reward.params["turn_shaping"] is True  # retool.py's compute_score always shapes
    assert config.data.train_dataset == "data/retool/dapo-math-17k.parquet"
    assert (config.sft.epochs, config.sft.learning_rate) == (6, 1e-5)
    assert (config.grpo.clip_low, config.grpo.clip_high, config.grpo.kl_coef) == (0.2, 0.28, 0.0)


def test_toolrl_is_run_grpo_sh_with_verls_entropy_bonus_and_its_fifteen_epochs():
    config = preset_config("toolrl")
    assert config.grpo.entropy_coef == 1e-3  # verl 0.1's entropy_coeff default; the script sets none
    assert config.schedule.max_steps == 105  # 15 epochs x 7 full batches of 512
    assert (config.data.train_dataset, config.data.val_dataset) == ("data/toolrl/train.parquet", "toolrl-test")
    assert (config.schedule.eval_every, config.schedule.checkpoint_every) == (5, 15)
    assert (config.rollout.prompts_per_step, config.rollout.group_size) == (512, 4)
    assert (config.data.max_prompt_tokens, config.data.max_response_tokens) == (2048, 1024)


def test_tool_n1_has_qwen_rl_sh_lengths():
    config = preset_config("tool-n1")
    assert (config.data.max_prompt_tokens, config.data.max_response_tokens) == (4096, 8192)
    assert (config.data.train_dataset, config.data.val_dataset) == (
        "data/tool_n1/train.parquet",
        "data/tool_n1/test.parquet",
    )
    assert (config.rollout.prompts_per_step, config.rollout.group_size, config.rollout.temperature) == (1024, 5, 0.7)
    assert (config.grpo.kl_coef, config.grpo.entropy_coef) == (1e-3, 0.0)
    assert (config.schedule.eval_every, config.schedule.checkpoint_every) == (10, 10)


def test_search_r1_is_its_grpo_script_and_otc_search_changes_only_the_reward():
    config = preset_config("search-r1")
    assert (config.model.name_or_path, config.tools.protocol, config.tools.environment) == (
        "Qwen/Qwen2.5-3B",
        "search_r1",
        "search",
    )
    # max_turns=2, retriever.url and topk=3, n_agent=5, train_batch_size=512 (train_grpo.sh:79-81, 62, 34).
    assert (config.tools.max_tool_calls, config.tools.search_url, config.tools.search_topk) == (
        2,
        "http://127.0.0.1:8000/retrieve",
        3,
    )
    assert (config.rollout.group_size, config.rollout.prompts_per_step, config.optim.learning_rate) == (5, 512, 1e-6)
    assert (config.grpo.kl_coef, config.reward.name, config.data.prompt_template) == (1e-3, "search_r1", "plain")
    otc = preset_config("otc-search")
    assert otc.reward.name == "otc_grpo" and otc.reward.params["c"] == 3.0
    assert otc.model_dump(exclude={"reward"}) == config.model_dump(exclude={"reward"})
