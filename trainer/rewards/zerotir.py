"""ZeroTIR: 1 when the answer is correct and the format valid, else 0; optional format penalty.

The format rule is yyht/openrlhf_async_pipline env/common/zero_template_format_score.py
(zero_tir_template_format_score_fn) with env/math/math_reward_tir.py:
- an <answer>...</answer> holding a \\boxed{...} (the code requires at least one box; the issue's
  "exactly one" is stricter, and the code is the reference),
- "</think>", "<answer>" and "</answer>" each exactly once,
- at most 5 tokens after </answer> (counted here as words and punctuation marks, as no
  tokenizer is at hand),
- the response ended normally (finish_reason "stop"), not truncated: a truncated response
  scores 0 for the answer but is not format-penalised, as in the code.
The answer is the last box inside the answer block. The code's penalties are graded (-3 no answer
block, -2 no box, -1 tag counts, -0.5 trailing text); here a single `format_penalty` is
subtracted for any of them. Tags are counted in the model's text: a tool output never makes or
breaks the format.
"""

import re
from typing import Any

from pydantic import Field

from trainer.answers import answers_equivalent, boxed_answers, last_boxed
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.trajectory import RewardResult


class ZeroTIRParams(RewardParams):
    """ZeroTIR: outcome reward on the final answer."""

    format_penalty: float = Field(0.0, description="Subtracted when the response breaks the answer format.")


MAX_TRAILING_TOKENS = 5
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_TOKEN = re.compile(r"\w+|[^\w\s]")


def format_problem(text: str) -> str | None:
    """Why `text` breaks ZeroTIR's answer format, or None when it is valid."""
    blocks = _ANSWER.findall(text)
    if not blocks:
        return "no <answer>...</answer>"
    if not any(boxed_answers(block) for block in blocks):
        return "no \\boxed{} in <answer>"
    for tag in ("</think>", "<answer>", "</answer>"):
        if text.count(tag) != 1:
            return f"{tag} appears {text.count(tag)} times"
    trailing = text.split("</answer>", 1)[1]
    if len(_TOKEN.findall(trailing)) > MAX_TRAILING_TOKENS:
        return "text after </answer>"
    return None


def _zerotir(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    text = response.model_text
    problem = format_problem(text)
    answer = None
    correct = False
    if problem is None and not response.truncated:
        answer = last_boxed(_ANSWER.findall(text)[0])
        correct = answers_equivalent(answer, str(ground_truth))
    penalty = float(ctx.params["format_penalty"]) if problem is not None else 0.0
    answer_reward = 1.0 if correct else 0.0
    return RewardResult(
        total=answer_reward - penalty,
        components={"answer": answer_reward, "format_penalty": 0.0 - penalty},
        correct=correct,
        details={"answer": answer, "format_problem": problem, "truncated": response.truncated},
    )


register_reward(
    "zerotir",
    params=ZeroTIRParams,
    description="+1 if the final answer matches the ground truth, 0 otherwise, "
    "optionally minus a format penalty (ZeroTIR).",
)(per_completion(_zerotir))
