"""The otc-mini preset, run whole, shows the split the OTC paper is about: OTC-GRPO's tool-productivity
reward takes the tool away from easy problems and keeps it on hard ones, and accuracy does not suffer
(issue 14: easy tool use below 0.1, hard above 0.9, within 100 steps). Checked on the run's own
learning curve, as test_quickstart_learns.py checks the quickstart's."""

import pytest

from tests.trainer._learning import run_preset, window

EASY, HARD = "train/easy/tool_call_ratio", "train/hard/tool_call_ratio"


# About 130 s on an idle 2-core machine (50 steps of 128 trajectories), much more on a busy one.
@pytest.mark.timeout(2400)
def test_otc_mini_takes_the_tool_from_easy_problems_and_keeps_it_on_hard_ones(tiny_model_cache, tmp_path):
    values = run_preset("otc-mini", tmp_path / "run", tiny_model_cache)
    assert len(values) == 50
    start, end = slice(0, 10), slice(-10, None)
    # The cold start calls the tool on about half of both kinds of problem (easy 0.46-0.65, hard
    # 0.55-0.74 over steps 0-9 with seeds 0-4); over steps 40-49 those seeds reached easy 0.000-0.037,
    # hard 0.97-1.00.
    assert window(values, EASY, start) > 0.3 and window(values, HARD, start) < 0.8
    assert window(values, EASY, end) < 0.1
    assert window(values, HARD, end) > 0.9
    # Skipping the tool costs no accuracy: hard problems are solved through it, easy ones from memory
    # (accuracy 0.77-0.85 -> 0.90-0.96 with those seeds).
    assert window(values, "accuracy", end) >= window(values, "accuracy", start)
