"""Step metrics of software-engineering trajectories, from each one's swe outcome (trainer.envs.swe).

- ``swe/resolve_rate``: share of trajectories whose patch resolves the instance (SWE-bench's "resolved":
  every FAIL_TO_PASS and PASS_TO_PASS test passes); the same as ``accuracy`` under the swe reward, kept under
  its own name so that a run with another reward still shows it.
- ``swe/finish_action_ratio``, ``swe/max_turn_ratio``, ``swe/stuck_ratio``: how trajectories ended -- with the
  finish tool, at the turn limit, or stopped by the stuck detector -- as SkyRL-v0 logs them (its
  finish_action_ratio, max_turn_ratio and stuck_ratio); ``swe/context_full_ratio``: cut at the response limit.
- ``swe/turns/mean``: model turns per trajectory; ``swe/turns_resolved/mean``: the same over resolved ones (absent
  when none is).
- ``swe/empty_patch_ratio``: trajectories that changed nothing; ``swe/patch_apply_failure_ratio``: patches that
  neither ``git apply`` nor ``patch --fuzz=5`` could apply, over the non-empty ones (absent when none is);
  ``swe/patch_lines/mean``: lines added plus removed.
- ``swe/format_error_ratio``: calls that did not parse as one of the three tools, over all calls.

Validation gives the same names under ``val/``. Absent when no trajectory of the step has a swe outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import mean

from trainer.contract import SWE_FINISH_RATIO, SWE_MAX_TURN_RATIO, SWE_RESOLVE_RATE, SWE_STUCK_RATIO, SWE_TURNS_MEAN
from trainer.trajectory import Completion


def swe_metrics(completions: Iterable[Completion], *, prefix: str = "") -> dict[str, float]:
    outcomes = [c.outcome for c in completions if c.outcome and c.outcome.get("kind") == "swe"]
    if not outcomes:
        return {}

    def share(test: Iterable[bool], over: int) -> float:
        return sum(test) / over

    n = len(outcomes)
    ends = [o.get("end") for o in outcomes]
    metrics = {
        SWE_RESOLVE_RATE: share((bool(o.get("resolved")) for o in outcomes), n),
        SWE_FINISH_RATIO: share((e == "finished" for e in ends), n),
        SWE_MAX_TURN_RATIO: share((e == "max_turns" for e in ends), n),
        SWE_STUCK_RATIO: share((e == "stuck" for e in ends), n),
        "swe/context_full_ratio": share((e == "context_full" for e in ends), n),
        SWE_TURNS_MEAN: mean(int(o.get("turns", 0)) for o in outcomes),
        "swe/empty_patch_ratio": share((not o.get("patch") for o in outcomes), n),
        "swe/patch_lines/mean": mean(int(o.get("patch_lines", 0)) for o in outcomes),
    }
    resolved = [int(o.get("turns", 0)) for o in outcomes if o.get("resolved")]
    if resolved:
        metrics["swe/turns_resolved/mean"] = mean(resolved)
    patched = [o for o in outcomes if o.get("patch")]
    if patched:
        metrics["swe/patch_apply_failure_ratio"] = share((not o.get("applied") for o in patched), len(patched))
    calls = sum(int(o.get("calls", 0)) for o in outcomes)
    if calls:
        metrics["swe/format_error_ratio"] = sum(int(o.get("format_errors", 0)) for o in outcomes) / calls
    return {f"{prefix}{name}": value for name, value in metrics.items()}
