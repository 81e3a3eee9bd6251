"""tool-n1-mini, run whole: Tool-N1's binary reward raises the exact-match rate of JSON calls from the cold start.

`python -m trainer run --preset tool-n1-mini` starts from 'tirlab/tiny-char-tool-n1'
(trainer.models.tiny.function_calling:
the JSON-call model taught Tool-N1's layout, one JSON list of {"name", "arguments"}, on traces with the same
flaws as toolrl-mini's start) and trains it at temperature 0.7 with Tool-N1's reward: 1 when the response
has its <think> block and its calls equal the ground truth's, else 0. The test asserts from the run's own
metrics that the exact-match rate rises, and that the reward pays exactly it.
"""

import pytest

from tests.trainer._learning import run_preset, window


@pytest.mark.timeout(1800)
def test_the_exact_match_rate_rises_from_the_cold_start(tiny_model_cache, tmp_path):
    # The preset's first 6 of its 10 steps (a constant learning rate: they are the whole run's), which show
    # the effect at 40% less of the suite's time than the whole run.
    values = run_preset("tool-n1-mini", tmp_path / "run", tiny_model_cache, max_steps=6)
    assert len(values) == 6
    start, end = slice(0, 2), slice(4, 6)
    exact, errors = "calls/exact_match", "calls/format_error_ratio"
    # Measured, means of steps 0-1 -> 4-5 with seeds 0 and 1 (the preset with its seed set, run alone): exact
    # calls 0.109 -> 0.273 and 0.176 -> 0.293; format errors 0.723 -> 0.270 and 0.633 -> 0.250; name accuracy 0.28
    # -> 0.54 and 0.37 -> 0.74. The narrowest margin over a bound, exact calls with seed 1, is 0.047 (0.050 over
    # steps 0-2 -> 5-7, what this test asserted before).
    assert window(values, exact, end) > window(values, exact, start) + 0.07
    assert window(values, "calls/name_accuracy", end) > window(values, "calls/name_accuracy", start) + 0.12
    assert window(values, errors, end) < window(values, errors, start) - 0.15
    # Binary: the reward is the share of responses with their <think> block and the exact calls.
    assert all(v["reward/mean"] <= v[exact] + 1e-9 for v in values)
