"""OTC (Acting Less is Reasoning More): correctness scaled by a tool-efficiency factor.

otc_ppo:  r = alpha * cos(m*pi / (2m + c)) * r_correct, m the completion's tool calls.
otc_grpo: n = the fewest tool calls among the group's correct completions (with `global_min`,
also among those remembered for the prompt from earlier steps of the same split);
          f(m, n) = 0 if m = n = 0;  m if n = 0;  2nm / (m + n) otherwise
          r_tool  = 1 if f = n = 0;  cos(m*pi / (2m + c)) if n = 0;  sin(f*pi / (2n)) otherwise
          r = alpha * r_tool * r_correct.

A wrong answer scores `wrong_reward` unscaled (the paper's r_correct is 0 there, so nothing
changes by default): scaling a negative wrong_reward by r_tool <= 1 would make a wrong answer
with more calls score *higher*, the opposite of what OTC wants. The group implementations of
OTC-GRPO we read (get_oct_penalty) likewise leave wrong answers at factor 1.

In OTC's search setting (the search_r1 protocol) m is the searches run and correctness is Search-R1's exact match;
elsewhere it is the answer's math equivalence to the ground truth.
"""

import math
from typing import Any

from pydantic import Field

from trainer.answers import answers_equivalent
from trainer.protocols.search_r1 import SearchR1
from trainer.rewards.base import Response, RewardContext, RewardParams, register_reward
from trainer.rewards.search_r1 import em_check, golden_answers
from trainer.trajectory import RewardResult


class OtcPpoParams(RewardParams):
    """OTC-PPO: correctness scaled by a factor that decays with the number of tool calls."""

    alpha: float = Field(1.0, description="Weight of the tool-efficiency factor on the correctness reward.")
    c: float = Field(3.0, gt=0, description="Smoothness constant c of the cos(m*pi/(2m+c)) tool-call decay.")
    wrong_reward: float = Field(0.0, description="Reward of a wrong answer (paper 0; -1 is an option).")


class OtcGrpoParams(OtcPpoParams):
    """OTC-GRPO: correctness scaled by closeness to the fewest tool calls that solved the prompt."""

    global_min: bool = Field(
        False, description="Use the fewest tool calls seen for the prompt across steps, not only within the group."
    )


def otc_ppo_factor(m: int, c: float) -> float:
    """cos(m*pi / (2m + c)): 1 with no call, decreasing toward cos(pi/2) = 0 as calls grow."""
    return math.cos(m * math.pi / (2 * m + c))


def otc_map(m: int, n: int) -> float:
    """f(m, n): maps m calls onto [0, 2n] so that m = n lands on n (the optimum)."""
    if m == 0 and n == 0:
        return 0.0
    if n == 0:
        return float(m)
    return 2 * n * m / (m + n)


def otc_grpo_factor(m: int, n: int, c: float) -> float:
    """r_tool of OTC-GRPO: 1 at the optimum n, falling off on both sides."""
    f = otc_map(m, n)
    if f == 0 and n == 0:
        return 1.0
    if n == 0:
        return otc_ppo_factor(m, c)
    return math.sin(f * math.pi / (2 * n))


def _correctness(responses: list[Response], ground_truth: Any) -> list[tuple[Response, str | None, bool]]:
    """Each response's answer and whether it is right: math-equivalent to the ground truth, or in OTC's search
    setting (the search_r1 protocol) an exact match of a golden answer as Search-R1's reward checks it."""
    out = []
    for response in responses:
        answer = response.final_answer
        if response.protocol.name == SearchR1.name:
            correct = answer is not None and em_check(answer, golden_answers(ground_truth))
        else:
            correct = answers_equivalent(answer, str(ground_truth))
        out.append((response, answer, correct))
    return out


def _result(
    correct: bool, r_tool: float, calls: int, answer: str | None, ctx: RewardContext, **extra: Any
) -> RewardResult:
    alpha = float(ctx.params["alpha"])
    total = alpha * r_tool if correct else float(ctx.params["wrong_reward"])
    return RewardResult(
        total=total,
        components={"correct": 1.0 if correct else 0.0, "r_tool": r_tool},
        correct=correct,
        details={"answer": answer, "tool_calls": calls, **extra},
    )


@register_reward(
    "otc_ppo",
    params=OtcPpoParams,
    description="Correctness reward scaled by cos(m*pi/(2m+c)), "
    "which favours answering with fewer tool calls m (OTC-PPO).",
)
def otc_ppo(responses: list[Response], ground_truth: Any, ctx: RewardContext) -> list[RewardResult]:
    c = float(ctx.params["c"])
    return [
        _result(ok, otc_ppo_factor(r.tool_calls, c), r.tool_calls, answer, ctx)
        for r, answer, ok in _correctness(responses, ground_truth)
    ]


@register_reward(
    "otc_grpo",
    params=OtcGrpoParams,
    description="Correctness reward scaled by closeness to the fewest tool calls that solved the prompt (OTC-GRPO).",
)
def otc_grpo(responses: list[Response], ground_truth: Any, ctx: RewardContext) -> list[RewardResult]:
    c = float(ctx.params["c"])
    scored = _correctness(responses, ground_truth)
    group_min = min((r.tool_calls for r, _, ok in scored if ok), default=None)
    n = group_min
    if ctx.params["global_min"] and ctx.prompt_id is not None:
        # Per split: validation rows are numbered like training rows but are other prompts.
        memory = ctx.state.fewest_calls(ctx.split)
        remembered = memory.get(ctx.prompt_id)
        candidates = [v for v in (group_min, remembered) if v is not None]
        n = min(candidates) if candidates else None
        if n is not None:
            memory[ctx.prompt_id] = n
    results = []
    for r, answer, ok in scored:
        # n is defined whenever some completion is correct; a wrong one ignores r_tool.
        r_tool = otc_grpo_factor(r.tool_calls, n, c) if ok and n is not None else 1.0
        results.append(_result(ok, r_tool, r.tool_calls, answer, ctx, optimal_calls=n))
    return results
