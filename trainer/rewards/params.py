"""Validating a reward's parameters, and reading what the registered rewards take.

A stored reward preset is a name plus a JSON object of parameters. Each reward's module defines the
pydantic model of its parameters (with their paper defaults) and registers it with the reward
(trainer.rewards.base.register_reward); this module validates against it and reports invalid input
by field path (field path -> messages, ready for an API's 400 answer or a form).
"""

from typing import Any

from pydantic import ValidationError

from trainer.contract import FieldErrors, field_errors
from trainer.registry import UnknownName
from trainer.rewards.base import REWARDS, RewardParams


class RewardParamsError(FieldErrors):
    """Unknown reward name or invalid parameters; errors keyed by 'name' or 'params.<field>'."""


def reward_params_model(name: str) -> type[RewardParams]:
    """The pydantic model that validates the parameters of reward `name`."""
    try:
        return REWARDS.get(name).params
    except UnknownName as exc:
        raise RewardParamsError({"name": [str(exc)]}) from None


def validate_reward_params(name: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Validate `params` for reward `name`; return them with defaults filled in."""
    model = reward_params_model(name)
    try:
        return model.model_validate({} if params is None else params).model_dump(mode="json")
    except ValidationError as exc:
        raise RewardParamsError(field_errors(exc, prefix="params")) from None


def reward_params_schema(name: str) -> dict[str, Any]:
    """JSON schema of the parameters of reward `name`."""
    return reward_params_model(name).model_json_schema()


def reward_defaults() -> dict[str, dict[str, Any]]:
    """Default parameters of every reward, by name (seeds the built-in reward presets)."""
    return {name: validate_reward_params(name, None) for name in REWARDS.names()}
