"""A researcher's first minutes in a real browser: log in, see the dashboard, make an API token."""

import os
from pathlib import Path

import pytest

from tests.browser._helpers import in_thread, log_in
from webapp.datasets.services import builtin_datasets_seed
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_login_shows_runs_builtin_datasets_and_reward_presets(page, live_server, researcher):
    in_thread(builtin_datasets_seed)
    in_thread(builtin_reward_configs_seed)
    in_thread(run_create, user=researcher, name="ToRL · C=1 baseline", config={"rollout": {"group_size": 16}})
    log_in(page, live_server, "/", lands_on="/runs/")
    assert page.locator("table").first.inner_text().count("ToRL · C=1 baseline") == 1
    # A new run offers the built-in datasets and reward presets.
    page.click("text=New run")
    assert page.locator("#dataset-choices option[value=gsm8k-test]").get_attribute("label").endswith("1319 rows")
    assert "otc_grpo" in page.inner_text("#f-reward-config")
    shots = os.environ.get("TIRLAB_SCREENSHOT_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "dashboard.png"), full_page=True)


def test_wrong_password_is_refused_on_the_login_page(page, live_server, researcher):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    assert "didn't match" in page.inner_text("main")


def test_api_token_is_shown_once_then_only_its_prefix(page, live_server, researcher):
    log_in(page, live_server, "/", lands_on="/runs/")
    page.click("text=API tokens")
    page.fill("input[name=name]", "cluster")
    page.click("text=Create token")
    secret = page.inner_text("code.secret")
    assert secret.startswith("tlp_")
    page.reload()
    assert secret not in page.content()
    assert secret[:10] in page.inner_text("table")
    page.click("button[name=revoke]")
    assert "revoked" in page.inner_text("table")


def test_untrusted_run_names_render_as_text(page, live_server, researcher):
    in_thread(run_create, user=researcher, name='<img src=x onerror="document.title=1">', config={})
    log_in(page, live_server, "/", lands_on="/runs/")
    assert '<img src=x onerror="document.title=1">' in page.inner_text("table")
    assert page.title() == "Runs · tirlab"
