"""Django for the tests that need it, and none for those that must not.

The trainer and the sandbox never import Django or webapp (ARCHITECTURE.md), and neither do their
tests: a run that collects only from the directories in DJANGO_FREE (`pytest tests/trainer
tests/sandbox`) configures no Django and refuses to import it, so a test that needs it fails there
with a message saying so. Any other run (the whole suite, tests/webapp, tests/browser) sets Django
up in pytest_configure, instead of DJANGO_SETTINGS_MODULE in pytest.ini doing it for every run.
"""

import importlib.abc
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
# Directories under tests/ whose tests run without Django (test files directly in tests/ do too).
DJANGO_FREE = ("trainer", "sandbox", "bench")
_REFUSED = ("django", "webapp")


def runs_without_django(config: pytest.Config) -> bool:
    """Whether every path the run collects from lies in a Django-free directory."""
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if not path.is_relative_to(TESTS) or path == TESTS:
            return False
        top = path.relative_to(TESTS).parts[0]
        if top not in DJANGO_FREE and not (TESTS / top).is_file():
            return False
    return True


class RefuseDjango(importlib.abc.MetaPathFinder):
    """Makes Django and webapp unimportable, with a message that says why."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] in _REFUSED:
            raise ModuleNotFoundError(
                f"{fullname} is not importable here: tests under tests/{{{','.join(DJANGO_FREE)}}} run without "
                "Django (tests/django_setup.py); a test that needs it belongs in tests/webapp",
                name=fullname,
            )
        return None


def setup_django() -> None:
    """Django with the suite's settings, set up now (calling it again changes nothing).
    tests/webapp/conftest.py calls it too: when a run names files under tests/webapp, that conftest
    is imported (and imports models) before pytest_configure."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    from django.conf import settings

    # PBKDF2's deliberate slowness is for production logins, not for creating test users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    django.setup()


_refuse = RefuseDjango()


def pytest_configure(config: pytest.Config) -> None:
    # pytest-django's own pytest_configure (trylast) then finds Django set up and guards the database.
    if not runs_without_django(config):
        setup_django()
    elif "django" not in sys.modules:  # not set up already (pytest --ds=...)
        sys.meta_path.insert(0, _refuse)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _refuse in sys.meta_path:
        sys.meta_path.remove(_refuse)
