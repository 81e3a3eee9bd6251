"""Three users, the healthchecks way: an owner, another user (a stranger to the owner's rows) and staff."""

from typing import Any

import pytest

from tests.django_setup import setup_django

setup_django()  # before the imports below: `pytest tests/webapp/...` imports this file before pytest_configure

from rest_framework.test import APIClient  # noqa: E402

from webapp.runs.models import Experiment, Run  # noqa: E402
from webapp.runs.services import run_create  # noqa: E402


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def stranger(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(username="carol", password="pw-carol-123", is_staff=True)


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def api(owner) -> APIClient:
    return client_for(owner)


@pytest.fixture
def experiment(owner) -> Experiment:
    return Experiment.objects.create(name="tool use", owner=owner, tags=["math"])


@pytest.fixture
def make_run(owner):
    def make(user=None, **kwargs: Any) -> tuple[Run, str]:
        kwargs.setdefault("name", "run")
        kwargs.setdefault("config", {})
        # These tests play the trainer themselves with the token: an unmanaged run, never launched.
        kwargs.setdefault("managed", False)
        return run_create(user=user or owner, **kwargs)

    return make


@pytest.fixture
def run_and_token(make_run) -> tuple[Run, str]:
    return make_run()
