from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from webapp.datasets.models import Dataset
from webapp.rewards.models import RewardConfig

pytestmark = pytest.mark.django_db


def bootstrap() -> str:
    out = StringIO()
    call_command("tirlab_bootstrap", stdout=out)
    return out.getvalue()


def test_first_start_creates_the_admin_and_prints_its_password_once():
    first = bootstrap()
    assert "Created admin account 'admin' with password:" in first
    password = first.split("password: ")[1].split()[0]
    assert get_user_model().objects.get(username="admin").check_password(password)
    assert "password" not in bootstrap()


def test_seeding_twice_keeps_one_copy_of_each_builtin():
    bootstrap()
    bootstrap()
    assert sorted(Dataset.objects.filter(builtin=True).values_list("name", "row_count")) == [
        ("gsm8k", 7473),
        ("gsm8k-test", 1319),
        ("toolrl-test", 80),
    ]
    from trainer.rewards import REWARD_NAMES

    # One built-in config per registered reward.
    assert RewardConfig.objects.filter(builtin=True).count() == len(REWARD_NAMES) == 10


def test_api_docs_are_public_and_served_without_a_cdn(client):
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "cdn" not in page.lower() and "//unpkg" not in page
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/v1/runs/{id}/ingest" in schema.content
