"""The swe reward and the swe/* step metrics, from hand-made outcomes."""

import pytest

from trainer.metrics.swe import swe_metrics
from trainer.rewards import score_group
from trainer.trajectory import Completion


def done(end: str, resolved: bool, *, patch: str = "diff --git a/f.py b/f.py\n", applied: bool = True, turns: int = 3):
    outcome = {
        "kind": "swe", "end": end, "turns": turns, "calls": turns, "format_errors": 1 if end == "stuck" else 0,
        "patch": patch, "patch_lines": 2 if patch else 0, "applied": applied, "apply_log": "", "resolved": resolved,
        "tests": [],
    }  # fmt: skip
    return Completion(text="", protocol="codeact_mini", outcome=outcome)


GROUP = [
    done("finished", True),
    done("max_turns", True, turns=5),
    done("context_full", False, patch="", applied=False),
    done("stuck", False, applied=False, turns=4),
]


def test_skyrl_v0s_reward_pays_a_resolved_patch_however_the_trajectory_ended():
    totals = [r.total for r in score_group("swe", GROUP, None)]
    assert totals == [1.0, 1.0, 0.0, 0.0]


def test_require_finish_pays_only_a_finished_trajectory():
    results = score_group("swe", GROUP, None, params={"require_finish": True})
    assert [r.total for r in results] == [1.0, 0.0, 0.0, 0.0]
    assert [r.correct for r in results] == [True, True, False, False]  # resolved is still resolved


def test_a_completion_without_a_swe_outcome_is_refused():
    with pytest.raises(ValueError, match="swe environment"):
        score_group("swe", ["<f=finish></f>"], None)


def test_the_metrics_count_ends_turns_and_patches():
    metrics = swe_metrics(GROUP, prefix="val/")
    assert metrics["val/swe/resolve_rate"] == 0.5
    assert metrics["val/swe/finish_action_ratio"] == 0.25
    assert metrics["val/swe/max_turn_ratio"] == 0.25
    assert metrics["val/swe/stuck_ratio"] == 0.25
    assert metrics["val/swe/context_full_ratio"] == 0.25
    assert metrics["val/swe/turns/mean"] == 3.75
    assert metrics["val/swe/turns_resolved/mean"] == 4.0
    assert metrics["val/swe/empty_patch_ratio"] == 0.25
    # Of the three non-empty patches, one did not apply.
    assert metrics["val/swe/patch_apply_failure_ratio"] == pytest.approx(1 / 3)
    assert metrics["val/swe/format_error_ratio"] == pytest.approx(1 / 15)
    assert swe_metrics([Completion(text="x")]) == {}
