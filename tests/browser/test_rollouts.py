"""The rollouts page in a real browser: step through a run's rollouts with the keyboard, read a
GRPO group a row per sample, filter, search, follow deep links, and stay safe from model output."""

import pytest

from tests.browser._helpers import in_thread, log_in, screenshot
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

XSS = '<script>alert(1)</script> <img src=x onerror="window.__pwned=1">'


def trajectory(step: int, prompt: int, sample: int, *, correct: bool, **extra) -> dict:
    answer = "391" if correct else str(380 + sample)
    return {
        "step": step,
        "prompt_index": prompt,
        "sample_index": sample,
        "prompt": [{"role": "user", "content": f"Step {step} prompt {prompt}: what is 17 * 23?"}],
        "turns": [
            {"kind": "model", "text": f"Sample {sample} of step {step}.\n```python\nprint(17*23)  # check\n```"},
            {
                "kind": "tool",
                "text": "```output\n391\n```",
                "call": "print(17*23)  # check",
                "status": "ok",
                "duration_ms": 9.0,
            },
            {"kind": "model", "text": f"So the answer is \\boxed{{{answer}}}."},
        ],
        "final_answer": answer,
        "ground_truth": "391",
        "reward": 1.0 if correct else -1.0,
        "reward_components": {"answer": 1.0 if correct else -1.0},
        "correct": correct,
        "tool_call_count": 1,
        **extra,
    }


def report(run_id: int, token: str, trajectories: list[dict]) -> None:
    in_thread(ingest_batch, run_id=run_id, token=token, payload={"trajectories": trajectories})


@pytest.fixture
def run(researcher):
    """Steps 1-3, two groups of three; sample 0 of each group is the only correct one."""
    run, token = in_thread(run_create, user=researcher, name="ToRL rollouts", config={}, managed=False)
    report(run.pk, token, [trajectory(s, p, i, correct=i == 0) for s in (1, 2, 3) for p in range(2) for i in range(3)])
    run.test_token = token
    return run


def shown(page) -> list[str]:
    return page.eval_on_selector_all(".trajectory", "nodes => nodes.map(n => n.id)")


def open_row(page, row_id: str) -> None:
    """Open a sample's row into its trajectory, as a click on the row does."""
    page.click(f"#{row_id} > summary")
    page.wait_for_selector(f"#{row_id}[open] .trajectory-body", state="visible")


def test_step_through_rollouts_with_the_arrow_keys(page, live_server, run):
    log_in(page, live_server, f"/runs/{run.pk}/rollouts/", wait_for="#rollouts")
    assert "Step 3" in page.inner_text(".step-summary")
    # The group of a prompt a row per sample, in order; a row opens into its trajectory.
    boxes = [page.locator(f"#t-0-{i}").bounding_box() for i in range(3)]
    assert boxes[0]["x"] == boxes[1]["x"] == boxes[2]["x"]
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    open_row(page, "t-0-0")
    # The code the model wrote is highlighted.
    assert page.locator("#t-0-0 code.highlighted .hl-builtin").first.inner_text() == "print"
    assert page.locator("#t-0-0 code.highlighted .hl-comment").first.inner_text() == "# check"
    page.keyboard.press("ArrowLeft")
    page.wait_for_url("**/rollouts/?step=2")
    assert "Step 2" in page.inner_text(".step-summary")
    open_row(page, "t-0-1")
    assert "Sample 1 of step 2." in page.inner_text("#t-0-1")
    page.keyboard.press("ArrowLeft")
    page.wait_for_url("**/rollouts/?step=1")
    page.keyboard.press("ArrowLeft")  # the first step: nowhere further back
    page.keyboard.press("ArrowRight")
    page.wait_for_url("**/rollouts/?step=2")
    assert "Step 2" in page.inner_text(".step-summary")


def test_filter_to_incorrect_rollouts(page, live_server, run):
    log_in(page, live_server, f"/runs/{run.pk}/rollouts/", wait_for="#rollouts")
    assert len(shown(page)) == 6
    page.select_option("select[name=correct]", "false")
    page.click("text=Apply")
    page.wait_for_url("**correct=false**")
    assert shown(page) == ["t-0-1", "t-0-2", "t-1-1", "t-1-2"]
    assert page.locator(".trajectory .badge.bad", has_text="incorrect").count() == 4
    # The filter stays on while stepping.
    page.keyboard.press("ArrowLeft")
    page.wait_for_url("**step=2**")
    assert "correct=false" in page.url
    assert shown(page) == ["t-0-1", "t-0-2", "t-1-1", "t-1-2"]


def test_a_deep_link_scrolls_to_and_highlights_its_trajectory(page, live_server, run):
    # Enough groups that the linked one is far below the fold.
    report(run.pk, run.test_token, [trajectory(4, p, i, correct=i == 0) for p in range(4) for i in range(3)])
    log_in(page, live_server, f"/runs/{run.pk}/rollouts/?step=4&prompt=3&sample=2", wait_for="#rollouts")
    target = page.locator(".trajectory.is-target")
    assert target.count() == 1
    assert target.get_attribute("id") == "t-3-2"
    assert target.get_attribute("open") is not None  # opened at its trajectory
    assert page.evaluate("document.getElementById('t-3-2').getBoundingClientRect().top") < 800
    assert page.evaluate("window.scrollY") > 300

    # Every trajectory has a link to itself; following it highlights that one.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#t-1-1 a.copy-link")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == f"{live_server.url}/runs/{run.pk}/rollouts/?step=4&prompt=1&sample=1#t-1-1"
    page.goto(copied)
    assert page.locator(".trajectory.is-target").get_attribute("id") == "t-1-1"


def test_search_across_steps_links_to_the_step(page, live_server, run):
    report(run.pk, run.test_token, [trajectory(2, 1, 2, correct=False, final_answer="answer 98765")])
    log_in(page, live_server, f"/runs/{run.pk}/rollouts/", wait_for="#rollouts")
    page.fill("input[name=q]", r"answer \d{5}")
    page.check("input[name=regex]")
    page.click("text=Apply")
    page.wait_for_selector("table.search-results")
    assert page.locator("table.search-results tbody tr").count() == 1
    assert page.inner_text("table.search-results mark") == "answer 98765"
    screenshot(page, "rollouts_search.png")
    page.click("table.search-results a")
    page.wait_for_url("**step=2&prompt=1&sample=2**")
    assert page.locator(".trajectory.is-target").get_attribute("id") == "t-1-2"

    page.goto(f"{live_server.url}/runs/{run.pk}/rollouts/?q=%28broken&regex=1")
    assert "invalid regular expression" in page.inner_text("[role=alert]")


def test_model_output_renders_as_text_and_runs_nothing(page, live_server, run):
    evil = trajectory(5, 0, 0, correct=False, final_answer=XSS, ground_truth=XSS)
    evil["prompt"] = XSS
    evil["turns"] = [
        {"kind": "model", "text": f"Reasoning {XSS}\n```python\nprint('{XSS}')\n```"},
        {"kind": "tool", "text": f"output {XSS}", "call": f"other = '{XSS}'", "status": "error", "duration_ms": 3.0},
    ]
    report(run.pk, run.test_token, [evil])
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    log_in(page, live_server, f"/runs/{run.pk}/rollouts/?step=5", wait_for="#rollouts")
    page.click("details.prompt summary")
    open_row(page, "t-0-0")
    text = page.inner_text("#rollouts")
    assert f"Reasoning {XSS}" in text
    assert f"output {XSS}" in text
    assert page.inner_text("#t-0-0 .final-answer") == XSS
    assert page.inner_text("#t-0-0 .ground-truth") == XSS
    assert XSS in page.inner_text("#t-0-0 code.highlighted >> nth=0")
    assert page.locator("#rollouts img").count() == 0
    assert page.locator("#rollouts script").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []


def test_without_javascript_a_step_is_readable_and_the_links_step(browser, live_server, run):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(page, live_server, f"/runs/{run.pk}/rollouts/?step=2", wait_for="#rollouts")
        assert "Step 2" in page.inner_text(".step-summary")
        page.click("a[rel=next]")
        page.wait_for_url("**step=3")
        open_row(page, "t-1-2")  # a <details>: it opens without JavaScript
        assert "Sample 2 of step 3." in page.inner_text("#t-1-2")
    finally:
        context.close()


def test_a_newer_step_is_offered_while_the_run_is_live(page, live_server, run):
    log_in(page, live_server, f"/runs/{run.pk}/rollouts/", wait_for="#rollouts")
    assert page.locator("#live-notice").is_hidden()
    # The live server speaks no websockets: the page learns of the new step by polling.
    report(run.pk, run.test_token, [trajectory(4, 0, i, correct=True) for i in range(2)])
    page.wait_for_selector("#live-notice a", timeout=15_000)
    assert page.inner_text("#live-notice a") == "show step 4"
    page.keyboard.press("ArrowRight")
    page.wait_for_url("**step=4")
    assert "Step 4" in page.inner_text(".step-summary")
