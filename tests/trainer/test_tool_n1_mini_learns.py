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
    # The preset's first 8 of its 10 steps (a constant learning rate: they are the whole run's), which show
    # the effect at a fifth less of the suite's time.
    values = run_preset("tool-n1-mini", tmp_path / "run", tiny_model_cache, max_steps=8)
    assert len(values) == 8
    start, end = slice(0, 3), slice(5, 8)
    exact, errors = "calls/exact_match", "calls/format_error_ratio"
    # Measured, means of steps 0-2 -> 5-7 with seeds 0 and 1 (bench/quickstart.py --preset tool-n1-mini
    # [--seed 1]): exact calls 0.130 -> 0.250 and 0.237 -> 0.378; format errors 0.609 -> 0.310 and
    # 0.555 -> 0.232; name accuracy 0.32 -> 0.62 and 0.47 -> 0.70.
    assert window(values, exact, end) > window(values, exact, start) + 0.07
    assert window(values, "calls/name_accuracy", end) > window(values, "calls/name_accuracy", start) + 0.12
    assert window(values, errors, end) < window(values, errors, start) - 0.15
    # Binary: the reward is the share of responses with their <think> block and the exact calls.
    assert all(v["reward/mean"] <= v[exact] + 1e-9 for v in values)
