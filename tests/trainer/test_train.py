"""The training loop end to end on CPU: real rollouts, sandbox, rewards and updates."""

import importlib.util
import json
import os
from pathlib import Path

import pytest
import torch

from trainer.config import validate_config
from trainer.models import build_tiny_model
from trainer.report import Reporter
from trainer.train import run_training

REPO = Path(__file__).resolve().parents[2]
MODEL_CACHE = Path(os.environ.get("TIRLAB_VAR_DIR") or REPO / "var") / "models"


@pytest.fixture(scope="module")
def random_tiny(tmp_path_factory) -> Path:
    """An untrained tiny model saved as a local Hugging Face directory: fast, and enough to check the plumbing."""
    path = tmp_path_factory.mktemp("tiny-random")
    model, tokenizer = build_tiny_model(seed=0)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def small_config(model: str, **overrides) -> dict:
    config = {
        "model": {"name_or_path": model},
        "data": {"train_dataset": "arithmetic", "prompt_template": "plain", "max_response_tokens": 48},
        "rollout": {"prompts_per_step": 3, "group_size": 4, "trajectories_to_report": 1},
        "optim": {"learning_rate": 1e-4},
        "schedule": {"max_steps": 2, "checkpoint_every": 1},
    }
    for key, value in overrides.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


def train(config: dict, out: Path, **kwargs):
    with Reporter(out) as reporter:
        return run_training(validate_config(config), reporter=reporter, out_dir=out, model_cache=MODEL_CACHE, **kwargs)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_resumed_run_repeats_the_uninterrupted_step(random_tiny, tmp_path):
    train(small_config(str(random_tiny)), tmp_path / "full")
    train(small_config(str(random_tiny)), tmp_path / "resumed", resume=tmp_path / "full" / "checkpoints" / "step-1")
    full = read_jsonl(tmp_path / "full" / "metrics.jsonl")
    resumed = read_jsonl(tmp_path / "resumed" / "metrics.jsonl")
    assert [m["step"] for m in full] == [0, 1] and [m["step"] for m in resumed] == [1]
    measured = {k: v for k, v in full[1]["values"].items() if not k.startswith(("timing_s/", "perf/"))}
    again = {k: v for k, v in resumed[0]["values"].items() if not k.startswith(("timing_s/", "perf/"))}
    assert again == measured


def test_step_and_validation_metrics_are_split_by_difficulty(random_tiny, tmp_path):
    config = small_config(
        str(random_tiny),
        data={"val_dataset": "arithmetic"},
        rollout={"prompts_per_step": 8},
        schedule={"max_steps": 1, "eval_every": 1, "checkpoint_every": 0},
    )
    train(config, tmp_path)
    (metrics,) = read_jsonl(tmp_path / "metrics.jsonl")
    values = metrics["values"]
    # The seeded draw of 8 mixed problems holds both difficulties; so do the 200 validation problems.
    for prefix in ("train/", "val/"):
        for difficulty in ("easy", "hard"):
            for name in ("accuracy", "tool_call_ratio", "reward/mean"):
                assert f"{prefix}{difficulty}/{name}" in values, f"{prefix}{difficulty}/{name}"
    assert all(0.0 <= values[f"train/{d}/accuracy"] <= 1.0 for d in ("easy", "hard"))


def test_groups_without_signal_are_dropped_when_asked(random_tiny, tmp_path):
    # An untrained model never answers right: every torl reward is -1, no group carries a GRPO signal.
    config = small_config(str(random_tiny), filtering={"drop_all_same_reward": True, "max_resample_batches": 1})
    train(config, tmp_path, max_steps=1)
    (metrics,) = read_jsonl(tmp_path / "metrics.jsonl")
    values = metrics["values"]
    assert values["groups/kept"] == 0 and values["groups/sampled"] == 6
    assert "actor/pg_loss" not in values


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None and torch.cuda.is_available(),
                    reason="vllm and a GPU are here: engine 'vllm' is available (tests/trainer/test_vllm_engine.py)")
def test_vllm_engine_is_refused_clearly_on_this_build(random_tiny, tmp_path):
    with pytest.raises(ValueError, match="vLLM engine needs a GPU"):
        train(small_config(str(random_tiny), engine="vllm"), tmp_path)
