"""Rewards for tool-integrated reasoning: names, parameter validation, and scoring.

One module per paper (torl, zerotir, retool, otc, toolrl, tool_n1, artist, artist_fc, swe, search_r1) and the
weighted combinator; each registers its rewards, their parameter models and descriptions where
they are written (trainer.rewards.base.register_reward), so a new reward is one new file.

    score_group("torl", [text_or_completion, ...], "42", params={...}, step=3, split="train")
        -> [RewardResult(total, components, correct, details), ...]

A completion is the full response text (read with the reward's own protocol) or a
trajectory.Completion, which also carries its protocol, execution statuses and truncation.
"""

from collections.abc import Sequence
from typing import Any

from trainer.rewards.base import (
    REWARDS,
    TRAIN_SPLIT,
    VAL_SPLIT,
    RewardContext,
    RewardState,
    as_response,
    register_reward,
    registered,
)
from trainer.rewards.params import (
    RewardParamsError,
    reward_defaults,
    reward_params_model,
    reward_params_schema,
    validate_reward_params,
)
from trainer.trajectory import Completion, RewardResult

# Every module of this package registers its rewards (trainer.registry): one file per paper.
REWARD_NAMES: tuple[str, ...] = REWARDS.names()
REWARD_DESCRIPTIONS: dict[str, str] = {name: reward.description for name, reward in REWARDS.items()}
# The rewards that score a completion's text (all but those reading an environment's outcome, such as swe).
TEXT_REWARD_NAMES: tuple[str, ...] = tuple(name for name, reward in REWARDS.items() if not reward.needs_outcome)

_DEFAULT_STATE = RewardState()


def default_reward_state() -> RewardState:
    """The state used when score_group is given none (one per process; pass your own to
    checkpoint it, or restore one with RewardState.from_dict)."""
    return _DEFAULT_STATE


def score_group(
    name: str,
    completions: Sequence[str | Completion],
    ground_truth: Any,
    *,
    params: dict[str, Any] | None = None,
    step: int = 0,
    prompt_id: str | None = None,
    state: RewardState | None = None,
    split: str = TRAIN_SPLIT,
) -> list[RewardResult]:
    """Score the GRPO group of completions for one prompt with reward `name`.

    `params` are validated (RewardParamsError on bad input) and completed with defaults; `step`,
    the training step counted from 0, drives ToolRL's schedules; `prompt_id`, `state` and `split`
    ("train" or "val") key OTC-GRPO's global minimum.
    """
    if not isinstance(split, str) or not split:
        raise ValueError(f"split must be a non-empty string such as {TRAIN_SPLIT!r} or {VAL_SPLIT!r}, not {split!r}")
    validated = validate_reward_params(name, params)
    reward = registered(name)
    responses = [as_response(c, reward.protocol) for c in completions]
    if not responses:
        return []
    ctx = RewardContext(
        params=validated,
        step=step,
        prompt_id=None if prompt_id is None else str(prompt_id),
        state=_DEFAULT_STATE if state is None else state,
        split=split,
    )
    return reward.func(responses, ground_truth, ctx)


def score(
    name: str,
    completion: str | Completion,
    ground_truth: Any,
    *,
    params: dict[str, Any] | None = None,
    step: int = 0,
    prompt_id: str | None = None,
    state: RewardState | None = None,
    split: str = TRAIN_SPLIT,
) -> RewardResult:
    """Score one completion (a group of one: for OTC-GRPO it is then its own optimum)."""
    return score_group(
        name, [completion], ground_truth, params=params, step=step, prompt_id=prompt_id, state=state, split=split
    )[0]


__all__ = [
    "REWARDS",
    "REWARD_DESCRIPTIONS",
    "REWARD_NAMES",
    "TEXT_REWARD_NAMES",
    "TRAIN_SPLIT",
    "VAL_SPLIT",
    "RewardParamsError",
    "RewardState",
    "default_reward_state",
    "register_reward",
    "reward_defaults",
    "reward_params_model",
    "reward_params_schema",
    "score",
    "score_group",
    "validate_reward_params",
]
