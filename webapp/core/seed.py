"""What every tirlab starts with: an admin account, and the built-in rows of the apps that ship some.

Core knows no app above it: an app with built-in rows (datasets, reward presets) registers a seeder
here from its AppConfig.ready, and `manage.py tirlab_bootstrap` runs them all, in INSTALLED_APPS order.

The admin's password, when tirlab makes it up, is kept in the var dir's `admin-login` (readable by its
owner only) for as long as it logs in: `make run` says where, next to "tirlab is up", and the bootstrap
removes the file once the password has been changed (`manage.py changepassword admin`, or the admin).
"""

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

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


def admin_login_path(var_dir: Path | str) -> Path:
    """Where the made-up admin password is kept (no Django needed: devstack reads it too)."""
    return Path(var_dir) / "admin-login"


def admin_login_write(path: Path, username: str, password: str) -> None:
    """Keeps a made-up password where only its owner can read it (mode 0600, from its creation on)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as kept:
        kept.write(f"username: {username}\npassword: {password}\n")
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT


def admin_login_read(path: Path) -> tuple[str, str] | None:
    """(username, password) from the file, or None without one."""
    try:
        text = path.read_text()
    except OSError:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    if "username" in fields and "password" in fields:
        return fields["username"], fields["password"]
    return None


def admin_login_stale(path: Path) -> bool:
    """Whether the file names a login that no longer works (the password changed, the user gone)."""
    login = admin_login_read(path)
    if login is None:
        return False
    user = get_user_model().objects.filter(username=login[0]).first()
    return user is None or not user.check_password(login[1])
