"""The quickstart-otc preset, run whole, moves tool use from easy problems to hard ones (OTC-GRPO's
tool-productivity reward), checked on its learning curve as test_quickstart_learns.py checks the
quickstart's."""

import pytest

from tests.trainer._learning import run_preset, window


# A few minutes on an idle 2-core machine (50 steps of 128 trajectories), much more on a busy one.
@pytest.mark.timeout(2400)
def test_quickstart_otc_moves_tool_use_from_easy_problems_to_hard_ones(tiny_model_cache, tmp_path):
    values = run_preset("quickstart-otc", tmp_path / "run", tiny_model_cache)
    assert len(values) == 50
    start, end = slice(0, 10), slice(-10, None)
    easy, hard = "train/easy/tool_call_ratio", "train/hard/tool_call_ratio"
    # The cold start calls the tool on both about half the time; OTC pays for fewer calls when the
    # answer is still right, which only the easy problems allow.
    assert window(values, easy, end) < window(values, easy, start) - 0.1
    assert window(values, hard, end) > window(values, hard, start) + 0.1
    assert window(values, hard, end) - window(values, easy, end) > 0.3
    assert window(values, "accuracy", end) > window(values, "accuracy", start)
