"""ReTool-mini, run whole: the SFT stage teaches ReTool's syntax, RL makes hard answers exact.

`python -m trainer run --preset retool-mini`: the shipped tiny model (trained on ```python calls) is
fine-tuned on the 'retool-mini-sft' traces (<code>/<interpreter>/<answer>), then trained with
ReTool's reward and tool text. Step 0's rollouts are the SFT-only policy's; the test asserts from
the run's own metrics that it already calls the tool in ReTool's syntax, and that RL raises its
accuracy by a clear margin.
"""

import json

import pytest

from tests.trainer._learning import run_preset, window


@pytest.mark.timeout(1800)
def test_sft_teaches_the_retool_format_and_rl_raises_hard_accuracy(tiny_model_cache, tmp_path):
    values = run_preset("retool-mini", tmp_path / "run", tiny_model_cache)
    assert len(values) == 20
    start, end = slice(0, 3), slice(-5, None)
    # After SFT alone: the ReTool call syntax on most hard problems (the tiny model never saw it before).
    assert window(values, "train/hard/tool_call_ratio", start) > 0.6
    # RL raises accuracy over the SFT-only policy (measured 0.65 -> 0.87: easy problems move to the tool,
    # which ReTool's turn shaping favours) without losing the hard problems SFT already solves (0.84 -> 0.90).
    assert window(values, "accuracy", end) > window(values, "accuracy", start) + 0.12
    hard = "train/hard/accuracy"
    assert window(values, hard, end) > window(values, hard, start) - 0.05
    assert window(values, "train/easy/tool_call_ratio", end) > window(values, "train/easy/tool_call_ratio", start) + 0.3
    # The calls are ReTool's: <code> blocks answered by <interpreter> blocks, then <answer>.
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    calls = [t for t in trajectories if t["tool_call_count"]]
    assert calls and all(t["turns"][0]["text"].startswith("<code>") for t in calls)
    assert all(t["turns"][1]["text"].startswith("<interpreter>") for t in calls)
    # And the SFT phase ran in the run, its loss falling.
    losses = json.loads((tmp_path / "run" / "sft.json").read_text())["losses"]
    assert sum(losses[-20:]) / 20 < sum(losses[:20]) / 20 / 5
