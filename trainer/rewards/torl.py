"""ToRL: +1 when the last \\boxed{} of the model's text equals the ground truth, -1 otherwise.

`exec_error_penalty` (ToRL's `execution_error_penalty` option subtracts 0.5) is subtracted when
the response called the tool and its last executed call failed. ToRL's code
(GAIR-NLP/ToRL, verl/workers/reward_manager/naive.py with vllm_rollout_spmd.py) subtracts it
whenever the sample's `execution_pass` flag is 0, a flag that is also 0 for responses that never
called the tool and is reset by a later round without a call; that depends on the other samples
of the batch, so we apply the issue's per-response rule instead: called, and the last call failed.
"""

from typing import Any

from trainer.answers import answers_equivalent
from trainer.rewards.base import Response, RewardContext, per_completion, register_reward
from trainer.trajectory import RewardResult


def _torl(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    answer = response.final_answer
    correct = answers_equivalent(answer, str(ground_truth))
    failures = response.call_failures
    last_failed = bool(failures) and failures[-1]
    penalty = float(ctx.params["exec_error_penalty"]) if last_failed else 0.0
    answer_reward = 1.0 if correct else -1.0
    return RewardResult(
        total=answer_reward - penalty,
        components={"answer": answer_reward, "exec_error_penalty": 0.0 - penalty},
        correct=correct,
        details={"answer": answer, "tool_calls": len(failures), "last_call_failed": last_failed},
    )


register_reward("torl")(per_completion(_torl))
