"""verl's custom reward function for a tirlab run: tirlab's registered reward, scored per sample.

verl 0.9.1 loads it from `reward.custom_reward_function.path` / `name` and calls it with the keywords
`data_source`, `solution_str`, `ground_truth` and `extra_info`, merged with
`reward.custom_reward_function.reward_kwargs` (verl/trainer/ppo/reward.py:32-86 `get_custom_reward_fn`,
verl/experimental/reward_loop/reward_manager/naive.py:34-91 `run_single`); tirlab's overrides pass the
run's config file there as `run_config`. The reward named in it (`reward.name`, `reward.params`) scores
the sample as tirlab's trainer scores a completion (trainer.rewards.score_group over a group of one):

- the response is the agent loop's own text (`extra_info["tirlab_text"]`, trainer.verl.agent_loop), the
  text tirlab's rollout built, and verl's decoded `solution_str` only where that is missing (a row not
  rolled out by tirlab's agent loop);
- the executions (each call's output and status: ToRL's exec-error penalty, ARTIST's tool success) and
  truncation come from the agent loop's extra fields, which verl merges into `extra_info`; without
  them the reward reads the calls from the text, as it does for a pasted completion;
- the ground truth is the row's JSON `extra_info["ground_truth"]` (trainer.verl.data), so a list of
  calls arrives as a list;
- the step is the weights version verl's server reports with each generation (`global_steps`,
  verl/workers/rollout/vllm_rollout/vllm_async_server.py:689, 0 before the first update): the
  0-based training step the sample is rolled out for, which ToolRL's schedules read.

It returns `score` (the total), `acc` (verl's accuracy name: 1.0 or 0.0), `correct` (0/1), `tool_calls`
(counted as trainer.metrics.step counts them) and each reward component; verl writes every key into its
rollout dump (verl/trainer/ppo/ray_trainer.py:454-477), which trainer.verl.samples reads.

verl scores one sample at a time, so a reward that compares a group's completions (OTC-GRPO's fewest
calls among the group's correct answers) cannot be computed here: it is refused.

Nothing here imports verl.
"""

from __future__ import annotations

import json
from typing import Any

from trainer.config import RewardSpec
from trainer.metrics.step import tool_call_count
from trainer.rewards import RewardState, score
from trainer.trajectory import Completion, ToolExecution
from trainer.verl.data import load_run_config
from trainer.verl.overrides import group_rewards_in

# The agent loop's extra fields this adapter reads (trainer.verl.agent_loop writes them).
TEXT_FIELD = "tirlab_text"
EXECUTIONS_FIELD = "tirlab_executions"
TRUNCATED_FIELD = "tirlab_truncated"
RESPONSE_TOKENS_FIELD = "tirlab_response_tokens"
# Keys of the result besides the reward's components.
RESULT_KEYS = ("score", "acc", "correct", "tool_calls")


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    run_config: str,
    **kwargs: Any,
) -> dict[str, float | int]:
    """The sample's reward under the run's tirlab reward (see the module docstring); `kwargs` are what
    verl passes besides (its reward-model router, when one is configured), unused."""
    config = load_run_config(str(run_config))
    check_per_sample(config.reward)
    info = extra_info or {}
    completion = sample_completion(solution_str, info, protocol=config.tools.protocol)
    truth = json.loads(info["ground_truth"]) if isinstance(info.get("ground_truth"), str) else ground_truth
    step = int(info.get("global_steps") or 0)
    result = score(config.reward.name, completion, truth, params=config.reward.params, step=step, state=RewardState())
    out: dict[str, float | int] = {
        "score": float(result.total),
        "acc": 1.0 if result.correct else 0.0,
        "correct": int(result.correct),
        "tool_calls": tool_call_count(completion),
    }
    for name, value in result.components.items():
        if name in out and float(out[name]) != float(value):
            raise ValueError(f"reward {config.reward.name!r}: component {name!r} clashes with the result's own key")
        out.setdefault(name, float(value))
    return out


def check_per_sample(reward: RewardSpec) -> None:
    """Refuse a reward that compares a group's completions (alone or as a term of 'weighted')."""
    grouped = group_rewards_in(reward)
    if grouped:
        raise ValueError(
            f"reward.name: {', '.join(grouped)} compares the completions of a GRPO group, and verl scores "
            "each sample alone; use a per-sample reward (otc_ppo is OTC's)"
        )


def sample_completion(solution_str: str, info: dict[str, Any], *, protocol: str) -> Completion:
    """The completion tirlab's rollout built for the sample, from the agent loop's extra fields."""
    executions = tuple(ToolExecution(**execution) for execution in json.loads(info.get(EXECUTIONS_FIELD) or "[]"))
    tokens = info.get(RESPONSE_TOKENS_FIELD)
    return Completion(
        text=info.get(TEXT_FIELD, solution_str),
        protocol=protocol,
        executions=executions,
        truncated=bool(info.get(TRUNCATED_FIELD, False)),
        response_tokens=None if tokens is None else int(tokens),
    )
