"""Rewards for tool-integrated reasoning: names, descriptions and parameter validation."""

from trainer.rewards.params import (
    REWARD_DESCRIPTIONS,
    REWARD_NAMES,
    RewardParamsError,
    reward_defaults,
    reward_params_model,
    reward_params_schema,
    validate_reward_params,
)

__all__ = [
    "REWARD_DESCRIPTIONS",
    "REWARD_NAMES",
    "RewardParamsError",
    "reward_defaults",
    "reward_params_model",
    "reward_params_schema",
    "validate_reward_params",
]
