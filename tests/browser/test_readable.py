"""Every page's main actions are visible, labelled and readable (WCAG AA contrast) in both themes.

A button whose label has the colour of its background (the run page's Cancel run once did) looks
like a coloured box; these tests read the colours Chromium computes, so such a button fails here.
"""

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in
from webapp.datasets.services import builtin_datasets_seed
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

TRAJECTORY = {
    "step": 3,
    "prompt_index": 0,
    "sample_index": 0,
    "prompt": "What is 17 * 23?",
    "turns": [
        {"kind": "model", "text": "<python>\nprint(17 * 23)\n</python>"},
        {"kind": "tool", "text": "<output>\n391\n</output>\n", "status": "ok", "duration_ms": 9.0},
        {"kind": "model", "text": "<answer>\\boxed{391}</answer>"},
    ],
    "final_answer": "391",
    "ground_truth": "391",
    "reward": 1.0,
    "correct": True,
    "tool_call_count": 1,
}


def reporting_run(user, name: str, final: dict | None = None) -> int:
    """An ARTIST run whose trainer (this test) reported four steps, a trajectory and, given
    `final`, its last status."""
    run, token = run_create(user=user, name=name, config={"tools": {"protocol": "artist"}}, managed=False)
    metrics = [{"step": step, "values": {"accuracy": step / 4, "tool_call_ratio": 0.5}} for step in range(4)]
    ingest_batch(run_id=run.pk, token=token, payload={"metrics": metrics, "trajectories": [TRAJECTORY]})
    if final:
        ingest_batch(run_id=run.pk, token=token, payload={"status": final})
    return run.pk


@pytest.fixture
def running(researcher) -> int:
    return in_thread(reporting_run, user=researcher, name="running")


def test_login_page(page, live_server):
    page.goto(f"{live_server.url}/accounts/login/")
    assert_readable_in_both_themes(page, "main button[type=submit]", "#theme-toggle")


def test_runs_list_and_top_bar(page, live_server, researcher, running):
    in_thread(reporting_run, user=researcher, name="finished", final={"status": "succeeded"})
    log_in(page, live_server, "/runs/")
    page.check("input[name=runs] >> nth=0")
    page.check("input[name=runs] >> nth=1")
    assert_readable_in_both_themes(
        page,
        ".page-head a.button",  # New run
        "#runs-filters button[type=submit]",
        "#compare-link",
        "#cancel-selected",
        "nav a[href='/runs/']",
        "nav button.link",  # Log out
        f"#runs-table a[href='/runs/{running}/']",
        "#runs-table .status.running",
        "#runs-table .status.succeeded",
    )


def test_new_run_form(page, live_server, researcher):
    in_thread(builtin_reward_configs_seed)
    log_in(page, live_server, "/runs/new/")
    assert_readable_in_both_themes(page, "#launch")


def test_running_run_page(page, live_server, researcher, running):
    log_in(page, live_server, f"/runs/{running}/")
    page.wait_for_selector("#headline-charts .chart")
    assert_readable_in_both_themes(page, "#cancel-open", "#fork button[type=submit]", "#run-status")


def test_finished_run_pages(page, live_server, researcher):
    checkpointed = in_thread(
        reporting_run, user=researcher, name="done", final={"status": "succeeded", "checkpoint": "/ckpt/step-3"}
    )
    failed = in_thread(reporting_run, user=researcher, name="crashed", final={"status": "failed", "error": "OOM"})
    log_in(page, live_server, f"/runs/{checkpointed}/")
    assert_readable_in_both_themes(page, "#resume-form button", "#run-status")
    page.goto(f"{live_server.url}/runs/{failed}/")
    assert_readable_in_both_themes(page, "#run-error-text", "#run-status")


def test_rollouts_page(page, live_server, researcher, running):
    log_in(page, live_server, f"/runs/{running}/rollouts/")
    page.click("#t-0-0 > summary")
    page.wait_for_selector("#t-0-0 code.highlighted")
    assert_readable_in_both_themes(
        page,
        "#rollout-form button[type=submit]",
        "#t-0-0 .copy-link",
        "#t-0-0 .outcome .badge.ok",
        "#t-0-0 .reward",
        "#t-0-0 .answer-cell",
        "#t-0-0 .final-answer",
    )


def test_compare_page(page, live_server, researcher, running):
    log_in(page, live_server, f"/compare/?run={running}")
    assert_readable_in_both_themes(
        page, f".compare-legend a[href='/runs/{running}/']", ".metric-choices label >> nth=0"
    )


def test_datasets_pages(page, live_server, researcher):
    in_thread(builtin_datasets_seed)
    log_in(page, live_server, "/datasets/")
    assert_readable_in_both_themes(page, "#upload button[type=submit]", "table a >> nth=0")
    page.click("table a >> nth=0")
    page.wait_for_selector("#preview-form")
    assert_readable_in_both_themes(page, "#preview-form button[type=submit]")


def test_rewards_page(page, live_server, researcher):
    in_thread(builtin_reward_configs_seed)
    log_in(page, live_server, "/rewards/")
    assert_readable_in_both_themes(
        page, "#reward-choice button[type=submit]", "button[value=try]", "button[value=save]"
    )


def test_api_tokens_page(page, live_server, researcher):
    log_in(page, live_server, "/tokens/")
    page.fill("input[name=name]", "cluster")
    page.click("text=Create token")
    assert_readable_in_both_themes(
        page, "main form.inline-form button[type=submit]", "code.secret", "button[name=revoke]"
    )
