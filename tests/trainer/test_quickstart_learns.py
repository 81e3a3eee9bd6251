"""The quickstart preset, run whole, learns: what a researcher sees on their first day.

The test runs the preset end to end through `python -m trainer run` — the cached cold start, the
asynchronous rollout, the real sandbox, the reward, GRPO updates — and checks the learning curve
in metrics.jsonl, not just that files were written. The thresholds sit well inside what the runs
measure (see docs/presets.md, "quickstart") and well outside where the cold start begins, so a change that
stops the policy learning fails here. test_otc_mini_learns.py does the same for OTC.
"""

import pytest

from tests.trainer._learning import run_preset, window


# A minute or two on an idle 2-core machine (20 steps of 128 trajectories), much more on a busy one.
@pytest.mark.timeout(1800)
def test_quickstart_learns_to_call_the_tool_and_answers_better(tiny_model_cache, tmp_path):
    values = run_preset("quickstart", tmp_path / "run", tiny_model_cache)
    assert len(values) == 20
    start, end = slice(0, 3), slice(-5, None)
    # The cold start is undecided (tool use about half) and solves hard problems only through the tool.
    assert window(values, "tool_call_ratio", start) < 0.7
    assert window(values, "tool_call_ratio", end) > 0.8
    hard = "train/hard/accuracy"
    assert window(values, hard, end) > max(0.8, window(values, hard, start) + 0.2)
    assert window(values, "accuracy", end) > 0.9
