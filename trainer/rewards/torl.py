"""ToRL: +1 when the response's last \\boxed{} equals the ground truth, -1 otherwise.

What ToRL scores (GAIR-NLP/ToRL @cb78cf1): verl's naive reward manager decodes the whole
response, tool outputs included (verl/workers/reward_manager/naive.py:51-57), and
math_verifier.correctness_score_default takes the last complete `\\boxed{...}` of it
(verl/utils/reward_score/math_verifier.py:38,63-66): +1 if equivalent, else -1, also -1 with
no box. So by default (`answer_from: "response"`) a box that only the code's printed output
holds, or a right box printed after a wrong one, counts. `answer_from: "model_text"` reads the
model's own text only, which closes that reward hack (a program that prints `\\boxed{...}`).

Equivalence is tirlab's (trainer.answers), not ToRL's is_equiv: is_equiv hands the bare answer
to math-verify's parse, which then reads `6-6i` as 6 (so it equals `6-5i`) and `\\dfrac{20000}{\\pi}`
as nothing (so it never equals `\\frac{20000}{\\pi}`) (math_verifier.py:104-116).

`exec_error_penalty` (ToRL's `data.execution_error_penalty`, off by default,
verl/trainer/config/ppo_trainer.yaml:17) is subtracted as naive.py:72-73 does: whenever the
sample's execution_pass flag is 0. The rollout sets that flag from the last round in which the
sample called the tool and starts it at 0 (vllm_rollout_spmd.py:267,336-350), so the penalty
applies when the last call failed and also when the response made no call at all. ToRL's
rollout also resets the flag to 0 when a sample stops without a call in a round in which some
*other* sample of the batch called the tool (possible only with more than one call allowed);
that depends on the rest of the batch, so we do not follow it.
"""

from typing import Any, Literal

from pydantic import Field

from trainer.answers import answers_equivalent, last_complete_boxed
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.trajectory import RewardResult, ToolExecution


class TorlParams(RewardParams):
    """ToRL: +1 for a correct final answer, -1 otherwise."""

    exec_error_penalty: float = Field(
        0.0,
        ge=0,
        description="Subtracted unless the last tool call ran successfully; a response without a call "
        "is penalised too, as in ToRL (its option is 0.5).",
    )
    answer_from: Literal["response", "model_text"] = Field(
        "response",
        description="Where the last \\boxed{} answer is read: the whole response with tool outputs, as ToRL "
        "scores it, or the model's own text only, which a program printing \\boxed{} cannot fool.",
    )


def _torl(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    text = response.text if ctx.params["answer_from"] == "response" else response.model_text
    answer = last_complete_boxed(text)
    correct = answers_equivalent(answer, str(ground_truth))
    if response.executions is not None:
        passes = [_passed(e) for e in response.executions]
    else:
        passes = [not failed for failed in response.call_failures]
    # ToRL's execution_pass: the last call's (vllm_rollout_spmd.py:336-350), 0 without one (:267).
    execution_pass = bool(passes) and passes[-1]
    penalty = 0.0 if execution_pass else float(ctx.params["exec_error_penalty"])
    answer_reward = 1.0 if correct else -1.0
    return RewardResult(
        total=answer_reward - penalty,
        components={"answer": answer_reward, "exec_error_penalty": 0.0 - penalty},
        correct=correct,
        details={"answer": answer, "tool_calls": len(passes), "execution_pass": execution_pass},
    )


def _passed(execution: ToolExecution) -> bool:
    """ToRL's pass: exit code 0 or any stdout (postproc, vllm_rollout_spmd.py:229-230, 312-314), so
    a program that prints and then raises passes; a timed-out request never does (:224-225, 233-234)."""
    return execution.status != "timeout" and (execution.ok or bool(execution.stdout))


register_reward(
    "torl",
    params=TorlParams,
    description="+1 if the last \\boxed{} of the response matches the ground truth, -1 otherwise, "
    "optionally minus a penalty unless the last tool call ran successfully (ToRL).",
)(per_completion(_torl))
