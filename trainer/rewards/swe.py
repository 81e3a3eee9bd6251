"""SkyRL-v0's software-engineering reward: 1.0 when the trajectory's patch resolves the instance, else 0.

SkyRL-v0 scores a trajectory by its git patch graded as SWE-bench grades it: resolved when every
FAIL_TO_PASS and every PASS_TO_PASS test passes after the patch is applied (docs/swe_sources.md). The
environment (trainer.envs.swe) grades the patch when the trajectory ends and keeps the result on the
Completion (`outcome`); this reward reads it. A completion without a swe outcome (text alone, another
environment) cannot be graded here and is refused by name.
"""

from typing import Any

from pydantic import Field

from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.trajectory import RewardResult


class SweParams(RewardParams):
    """SkyRL-v0: binary resolved reward."""

    require_finish: bool = Field(
        False,
        description=(
            "Pay a resolved patch only when the trajectory ended with the finish tool (tirlab's; SkyRL-v0 grades "
            "the patch however the trajectory ended). swe-mini sets it: without it the tiny model learns to stop "
            "acting after a fix by writing until the context is full, which keeps the fix and never finishes."
        ),
    )


def _swe_resolved(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    outcome = response.outcome
    if not outcome or outcome.get("kind") != "swe":
        raise ValueError(
            "the swe reward grades a trajectory of the swe environment (its patch and tests); this completion "
            "has no swe outcome -- run it with tools.environment 'swe'"
        )
    resolved = bool(outcome.get("resolved"))
    paid = resolved and (not ctx.params.get("require_finish") or outcome.get("end") == "finished")
    details = {"answer": "resolved" if resolved else ("patch did not apply" if not outcome.get("applied") else "")}
    return RewardResult(
        total=1.0 if paid else 0.0,
        components={"resolved": float(resolved), "applied": float(bool(outcome.get("applied")))},
        correct=resolved,
        details=details,
    )


swe = register_reward(
    "swe",
    params=SweParams,
    description="1 when the patch resolves the instance: every FAIL_TO_PASS and PASS_TO_PASS test passes (SkyRL-v0).",
    protocol="codeact",
    needs_outcome=True,
)(per_completion(_swe_resolved))
