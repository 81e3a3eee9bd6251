from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from webapp.datasets.models import Dataset
from webapp.rewards.models import RewardConfig

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path: Path) -> Path:
    """The made-up admin password is kept in the var dir: each test its own."""
    settings.VAR_DIR = tmp_path
    return tmp_path


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


def test_a_made_up_password_is_kept_for_its_owner_until_it_is_changed(var_dir: Path):
    first = bootstrap()
    password = first.split("password: ")[1].split()[0]
    kept = var_dir / "admin-login"
    assert f"kept in {kept} (mode 0600)" in first
    assert kept.stat().st_mode & 0o777 == 0o600
    assert kept.read_text() == f"username: admin\npassword: {password}\n"
    assert bootstrap().count("admin") == 0 and kept.exists()  # still the password: kept, nothing said

    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed-in-the-admin")
    admin.save()
    assert f"Removed {kept}: the password it kept no longer logs in." in bootstrap()
    assert not kept.exists()
    assert "admin-login" not in bootstrap()


def test_a_given_password_is_neither_printed_nor_kept(var_dir: Path, monkeypatch):
    (var_dir / "admin-login").write_text("username: admin\npassword: of-an-earlier-database\n")
    monkeypatch.setenv("TIRLAB_ADMIN_PASSWORD", "chosen-by-me-42")
    out = bootstrap()
    assert "Created admin account 'admin' with the password of TIRLAB_ADMIN_PASSWORD" in out
    assert "chosen-by-me-42" not in out and not (var_dir / "admin-login").exists()
    assert get_user_model().objects.get(username="admin").check_password("chosen-by-me-42")


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
    assert RewardConfig.objects.filter(builtin=True).count() == len(REWARD_NAMES) == 12


def test_api_docs_are_public_and_served_without_a_cdn(client):
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "cdn" not in page.lower() and "//unpkg" not in page
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/v1/runs/{id}/ingest" in schema.content
