"""A software-engineering run's rollouts in a real browser: each trajectory's calls and outputs, then its end
state, its patch as a coloured diff and the hidden tests' table, readable in both themes."""

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from tests.webapp.test_swe_outcome import outcome, trajectory
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def report_run(user) -> int:
    run, token = run_create(
        user=user, name="swe-mini", config={"tools": {"protocol": "codeact_mini", "environment": "swe"}}, managed=False
    )
    failed = outcome(resolved=False, applied=False, end="max_turns", apply_log="error: patch failed: f.py:1")
    ingest_batch(
        run_id=run.pk, token=token, payload={"trajectories": [trajectory(0, outcome()), trajectory(1, failed)]}
    )
    return run.pk


@pytest.fixture
def run_id(researcher) -> int:
    return in_thread(report_run, user=researcher)


def test_the_patch_and_the_tests_of_each_trajectory(page, live_server, run_id):
    log_in(page, live_server, f"/runs/{run_id}/rollouts/", wait_for="#rollouts")
    for row in ("t-0-0", "t-0-1"):
        page.click(f"#{row} > summary")
        page.wait_for_selector(f"#{row}[open] .swe-outcome", state="visible")
    resolved = page.locator("#t-0-0 .swe-outcome")
    assert resolved.locator(".swe-head").inner_text().split()[:2] == ["resolved", "finished"]
    assert resolved.locator(".diff-remove").inner_text() == "-    return a - b"
    assert resolved.locator(".diff-add").inner_text() == "+    return a + b"
    rows = resolved.locator(".swe-tests tbody tr")
    assert rows.count() == 2
    assert "pass" in rows.nth(0).inner_text() and "AssertionError" in rows.nth(1).inner_text()
    failed = page.locator("#t-0-1 .swe-outcome .swe-head").inner_text()
    assert "not resolved" in failed and "turn limit" in failed and "patch did not apply" in failed
    assert_readable_in_both_themes(
        page,
        "#t-0-0 .diff-add",
        "#t-0-0 .diff-remove",
        "#t-0-0 .diff-hunk",
        "#t-0-0 .swe-tests tr.is-fail td.mono:last-child",
    )
    page.locator("#t-0-0 .swe-outcome").scroll_into_view_if_needed()
    screenshot(page, "rollouts_swe.png")
    toggle_theme(page)
    screenshot(page, "rollouts_swe_dark.png")
    toggle_theme(page)
