"""ReTool: +1 for a correct final answer, -1 otherwise (verl recipe/retool/retool.py, math_dapo).

`turn_shaping` is the recipe's encouragement to call the tool: a wrong answer scores
min(-0.6, -1 + 0.1 k) with k tool calls. The recipe writes it as (num_turns - 2) / 2 * 0.1,
and verl's tool agent loop counts num_turns = 2 + 2k (prompt, k call/response pairs, answer).
The recipe's math_dapo only looks at the last 300 characters for the box; we read the whole
model text with math-verify, as the issue asks.
"""

from typing import Any

from pydantic import Field

from trainer.answers import answers_equivalent
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.trajectory import RewardResult


class RetoolParams(RewardParams):
    """ReTool: +1 for a correct final answer, -1 otherwise."""

    turn_shaping: bool = Field(
        False, description="Score a wrong answer with k tool calls as min(-0.6, -1 + 0.1k) (verl recipe)."
    )


def _retool(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    answer = response.final_answer
    correct = answers_equivalent(answer, str(ground_truth))
    answer_reward = 1.0 if correct else -1.0
    calls = response.tool_calls
    shaping = 0.0
    if not correct and ctx.params["turn_shaping"]:
        shaping = min(-0.6, answer_reward + 0.1 * calls) - answer_reward
    return RewardResult(
        total=answer_reward + shaping,
        components={"answer": answer_reward, "turn_shaping": shaping},
        correct=correct,
        details={"answer": answer, "tool_calls": calls},
    )


register_reward(
    "retool",
    params=RetoolParams,
    description="+1 for a correct final answer, -1 otherwise, "
    "optionally shaped by the number of tool calls on wrong answers (ReTool).",
    protocol="retool",
)(per_completion(_retool))
