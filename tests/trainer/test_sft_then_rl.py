"""A run with both of ReTool's stages in it: the SFT phase, then RL from its result, end to end.

retool-mini starts from its SFT stage shipped ('tirlab/tiny-char-retool'); this is the path a researcher
takes with traces of their own: `python -m trainer run` from the tiny cold start (trained on ```python
calls) with `sft.*` naming a JSONL of ReTool traces (the first rows of 'retool-mini-sft', so that it is
short), then a GRPO step. The test asserts from the run's own files that the SFT phase trained and that RL
sampled from what it trained: ReTool's <code> syntax, which the cold start never writes.
"""

import json
import subprocess
import sys

import pytest

from tests.trainer._learning import REPO, run_preset
from trainer.config import TINY_MODEL

TRACES, BATCH = 2048, 32


@pytest.mark.timeout(1200)
def test_the_sft_phase_trains_then_rl_samples_from_its_result(tiny_model_cache, tmp_path):
    traces = tmp_path / "retool-traces.jsonl"
    written = subprocess.run(
        [sys.executable, "-m", "trainer", "sft-traces", "retool-mini-sft", "--rows", str(TRACES), "--out", str(traces)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    sft = {"enabled": True, "dataset": str(traces), "epochs": 1, "learning_rate": 3e-3, "batch_size": BATCH}
    overrides = {"model": {"name_or_path": TINY_MODEL}, "sft": sft, "schedule": {"max_steps": 1}}
    values = run_preset("retool-mini", tmp_path / "run", tiny_model_cache, overrides=overrides)
    assert len(values) == 1

    # The SFT phase ran in the run, on every trace once, its loss falling.
    record = json.loads((tmp_path / "run" / "sft.json").read_text())
    losses = record["losses"]
    assert len(losses) == TRACES // BATCH and record["summary"]["traces"] == TRACES
    assert sum(losses[-8:]) / 8 < sum(losses[:8]) / 8 / 2

    # RL's first rollouts are the fine-tuned policy's: calls in ReTool's syntax, answered by <interpreter>.
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    first = [t for t in trajectories if t["step"] == 0]
    calls = [t for t in first if t["tool_call_count"]]
    assert len(calls) >= len(first) / 4
    assert all(t["turns"][0]["text"].startswith("<code>") for t in calls)
    assert all(t["turns"][1]["text"].startswith("<interpreter>") for t in calls)
