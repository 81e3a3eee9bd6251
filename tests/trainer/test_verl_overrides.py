"""The translation of a tirlab run config into verl 0.9.1's overrides (trainer.verl.overrides), without verl:
each field's verl key and value, the refusals naming their field, every leaf field mapped or refused, the
paper presets. verl's own check of the same overrides is tests/verl/test_verl_validation.py."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import pytest

from tests.trainer.test_every_option import leaf_fields
from trainer.config import ConfigError, RunConfig, default_config, merge_overrides, validate_config
from trainer.presets import PRESETS_REGISTRY, preset_config
from trainer.verl.overrides import (
    FIELDS,
    REFUSALS,
    REWARD_FUNCTION,
    VerlPaths,
    hydra_value,
    tirlab_fields,
    verl_overrides,
    verl_refusals,
)

HF_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
PATHS = VerlPaths(
    train_files="/runs/7/verl/train.parquet",
    val_files="/runs/7/verl/val.parquet",
    agent_loop_config="/runs/7/verl/agent_loop.yaml",
    run_config="/runs/7/run-config.json",
    checkpoints="/runs/7/checkpoints",
    rollout_data_dir="/runs/7/verl/rollouts",
    project="tirlab",
    experiment="run 7",
)
PAPER_PRESETS = sorted(name for name, preset in PRESETS_REGISTRY.items() if preset.needs_gpu)
# What each paper preset sets that verl's main_ppo cannot run (by field prefix), and why it is refused.
PRESET_REFUSALS = {
    "retool": ("sft.",),  # the SFT cold start is verl's separate SFT trainer
    "zerotir": ("rollout.async_rollouts", "filtering."),  # one step off-policy; ZeroTIR's replay filters
    "otc-grpo": ("reward.name",),  # OTC-GRPO's reward compares a group's completions
    "skyrl-v0": ("tools.environment",),  # the swe environment grades the patch in tirlab's trainer
    # The search environment runs in tirlab's trainer; on verl, verl's own search tool asks tirlab's /retrieve.
    "search-r1": ("tools.environment", "tools.search_url"),
    "otc-search": ("tools.environment", "tools.search_url", "reward.name"),
}


def verl_config(overrides: dict[str, Any] | None = None, *, base: dict[str, Any] | None = None) -> RunConfig:
    """An engine 'verl' config on a Hugging Face model, 1 node x 8 GPUs, with `overrides` merged over it."""
    data = merge_overrides(
        base if base is not None else default_config(),
        {"engine": "verl", "model": {"name_or_path": HF_MODEL}, "cluster": {"nnodes": 1, "gpus_per_node": 8}},
    )
    data = merge_overrides(data, overrides or {})
    if data["reward"].get("params") is None:  # another reward: its own default parameters
        data["reward"]["params"] = {}
    return validate_config(data)


def without_refusals(config: RunConfig) -> tuple[RunConfig, dict[str, list[str]]]:
    """`config` with each refused field's section (sft, filtering, reward, tools) or field (async) at its default,
    and what was refused."""
    refused = verl_refusals(config)
    data = config.model_dump(mode="json")
    defaults = default_config()
    for field in refused:
        section, _, name = field.partition(".")
        if section in ("sft", "filtering", "reward", "tools"):
            data[section] = defaults[section]
        else:
            data[section][name] = defaults[section][name]
    return validate_config(data), refused


def preset_verl_config(name: str, *, nnodes: int = 1, gpus_per_node: int = 8) -> RunConfig:
    data = preset_config(name).model_dump(mode="json")
    data["engine"] = "verl"
    data["cluster"] = {"nnodes": nnodes, "gpus_per_node": gpus_per_node, "tensor_parallel": 1}
    return validate_config(data)


def as_dict(overrides: list[str]) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in overrides]
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), "a verl key set twice"
    return dict(pairs)


def test_each_field_becomes_its_verl_key() -> None:
    config = verl_config(
        {
            "seed": 7,
            "model": {"dtype": "bfloat16"},
            "data": {"max_prompt_tokens": 400, "max_response_tokens": 3072, "val_dataset": "torl-test"},
            "tools": {"max_tool_calls": 3},
            "rollout": {"prompts_per_step": 32, "group_size": 16, "temperature": 0.7, "top_p": 0.9},
            "optim": {
                "learning_rate": 2e-6,
                "lr_schedule": "cosine",
                "warmup_steps": 5,
                "grad_clip": 0.5,
                "ppo_epochs": 2,
                "mini_batch_prompts": 8,
            },
            "grpo": {
                "clip_low": 0.2,
                "clip_high": 0.28,
                "kl_coef": 0.001,
                "loss_agg": "seq-mean-token-sum",
                "scale_by_std": False,
                "entropy_coef": 0.001,
                "clip_ratio_c": 10.0,
            },
            "schedule": {"max_steps": 150, "eval_every": 5, "eval_pass_k": 4, "checkpoint_every": 25},
            "cluster": {"nnodes": 2, "gpus_per_node": 8, "tensor_parallel": 2},
        }
    )
    got = as_dict(verl_overrides(config, PATHS))
    aro = "actor_rollout_ref"
    expected = {
        "algorithm.adv_estimator": "grpo",
        f"{aro}.rollout.name": "vllm",
        f"{aro}.rollout.mode": "async",
        f"{aro}.rollout.agent.agent_loop_config_path": PATHS.agent_loop_config,
        f"{aro}.rollout.agent.default_agent_loop": "tirlab",
        "data.seed": "7",
        f"{aro}.rollout.seed": "7",
        f"{aro}.model.path": HF_MODEL,
        f"{aro}.actor.fsdp_config.model_dtype": "bfloat16",
        f"{aro}.rollout.dtype": "bfloat16",
        "data.train_files": PATHS.train_files,
        "data.val_files": PATHS.val_files,
        "data.max_prompt_length": "400",
        "data.max_response_length": "3072",
        "data.filter_overlong_prompts": "false",
        f"{aro}.rollout.multi_turn.enable": "true",
        f"{aro}.rollout.multi_turn.max_assistant_turns": "4",
        "reward.custom_reward_function.path": REWARD_FUNCTION,
        "reward.custom_reward_function.name": "compute_score",
        "+reward.custom_reward_function.reward_kwargs.run_config": PATHS.run_config,
        "data.train_batch_size": "32",
        f"{aro}.rollout.n": "16",
        f"{aro}.rollout.temperature": "0.7",
        f"{aro}.rollout.top_p": "0.9",
        f"{aro}.rollout.val_kwargs.n": "4",
        f"{aro}.rollout.val_kwargs.do_sample": "true",
        f"{aro}.rollout.val_kwargs.temperature": "0.7",
        f"{aro}.actor.optim.lr": "2e-06",
        f"{aro}.actor.optim.lr_scheduler_type": "cosine",
        f"{aro}.actor.optim.lr_warmup_steps": "5",
        f"{aro}.actor.optim.clip_grad": "0.5",
        f"{aro}.actor.ppo_epochs": "2",
        f"{aro}.actor.ppo_mini_batch_size": "8",
        f"{aro}.actor.clip_ratio_low": "0.2",
        f"{aro}.actor.clip_ratio_high": "0.28",
        f"{aro}.actor.clip_ratio_c": "10.0",
        f"{aro}.actor.use_kl_loss": "true",
        f"{aro}.actor.kl_loss_coef": "0.001",
        f"{aro}.actor.kl_loss_type": "low_var_kl",
        "algorithm.use_kl_in_reward": "false",
        f"{aro}.actor.loss_agg_mode": "seq-mean-token-sum",
        "algorithm.norm_adv_by_std_in_grpo": "false",
        f"{aro}.actor.entropy_coeff": "0.001",
        "trainer.total_training_steps": "150",
        "trainer.test_freq": "5",
        "trainer.save_freq": "25",
        "trainer.nnodes": "2",
        "trainer.n_gpus_per_node": "8",
        f"{aro}.rollout.tensor_model_parallel_size": "2",
        "trainer.logger": "[console,mlflow]",
        "trainer.project_name": "tirlab",
        "trainer.experiment_name": "'run 7'",
        "trainer.default_local_dir": PATHS.checkpoints,
        "trainer.rollout_data_dir": PATHS.rollout_data_dir,
        "trainer.log_val_generations": "8",  # 2 groups' worth of 4 samples
        "trainer.resume_mode": "auto",
    }
    assert {key: got.get(key) for key in expected} == expected
    # 8 prompts x 16 samples over 16 GPUs: 8 samples per GPU, micro-batches of 4.
    assert got[f"{aro}.actor.ppo_micro_batch_size_per_gpu"] == "4"
    assert verl_overrides(config, PATHS) == verl_overrides(config, PATHS)


def test_the_defaults_that_verl_has_otherwise() -> None:
    """No mini-batch is the step's batch; no dual clip and no grad clipping are bounds that never bind;
    no KL loads no reference; no evaluation and no checkpoints are verl's -1; no validation set is the
    train file, never used."""
    config = verl_config(
        {"optim": {"grad_clip": 0.0}, "schedule": {"eval_every": 0, "checkpoint_every": 0}},
    )
    got = as_dict(verl_overrides(config, VerlPaths(**{**PATHS.__dict__, "val_files": None})))
    assert got["actor_rollout_ref.actor.ppo_mini_batch_size"] == got["data.train_batch_size"] == "8"
    assert float(got["actor_rollout_ref.actor.clip_ratio_c"]) >= math.exp(20)
    assert got["actor_rollout_ref.actor.optim.clip_grad"] == "inf"
    assert got["actor_rollout_ref.actor.use_kl_loss"] == "false"
    assert got["trainer.test_freq"] == got["trainer.save_freq"] == "-1"
    assert got["data.val_files"] == PATHS.train_files
    assert got["actor_rollout_ref.rollout.val_kwargs.do_sample"] == "false"
    assert got["actor_rollout_ref.rollout.val_kwargs.temperature"] == "0.0"


def test_the_evaluation_samples_at_eval_temperature() -> None:
    config = verl_config(
        {
            "data": {"val_dataset": "torl-test"},
            "schedule": {"eval_every": 5, "eval_pass_k": 16, "eval_temperature": 0.6},
        }
    )
    got = as_dict(verl_overrides(config, PATHS))
    assert got["actor_rollout_ref.rollout.val_kwargs.temperature"] == "0.6"
    assert got["actor_rollout_ref.rollout.temperature"] == "1.0"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"rollout": {"async_rollouts": True}}, "rollout.async_rollouts"),
        ({"filtering": {"accuracy_min": 0.05}}, "filtering.accuracy_min"),
        ({"filtering": {"drop_all_same_reward": True}}, "filtering.drop_all_same_reward"),
        ({"sft": {"enabled": True, "dataset": "tiny-cold-start"}}, "sft.enabled"),
        ({"model": {"name_or_path": "tirlab/tiny-char"}}, "model.name_or_path"),
        ({"model": {"name_or_path": "smollm2-135m-instruct"}}, "model.name_or_path"),
        ({"model": {"device": "cpu"}}, "model.device"),
        ({"rollout": {"backend": "ray"}}, "rollout.backend"),
        ({"rollout": {"backend": "ray", "replicas": 2}}, "rollout.replicas"),
        ({"optim": {"lr_schedule": "linear"}}, "optim.lr_schedule"),
        ({"reward": {"name": "otc_grpo", "params": None}}, "reward.name"),
        ({"cluster": {"tensor_parallel": 3}}, "cluster.tensor_parallel"),
        ({"schedule": {"eval_every": 5}}, "schedule.eval_every"),  # and no data.val_dataset
        (
            {"rollout": {"prompts_per_step": 8, "group_size": 2}, "optim": {"mini_batch_prompts": 2}},
            "optim.mini_batch_prompts",
        ),
    ],
)
def test_a_value_verl_cannot_run_is_refused_naming_its_field(overrides: dict, field: str) -> None:
    config = verl_config(overrides)
    refused = verl_refusals(config)
    assert field in refused and refused[field] and all(message.strip() for message in refused[field])
    with pytest.raises(ConfigError) as caught:
        verl_overrides(config, PATHS)
    assert field in caught.value.errors


def test_another_engine_is_refused() -> None:
    config = validate_config({"engine": "hf", "model": {"name_or_path": HF_MODEL}})
    assert "engine" in verl_refusals(config)


def test_every_leaf_field_is_mapped_or_refused() -> None:
    leaves = set(leaf_fields())
    assert set(FIELDS) | set(REFUSALS) == leaves, "a RunConfig field verl's translation neither maps nor refuses"
    assert set(FIELDS) <= leaves and set(REFUSALS) <= leaves, "the table names a field RunConfig does not have"
    for field, entry in FIELDS.items():
        assert entry.source.strip(), field
        assert entry.keys or "trainer/verl/" in entry.source or field in REFUSALS or "'" in entry.source, field


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_paper_presets_translate(name: str) -> None:
    """Each paper preset translates, or is refused for exactly what main_ppo cannot run (and the rest of it
    translates)."""
    config = preset_verl_config(name)
    rest, refused = without_refusals(config)
    expected = PRESET_REFUSALS.get(name, ())
    assert all(field.startswith(expected) for field in refused) and bool(refused) == bool(expected), refused
    got = as_dict(verl_overrides(rest, PATHS))
    assert got["actor_rollout_ref.rollout.n"] == str(config.rollout.group_size)
    assert got["data.train_batch_size"] == str(config.rollout.prompts_per_step)
    assert got["actor_rollout_ref.model.path"] == config.model.name_or_path


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("/a/b-c/train.parquet", "/a/b-c/train.parquet"),
        ("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B"),
        ("run 7", "'run 7'"),
        ("a,b=c", "'a,b=c'"),
        ("null", "'null'"),
        ("it's", "'it\\'s'"),
        ("$OUT/verl/train.parquet", "'$OUT/verl/train.parquet'"),
        (None, "null"),
        (True, "true"),
        (3, "3"),
        (1e-6, "1e-06"),
        (["console", "mlflow"], "[console,mlflow]"),
    ],
)
def test_values_are_written_for_hydra(value: Any, text: str) -> None:
    assert hydra_value(value) == text


def test_verl_keys_and_messages_lead_back_to_tirlab_fields() -> None:
    assert tirlab_fields("actor_rollout_ref.rollout.n") == ["rollout.group_size"]
    assert tirlab_fields("+reward.custom_reward_function.reward_kwargs.run_config") == ["reward.name"]
    assert tirlab_fields("actor_rollout_ref.rollout.val_kwargs.n") == ["schedule.eval_pass_k"]
    message = "real_train_batch_size (9) must be divisible by minimal possible batch size (8)"
    assert tirlab_fields(message) == [
        "rollout.prompts_per_step",
        "rollout.group_size",
        "cluster.nnodes",
        "cluster.gpus_per_node",
    ]
    assert "optim.mini_batch_prompts" in tirlab_fields("train_batch_size (3) must be >= actor.ppo_mini_batch_size (8)")
    assert tirlab_fields("something verl says about nothing of ours") == []


def test_the_translation_imports_without_verl_or_transformers() -> None:
    """The dashboard imports it: neither verl nor the model libraries come with it."""
    code = "import sys, trainer.verl.overrides; print(sorted({'verl', 'transformers', 'torch'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
