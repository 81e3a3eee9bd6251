"""What every tirlab starts with: an admin account, and the built-in rows of the apps that ship some.

Core knows no app above it: an app with built-in rows (datasets, reward presets) registers a seeder
here from its AppConfig.ready, and `manage.py tirlab_bootstrap` runs them all, in INSTALLED_APPS order.
"""

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Model


@dataclass(frozen=True)
class Seeder:
    """Creates or refreshes an app's built-in rows (idempotent) and returns them."""

    title: str
    seed: Callable[[], Sequence[Model]]


_SEEDERS: dict[str, Seeder] = {}


def seeder_register(*, title: str, seed: Callable[[], Sequence[Model]]) -> None:
    """Have `tirlab_bootstrap` run `seed`, printing `title: <the rows' names>`; one seeder a title."""
    _SEEDERS[title] = Seeder(title=title, seed=seed)


def seeders() -> list[Seeder]:
    return list(_SEEDERS.values())


def admin_create_if_missing(*, username: str = "admin", password: str = "") -> str | None:
    """Create the first superuser if there is none; returns its password (to print once), else None."""
    users = get_user_model()
    if users.objects.filter(is_superuser=True).exists():
        return None
    password = password or secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    return password
