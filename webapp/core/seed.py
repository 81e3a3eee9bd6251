"""What every tirlab starts with: an admin account, the built-in datasets and reward presets."""

import secrets

from django.contrib.auth import get_user_model

from trainer.data.datasets import BUILTIN_FILES
from trainer.rewards import REWARD_DESCRIPTIONS, REWARD_NAMES, reward_defaults
from webapp.datasets.models import Dataset
from webapp.datasets.services import dataset_register_builtin
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import reward_config_register_builtin


def admin_create_if_missing(*, username: str = "admin", password: str = "") -> str | None:
    """Create the first superuser if there is none; returns its password (to print once), else None."""
    users = get_user_model()
    if users.objects.filter(is_superuser=True).exists():
        return None
    password = password or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    return password


def builtin_datasets_seed() -> list[Dataset]:
    """The trainer's built-in dataset files as rows, so a name means the same file on both sides."""
    return [
        dataset_register_builtin(name=dataset.name, path=dataset.path, description=dataset.description)
        for dataset in BUILTIN_FILES.values()
    ]


def builtin_reward_configs_seed() -> list[RewardConfig]:
    defaults = reward_defaults()
    return [
        reward_config_register_builtin(
            name=name, reward=name, params=defaults[name], description=REWARD_DESCRIPTIONS[name]
        )
        for name in REWARD_NAMES
    ]
