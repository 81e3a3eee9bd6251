"""What every tirlab starts with: an admin account, the built-in datasets and reward presets."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model

from trainer.rewards import REWARD_DESCRIPTIONS, REWARD_NAMES, reward_defaults
from webapp.datasets.models import Dataset
from webapp.datasets.services import dataset_register_builtin
from webapp.rewards.models import RewardConfig

BUILTIN_DATASETS = [
    ("gsm8k", "data/gsm8k/train.jsonl", "GSM8K train split (7,473 grade-school math problems, MIT licence)."),
    ("gsm8k-test", "data/gsm8k/test.jsonl", "GSM8K test split (1,319 problems), for validation."),
]


def admin_create_if_missing(*, username: str = "admin", password: str = "") -> str | None:
    """Create the first superuser if there is none; returns its password (to print once), else None."""
    users = get_user_model()
    if users.objects.filter(is_superuser=True).exists():
        return None
    password = password or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    return password


def builtin_datasets_seed() -> list[Dataset]:
    return [
        dataset_register_builtin(name=name, path=settings.BASE_DIR / relative, description=description)
        for name, relative, description in BUILTIN_DATASETS
    ]


def builtin_reward_configs_seed() -> list[RewardConfig]:
    defaults = reward_defaults()
    return [
        RewardConfig.objects.update_or_create(
            builtin=True,
            name=name,
            defaults={"reward": name, "params": defaults[name], "description": REWARD_DESCRIPTIONS[name]},
        )[0]
        for name in REWARD_NAMES
    ]
