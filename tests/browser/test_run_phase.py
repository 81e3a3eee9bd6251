"""The run page shows the trainer's phase (loading, SFT cold start) until its first metric, live."""

import time

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from tests.browser._run_socket import RunSocket
from tests.browser.test_run_page import screenshots
from trainer.report.client import Reporter
from trainer.sft.phase import report_progress
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for_phase(run: Run, name: str) -> None:
    deadline = time.monotonic() + 10
    while (Run.objects.get(pk=run.pk).phase or {}).get("name") != name:
        assert time.monotonic() < deadline, f"phase {name} not stored"
        time.sleep(0.05)


def test_the_phase_bar_follows_the_trainer_from_loading_to_its_first_metric(page, live_server, researcher, tmp_path):
    run, token = in_thread(run_create, user=researcher, name="quickstart", config={}, managed=False)
    # The real trainer's reporter, posting to the real ingest endpoint; the page polls (no websocket here).
    url = f"{live_server.url}/api/v1/runs/{run.pk}/ingest"
    with Reporter(tmp_path, report_url=url, run_token=token, flush_interval_s=0.1) as reporter:
        reporter.set_status("running")
        reporter.set_phase("loading", 0, 1, detail="tirlab/tiny-math")
        wait_for_phase(run, "loading")
        log_in(page, live_server, f"/runs/{run.pk}/", wait_for="#run-phase:not([hidden])")
        assert page.inner_text("#phase-label") == "Loading the model…"
        assert page.inner_text("#phase-detail") == "tirlab/tiny-math"
        assert page.get_attribute("#phase-progress", "value") is None  # indeterminate

        reporter.set_phase("sft", 340, 1500, eta_s=118.0, detail="loss 0.31")
        page.wait_for_function("document.getElementById('phase-text').textContent.includes('340')", timeout=10_000)
        assert page.inner_text("#phase-label") == "Cold start (SFT)"
        assert page.inner_text("#phase-text") == "· step 340 of 1,500 · about 2 min left"
        assert page.eval_on_selector("#phase-progress", "bar => [bar.value, bar.max]") == [340, 1500]
        assert_readable_in_both_themes(page, "#phase-label", "#phase-text", "#phase-detail")
        screenshot(page, "run_page_cold_start.png")
        toggle_theme(page)
        screenshot(page, "run_page_cold_start_dark.png")

        reporter.set_phase("rl", 0, 20)
        reporter.log_metrics(0, {"accuracy": 0.25})
        reporter.set_phase("rl", 1, 20, eta_s=38.0)
        # The first metric: the bar gives way to the charts, and the step count sits beside "Last step".
        page.wait_for_function(
            "document.getElementById('run-step-progress').textContent.includes('1 of 20')", timeout=10_000
        )
        assert page.is_hidden("#run-phase")
        assert page.inner_text("#run-last-step") == "0"
        assert page.inner_text("#run-step-progress") == "· 1 of 20 steps done · about 40 s left"


def _summary(pk: int) -> dict:
    return Run.objects.get(pk=pk).summary


def test_the_cold_starts_loss_is_a_chart_while_it_trains(page, live_server, researcher, tmp_path):
    run, token = in_thread(run_create, user=researcher, name="retool-mini", config={}, managed=False)
    url = f"{live_server.url}/api/v1/runs/{run.pk}/ingest"
    losses = [2.0 / (1 + 0.1 * step) for step in range(1, 61)]
    with Reporter(tmp_path, report_url=url, run_token=token, flush_interval_s=0.1) as reporter:
        reporter.set_status("running")
        # What the SFT phase reports after each of its optimizer steps (trainer.sft.phase), here 30 of 60.
        for step, loss in enumerate(losses[:30], start=1):
            report_progress(reporter, step, 60, loss, elapsed_s=0.5 * step)
        # The page lists the latest values the server holds when it is served: open it once the reporter's batches
        # are in (on a loaded machine they came after it, and the list never appeared).
        deadline = time.monotonic() + 30
        while not in_thread(_summary, pk=run.pk) and time.monotonic() < deadline:
            time.sleep(0.1)
        log_in(page, live_server, f"/runs/{run.pk}/", wait_for="#run-phase:not([hidden])")
        chart = ".chart[data-key='sft/loss']"
        page.wait_for_function(f'document.querySelector("{chart}") && document.querySelector("{chart}").data')
        assert page.inner_text("#phase-label") == "Cold start (SFT)"
        assert page.evaluate(f'document.querySelector("{chart}").layout.xaxis.title.text') == "SFT step"
        # Its steps are the SFT's: no RL step yet.
        assert page.inner_text("#run-last-step") == "—"
        assert page.inner_text(".summary-values summary") == "Latest values (1 metrics)"

        # The chart grows as the cold start goes on (here through the polling fallback).
        for step, loss in enumerate(losses[30:], start=31):
            report_progress(reporter, step, 60, loss, elapsed_s=0.5 * step)
        page.wait_for_function(f'document.querySelector("{chart}").data[2].customdata.length === 60', timeout=15_000)
        points = page.evaluate(f'document.querySelector("{chart}").data[2].customdata')
        assert [p[0] for p in points] == list(range(1, 61))
        assert [p[1] for p in points] == pytest.approx(losses)
        screenshots(page, "run_page_sft_loss")

        # RL starts at its step 0: the last step is RL's, and the loss chart stays, by SFT step.
        reporter.set_phase("rl", 0, 20)
        reporter.log_metrics(0, {"accuracy": 0.25})
        page.wait_for_function("document.getElementById('run-last-step').textContent === '0'", timeout=15_000)
        assert page.evaluate(f'document.querySelector("{chart}").data[2].customdata.length') == 60
    assert Run.objects.get(pk=run.pk).last_step == 0


def test_the_cold_starts_loss_is_drawn_live_from_its_websocket(page, live_server, researcher, tmp_path):
    run, token = in_thread(run_create, user=researcher, name="retool-mini", config={}, managed=False)
    url = f"{live_server.url}/api/v1/runs/{run.pk}/ingest"
    socket = RunSocket(page, live_server, run.pk)
    try:
        with Reporter(tmp_path, report_url=url, run_token=token, flush_interval_s=0.1) as reporter:
            reporter.set_status("running")
            report_progress(reporter, 1, 40, 2.0, elapsed_s=0.5)
            wait_for_phase(run, "sft")
            log_in(page, live_server, f"/runs/{run.pk}/", wait_for="#run-phase:not([hidden])")
            page.wait_for_function("window.tirlabRunPage.allLoadedMs !== undefined")
            # The snapshot makes the page re-read the loss; its answer (step 1) is held until the
            # socket has brought steps 2-40, as a loaded machine may answer it (CI lost this race).
            held = []
            page.route(f"**/api/v1/runs/{run.pk}/metrics/?*", lambda route: held.append((route, route.fetch())))
            socket.connect()
            page.wait_for_function("document.getElementById('live-state').textContent === 'live'")
            deadline = time.monotonic() + 10
            while not held:
                assert time.monotonic() < deadline, "the snapshot did not re-read the loss"
                page.wait_for_timeout(50)
            for step in range(2, 41):
                report_progress(reporter, step, 40, 2.0 / step, elapsed_s=0.5 * step)
            pushed: set[int] = set()
            while len(pushed) < 39:
                event = socket.forward_until("metrics")
                pushed.update(row["step"] for row in event["data"]["steps"])
            chart = ".chart[data-key='sft/loss']"
            forty = (
                f'document.querySelector("{chart}") && document.querySelector("{chart}").data'
                f' && document.querySelector("{chart}").data[2].customdata.length === 40'
            )
            page.wait_for_function(forty)
            drawn = page.evaluate("window.tirlabRunPage.chartsDrawn")
            route, answer = held[0]
            assert "sft%2Floss" in route.request.url
            route.fulfill(response=answer)
            page.wait_for_function(f"window.tirlabRunPage.chartsDrawn > {drawn}")
            assert page.evaluate(forty)
            points = page.evaluate(f'document.querySelector("{chart}").data[2]')
            assert points["x"] == list(range(1, 41))  # by SFT step
            assert page.inner_text("#run-last-step") == "—" and page.is_visible("#run-phase")
            assert page.inner_text("#live-state") == "live"
    finally:
        socket.close()


def test_a_finished_run_shows_no_phase(page, live_server, researcher):
    run, token = in_thread(run_create, user=researcher, name="stopped in its cold start", config={}, managed=False)
    phase = {"name": "sft", "done": 200, "total": 1500, "eta_s": 300.0}
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"phase": phase, "status": {"status": "cancelled"}})
    log_in(page, live_server, f"/runs/{run.pk}/", wait_for="#run-status")
    page.wait_for_function("window.tirlabRunPage !== undefined")
    assert page.is_hidden("#run-phase") and page.inner_text("#run-step-progress") == ""
