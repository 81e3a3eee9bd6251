"""Writes to reward configs, with one set of rules for the reward page and the API.

A config is a registered reward's name and its parameters, validated (and completed with their
defaults) by trainer.rewards. Built-in configs and other users' configs cannot be changed.
"""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError

from trainer.rewards import (
    REWARD_DESCRIPTIONS,
    REWARD_NAMES,
    RewardParamsError,
    reward_defaults,
    validate_reward_params,
)
from webapp.core.permissions import may_change
from webapp.rewards.models import RewardConfig

NAME_MAX = RewardConfig._meta.get_field("name").max_length


def _validated(*, name: str, reward: str, params: Any) -> tuple[str, dict[str, Any]]:
    """The stripped name and the complete params; every problem at once, by field, if any."""
    errors: dict[str, list[str]] = {}
    name = name.strip()
    if not name:
        errors["name"] = ["Give the reward config a name."]
    elif len(name) > NAME_MAX:
        errors["name"] = [f"At most {NAME_MAX} characters."]
    if not isinstance(params, dict):
        errors["params"] = ["must be a JSON object"]
    else:
        try:
            params = validate_reward_params(reward, params)
        except RewardParamsError as exc:
            # trainer.rewards names the reward "name"; here that is the config's own name.
            for path, messages in exc.errors.items():
                errors.setdefault("reward" if path == "name" else path, []).extend(messages)
    if errors:
        raise ValidationError(errors)
    return name, params


def _check_may_change(config: RewardConfig, user: AbstractBaseUser) -> None:
    if not may_change(user, config):
        raise PermissionDenied("Built-in reward configs and other users' configs cannot be changed.")


def reward_config_create(
    *, user: AbstractBaseUser, name: str, reward: str, params: Any = None, description: str = ""
) -> RewardConfig:
    """Store `reward` with `params` (defaults filled in) as the user's config `name`."""
    name, params = _validated(name=name, reward=reward, params={} if params is None else params)
    return RewardConfig.objects.create(
        name=name, description=description.strip(), owner=user, reward=reward, params=params
    )


def reward_config_update(
    *,
    config: RewardConfig,
    user: AbstractBaseUser,
    name: str | None = None,
    reward: str | None = None,
    params: Any = None,
    description: str | None = None,
) -> RewardConfig:
    """Change the given fields; another reward without params starts from that reward's defaults."""
    _check_may_change(config, user)
    if params is None:
        params = config.params if reward in (None, config.reward) else {}
    reward = config.reward if reward is None else reward
    name, params = _validated(name=config.name if name is None else name, reward=reward, params=params)
    config.name, config.reward, config.params = name, reward, params
    if description is not None:
        config.description = description.strip()
    config.save()
    return config


def reward_config_delete(*, config: RewardConfig, user: AbstractBaseUser) -> None:
    _check_may_change(config, user)
    config.delete()


def reward_config_register_builtin(*, name: str, reward: str, params: dict[str, Any], description: str) -> RewardConfig:
    """Create or refresh a built-in config, which every user sees and nobody changes."""
    config, _ = RewardConfig.objects.update_or_create(
        builtin=True, name=name, defaults={"reward": reward, "params": params, "description": description}
    )
    return config


def builtin_reward_configs_seed() -> list[RewardConfig]:
    """One built-in config per registered reward, with its default parameters."""
    defaults = reward_defaults()
    return [
        reward_config_register_builtin(
            name=name, reward=name, params=defaults[name], description=REWARD_DESCRIPTIONS[name]
        )
        for name in REWARD_NAMES
    ]
