"""swe-mini, run whole: from a tiny model that knows the three tools but neither which fix a function needs nor
when to stop, RL with SkyRL-v0's resolved reward (paid when the trajectory finishes, the mini's `require_finish`)
makes it fix held-out repositories and finish, instead of editing until the turn limit.

`python -m trainer run --preset swe-mini` starts from 'tirlab/tiny-char-swe' (trainer.models.tiny.swe) and trains
on generated one-file repositories with one injected bug each (trainer.data.swe_mini); every trajectory's patch is
graded by the repository's hidden tests in the sandbox. The test reads the run's own metrics: the held-out ones
(greedy, 100 repositories never trained on, before the first step and after the last) and the train ratios, and
the outcomes the run reported.
"""

import json

import pytest

from tests.trainer._learning import run_preset, window

STEPS = 12


@pytest.mark.timeout(1800)
def test_held_out_repositories_are_fixed_and_finished_more_often(tiny_model_cache, tmp_path):
    values = run_preset("swe-mini", tmp_path / "run", tiny_model_cache)  # it evaluates before and after its 12 steps
    assert len(values) == STEPS
    before, after = values[0], values[-1]
    # Held out, the patch resolves (SkyRL-v0's resolve rate): measured 0.06 -> 0.68.
    assert after["val/swe/resolve_rate"] >= before["val/swe/resolve_rate"] + 0.15
    # Resolved and finished (the mini's reward): 0.01 -> 0.67.
    assert after["val/reward/mean"] >= before["val/reward/mean"] + 0.15
    # The cold start edits until the turn limit; trained, it finishes: finish 0.20 -> 0.89, turn limit 0.64 -> 0.11.
    assert after["val/swe/finish_action_ratio"] >= before["val/swe/finish_action_ratio"] + 0.25
    assert after["val/swe/max_turn_ratio"] <= before["val/swe/max_turn_ratio"] - 0.2
    # In training too (measured over steps 0-2 -> 9-11: finish 0.76 -> 0.92, turn limit 0.23 -> 0.08).
    start, end = slice(0, 3), slice(STEPS - 3, STEPS)
    assert window(values, "swe/finish_action_ratio", end) > window(values, "swe/finish_action_ratio", start)
    assert window(values, "swe/max_turn_ratio", end) < window(values, "swe/max_turn_ratio", start)
    assert window(values, "swe/resolve_rate", end) >= window(values, "swe/resolve_rate", start) + 0.15
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    outcomes = [t["outcome"] for t in trajectories if t.get("outcome")]
    assert len(outcomes) == len(trajectories) and all(o["kind"] == "swe" for o in outcomes)
    resolved = [o for o in outcomes if o["resolved"]]
    assert resolved and all(o["applied"] and o["patch"].startswith("diff --git a/f.py b/f.py") for o in resolved)
    assert all(test["passed"] for o in resolved for test in o["tests"])
