"""Evaluating a checkpoint from the run page in Chromium: choose one of the run's checkpoints, sample k = 4 at
temperature 0.8, and land on the evaluation run's page, which says what it evaluates."""

import os
from pathlib import Path

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, toggle_theme
from webapp.core.tokens import hash_secret
from webapp.runs.evaluations import run_evaluate
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db(transaction=True)

T0 = 1_780_000_000.0
CONFIG = {"data": {"val_dataset": "arithmetic:hard"}, "schedule": {"max_steps": 8, "checkpoint_every": 3}}


def trained_run(user) -> Run:
    """A finished run whose trainer (this test) reported 8 steps and checkpoints after steps 3 and 6, with an
    evaluation of the model it starts from done already."""
    run, token = run_create(user=user, name="ToRL mini", config=CONFIG, managed=False)
    run_transition(run=run, status=RunStatus.STARTING)
    metrics = [
        {"step": step, "time": T0 + 30 * step, "values": {"accuracy": 0.2 + step / 20, "tool_call_ratio": 0.5}}
        for step in range(8)
    ]
    checkpoints = [{"step": 3, "path": "/ckpt/torl-mini/step-3"}, {"step": 6, "path": "/ckpt/torl-mini/step-6"}]
    payload = {"metrics": metrics, "checkpoints": checkpoints, "status": {"status": "succeeded"}}
    ingest_batch(run_id=run.pk, token=token, payload={"status": {"status": "running"}})
    ingest_batch(run_id=run.pk, token=token, payload=payload)
    base = run_evaluate(run=run, user=user, step=None)
    # The launcher's part (a token for its trainer), then `trainer evaluate`'s report.
    Run.objects.filter(pk=base.pk).update(token_hash=hash_secret("eval-token"))
    run_transition(run=base, status=RunStatus.STARTING)
    results = {"step": 0, "time": T0, "values": {"bench-mean/accuracy": 0.1875, "val/accuracy": 0.1875}}
    ingest_batch(run_id=base.pk, token="eval-token", payload={"metrics": [results], "status": {"status": "succeeded"}})
    return run


def screenshot_down_to(page, name: str, selector: str) -> None:
    """The page from its top to the end of `selector`, into $TIRLAB_SCREENSHOT_DIR when it is set (make
    screenshot): the run page's config and log below the form are not what the picture is of."""
    shots = os.environ.get("TIRLAB_SCREENSHOT_DIR")
    if shots:
        box = page.locator(selector).bounding_box()
        bottom = box["y"] + box["height"] + page.evaluate("window.scrollY") + 16
        Path(shots).mkdir(parents=True, exist_ok=True)
        clip = {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": bottom}
        page.screenshot(path=str(Path(shots) / name), full_page=True, clip=clip)


def test_a_checkpoint_is_evaluated_from_the_run_page(page, live_server, researcher):
    run = in_thread(trained_run, user=researcher)
    log_in(page, live_server, f"/runs/{run.pk}/", wait_for="#evaluate-form")
    assert page.is_checked("#eval-step-6")  # the latest checkpoint first
    assert page.is_checked("input[name=datasets][value='arithmetic:hard']")
    assert "base model" in page.inner_text("#evaluations") and "0.188" in page.inner_text("#evaluations")

    page.check("#eval-step-3")
    page.check("#eval-sampled")
    page.fill("#eval-samples", "4")
    page.fill("#eval-temperature", "0.8")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.allLoadedMs")
    assert_readable_in_both_themes(page, "#evaluate-title", "label[for=eval-step-3]", "#evaluate-submit")
    screenshot_down_to(page, "run_page_evaluate.png", "#evaluate")
    toggle_theme(page)
    page.wait_for_timeout(300)  # the charts redraw in the theme's colours
    screenshot_down_to(page, "run_page_evaluate_dark.png", "#evaluate")
    toggle_theme(page)

    page.click("#evaluate-submit")
    page.wait_for_url(lambda url: "/runs/" in url and not url.endswith(f"/runs/{run.pk}/"))
    evaluation = Run.objects.get(parent=run, evaluated_step=3)
    assert page.url.endswith(f"/runs/{evaluation.pk}/")
    facts = page.inner_text("#evaluation-of")
    assert f"#{run.pk} ToRL mini" in facts and "step 3" in facts and "/ckpt/torl-mini/step-3" in facts
    assert "arithmetic:hard" in facts and "greedy, and 4 samples a prompt at temperature 0.8" in facts
    assert page.inner_text("#run-status") == "queued" and "in the launch queue" in page.inner_text("#queue-position")
    assert page.locator("#evaluate-form").count() == 0
