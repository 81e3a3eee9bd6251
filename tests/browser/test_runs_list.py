"""The runs page in a real browser: search, filters, the "/" shortcut, compare, bulk archive, live rows."""


import pytest

from tests.browser._helpers import in_thread, log_in, screenshot
from webapp.runs.models import Experiment, RunStatus
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db(transaction=True)


def make_runs(user):
    experiment = Experiment.objects.create(name="tool budget", owner=user)
    torl, _ = run_create(user=user, name="ToRL C=1", config={}, tags=["math"], experiment=experiment, managed=False)
    retool, _ = run_create(user=user, name="ReTool cold start", config={}, tags=["sft"], managed=False)
    otc, _ = run_create(user=user, name="OTC-GRPO c=3", config={}, tags=["math"], managed=False)
    run_transition(run=retool, status=RunStatus.STARTING)
    run_transition(run=retool, status=RunStatus.RUNNING)
    return torl, retool, otc


def names(page) -> list[str]:
    return page.locator(".runs-table tbody td.run-name a").all_inner_texts()


def test_search_and_status_filter_are_get_parameters(page, live_server, researcher):
    in_thread(make_runs, user=researcher)
    log_in(page, live_server, "/", lands_on="/runs/")
    assert sorted(names(page)) == ["OTC-GRPO c=3", "ReTool cold start", "ToRL C=1"]
    page.fill("#runs-search", "c=")
    page.press("#runs-search", "Enter")
    page.wait_for_url("**/runs/?q=c%3D**")
    assert sorted(names(page)) == ["OTC-GRPO c=3", "ToRL C=1"]
    page.fill("#runs-search", "")
    page.select_option("select[name=status]", "running")
    page.click("text=Apply")
    page.wait_for_url("**status=running**")
    assert names(page) == ["ReTool cold start"]
    screenshot(page, "runs_filtered.png")


def test_slash_focuses_the_search_box(page, live_server, researcher):
    log_in(page, live_server, "/", lands_on="/runs/")
    page.click("h1")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "runs-search"
    assert page.input_value("#runs-search") == ""  # the slash itself is not typed


def test_two_selected_runs_make_the_compare_link_and_bulk_archive_hides_them(page, live_server, researcher):
    torl, retool, otc = in_thread(make_runs, user=researcher)
    log_in(page, live_server, "/", lands_on="/runs/")
    assert page.locator("#compare-link").is_hidden()
    page.check(f"input[name=runs][value='{torl.pk}']")
    page.check(f"input[name=runs][value='{otc.pk}']")
    link = page.locator("#compare-link")
    assert link.is_visible()
    assert link.get_attribute("href") == f"/compare/?runs={otc.pk},{torl.pk}"
    assert page.inner_text("#selection-note") == "2 runs selected"
    screenshot(page, "runs.png")
    page.click("button[value=archive]")
    page.wait_for_selector("text=Archived 2 runs.")
    assert names(page) == ["ReTool cold start"]
    page.check("input[name=archived]")
    page.click("text=Apply")
    page.wait_for_url("**archived=1**")
    assert sorted(names(page)) == ["OTC-GRPO c=3", "ReTool cold start", "ToRL C=1"]
    assert page.locator(".chip", has_text="archived").count() == 2


def test_new_and_changed_runs_appear_without_a_reload(page, live_server, researcher):
    # The test server speaks no websockets: this is the polling fallback re-fetching the table.
    log_in(page, live_server, "/", lands_on="/runs/")
    assert "No runs yet" in page.inner_text("main")
    run, _ = in_thread(run_create, user=researcher, name="arrives live", config={}, managed=False)
    page.wait_for_selector("text=arrives live", timeout=15_000)
    in_thread(run_transition, run=run, status=RunStatus.CANCELLED)
    page.wait_for_selector(f"tr[data-run-id='{run.pk}'] .status.cancelled", timeout=15_000)
    assert page.inner_text("#live-state") in ("↻ polling", "● live")


def test_without_javascript_filters_and_compare_still_work(browser, live_server, researcher):
    torl, retool, otc = in_thread(make_runs, user=researcher)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(page, live_server, "/", lands_on="/runs/")
        page.fill("#runs-search", "math")
        page.click("text=Apply")
        assert sorted(names(page)) == ["OTC-GRPO c=3", "ToRL C=1"]
        page.check(f"input[name=runs][value='{torl.pk}']")
        page.check(f"input[name=runs][value='{otc.pk}']")
        page.click("#compare-submit")
        page.wait_for_url(f"**/compare/?runs={torl.pk},{otc.pk}")
    finally:
        context.close()
