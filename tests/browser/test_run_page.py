"""The run page in Chromium: charts from stored metrics, metrics logged once as values, live updates
by polling, cancel, fork."""

import re
from urllib.parse import quote, urlsplit

import pytest

from tests.browser._helpers import (
    assert_readable,
    assert_readable_in_both_themes,
    in_thread,
    screenshot,
    toggle_theme,
)
from tests.browser._run_socket import RunSocket
from trainer.contract import HEADLINE_METRICS
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db(transaction=True)

T0 = 1_780_000_000.0


def step_values(step: int) -> dict[str, float]:
    return {
        "accuracy": step / 100,
        "tool_call_ratio": 0.5,
        "code_in_correct": step / 200,
        "response_length/mean": 300.0 + step,
        "tool_productivity": 0.25,
        "actor/kl": 0.001 * step,
        "reward/mean": -1 + step / 50,
    }


def reporting_run(user, steps: int) -> tuple[Run, str]:
    """An unmanaged run whose trainer (this test) reported `steps` steps through the real ingest."""
    run, token = run_create(user=user, name="ToRL live", config={}, managed=False)
    run_transition(run=run, status=RunStatus.STARTING)
    metrics = [{"step": step, "time": T0 + 30 * step, "values": step_values(step)} for step in range(steps)]
    ingest_batch(run_id=run.pk, token=token, payload={"status": {"status": "running"}, "metrics": metrics})
    ingest_batch(run_id=run.pk, token=token, payload={"logs": [{"seq": 1, "time": T0, "message": "<b>warming up</b>"}]})
    return run, token


def open_logged_in(page, live_server, path: str) -> None:
    """Log in as ada through the login form, landing on `path`."""
    page.goto(f"{live_server.url}/accounts/login/?next={quote(path)}")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "tool-use-2026")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: urlsplit(url).path == urlsplit(path).path)


def screenshots(page, stem: str) -> None:
    """The page in both themes at 1,280 × 800 and 1,920 × 1,080, into docs/ under `make screenshot`
    (STEM.png, STEM_dark.png, STEM-1920.png, STEM-1920_dark.png); left at 1,280 × 800 in its theme."""
    for width, height, suffix in ((1280, 800, ""), (1920, 1080, "-1920")):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(300)  # the charts redraw at their new width
        screenshot(page, f"{stem}{suffix}.png")
        toggle_theme(page)
        page.wait_for_timeout(300)  # and in the theme's colours
        screenshot(page, f"{stem}{suffix}_dark.png")
        toggle_theme(page)
    page.set_viewport_size({"width": 1280, "height": 800})


def chart_steps(page, key: str) -> list:
    return page.evaluate(
        "key => { const div = document.querySelector(`.chart[data-key='${key}']`);"
        " return div && div.data ? div.data[2].customdata.map(c => c[0]) : null; }",
        key,
    )


def test_charts_render_from_stored_metrics_and_link_to_rollouts(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=40)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    headline = page.eval_on_selector_all("#headline-charts .chart", "divs => divs.map(d => d.dataset.key)")
    assert headline == list(HEADLINE_METRICS)
    assert chart_steps(page, "accuracy") == list(range(40))
    values = page.evaluate("document.querySelector(\".chart[data-key='accuracy']\").data[2].customdata[39][1]")
    assert values == pytest.approx(0.39)
    # Other metrics in sections named by their prefix, drawn once scrolled to.
    assert page.inner_text("#section-charts").count("actor") >= 1
    page.locator(".chart[data-key='reward/mean']").scroll_into_view_if_needed()
    page.wait_for_function("document.querySelector(\".chart[data-key='reward/mean']\").data !== undefined")
    assert chart_steps(page, "reward/mean") == list(range(40))
    # The trainer's log line is text, not markup.
    assert "<b>warming up</b>" in page.inner_text("#log-lines")
    page.wait_for_function("document.getElementById('live-state').textContent.includes('polling')")
    page.locator("#charts").scroll_into_view_if_needed()
    screenshots(page, "run_page")

    # Hover shows the exact value; a click opens that step's rollouts.
    page.locator(".chart[data-key='accuracy']").scroll_into_view_if_needed()
    point = page.evaluate(
        """() => { const gd = document.querySelector(".chart[data-key='accuracy']");
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        return [xa._offset + xa.l2p(20), ya._offset + ya.l2p(0.2)]; }"""
    )
    svg = page.locator(".chart[data-key='accuracy'] .main-svg").first.bounding_box()
    page.mouse.move(svg["x"] + point[0], svg["y"] + point[1])
    page.wait_for_function("document.querySelector(\".chart[data-key='accuracy'] .hoverlayer\").textContent !== ''")
    hover = page.locator(".chart[data-key='accuracy'] .hoverlayer").text_content()
    assert "step 20" in hover and "value 0.2" in hover
    page.mouse.click(svg["x"] + point[0], svg["y"] + point[1])
    page.wait_for_url(f"**/runs/{run.pk}/rollouts/?step=20")


def test_a_new_step_appears_through_the_polling_fallback(page, live_server, researcher):
    run, token = in_thread(reporting_run, user=researcher, steps=10)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    assert chart_steps(page, "accuracy") == list(range(10))
    batch = {
        "metrics": [{"step": 10, "time": T0 + 300, "values": {**step_values(10), "val/accuracy": 0.75}}],
        "logs": [{"seq": 2, "time": T0 + 300, "message": "step 10 done"}],
    }
    in_thread(ingest_batch, run_id=run.pk, token=token, payload=batch)
    # No websocket under the test server: the 3 s poll must bring the step, the new metric and the log line.
    page.wait_for_function(
        "document.querySelector(\".chart[data-key='accuracy']\").data[2].customdata.length === 11", timeout=12_000
    )
    assert chart_steps(page, "accuracy")[-1] == 10
    # The new metric has one point so far: a value above the charts, until its second one.
    page.wait_for_selector("#metric-singles .metric-single[data-key='val/accuracy']", timeout=12_000)
    page.wait_for_function("document.getElementById('log-lines').textContent.includes('step 10 done')")
    assert page.inner_text("#run-last-step") == "10"
    batch = {"metrics": [{"step": 11, "time": T0 + 330, "values": {**step_values(11), "val/accuracy": 0.8}}]}
    in_thread(ingest_batch, run_id=run.pk, token=token, payload=batch)
    page.locator(".chart[data-key='val/accuracy']").scroll_into_view_if_needed(timeout=12_000)
    page.wait_for_function("document.querySelector(\".chart[data-key='val/accuracy']\").data")
    assert chart_steps(page, "val/accuracy") == [10, 11]
    assert page.locator("#metric-singles").is_hidden()
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"status": {"status": "succeeded"}})
    page.wait_for_function("document.getElementById('run-status').textContent === 'succeeded'", timeout=12_000)


def singles_shown(page) -> list[tuple[str, str, str]]:
    """The summary row of metrics logged once, as the user reads it: (name, value, step)."""
    shown = page.eval_on_selector_all(
        "#metric-singles .metric-single",
        "items => items.map(i => [i.querySelector('dt').innerText, i.querySelector('.single-value').innerText,"
        " i.querySelector('.single-step').innerText])",
    )
    return [tuple(item) for item in shown]


def test_a_metric_logged_once_is_a_value_above_the_charts_until_it_is_logged_again(page, live_server, researcher):
    run, token = in_thread(reporting_run, user=researcher, steps=10)
    # What a trainer logs once at its end (the HF Trainer's train_runtime, total_flos), at its last step.
    final = {"train_runtime": 123.456789, "total_flos": 1.2345e15, "train_loss": 0.5}
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"metrics": [{"step": 9, "values": final}]})
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.allLoadedMs")
    assert page.locator("#metric-singles").is_visible()
    assert page.inner_text("#metric-singles h3") == "Logged once"
    assert singles_shown(page) == [
        ("total_flos", "1.235e15", "step 9"),
        ("train_loss", "0.5", "step 9"),
        ("train_runtime", "123.457", "step 9"),
    ]
    charted = page.eval_on_selector_all(".chart[data-key]", "divs => divs.map(d => d.dataset.key)")
    assert not set(final) & set(charted) and "accuracy" in charted
    assert page.get_attribute("#metric-singles .metric-single[data-key='train_runtime'] .single-value", "title") == (
        "123.456789"
    )
    item = "#metric-singles .metric-single[data-key='total_flos']"
    assert_readable_in_both_themes(
        page, "#metric-singles h3", f"{item} dt", f"{item} .single-value", f"{item} .single-step"
    )

    # A new metric pushed once by the websocket joins the row at once.
    row = {"step": 10, "time": T0 + 300, "values": {**step_values(10), "eval/reward": 0.25}}
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"metrics": [row]})
    page.evaluate("row => window.tirlabRunPage.handleEvent({event: 'metrics', data: {steps: [row]}})", row)
    assert ("eval/reward", "0.25", "step 10") in singles_shown(page)
    assert page.locator(".chart[data-key='eval/reward']").count() == 0

    # Logged a second time, a metric is a chart again (here through the polling fallback).
    again = {"step": 11, "time": T0 + 330, "values": {**step_values(11), "total_flos": 2.5e15}}
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"metrics": [again]})
    page.locator(".chart[data-key='total_flos']").scroll_into_view_if_needed(timeout=12_000)
    page.wait_for_function("document.querySelector(\".chart[data-key='total_flos']\").data")
    assert chart_steps(page, "total_flos") == [9, 11]
    assert [name for name, _, _ in singles_shown(page)] == ["eval/reward", "train_loss", "train_runtime"]


def test_cancel_asks_first_and_says_cancelling_until_the_run_has_stopped(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=3)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    page.evaluate("window.notReloaded = true")
    assert page.inner_text("#run-status") == "running"
    # "Cancel run…" asks; "No" leaves the run as it was.
    assert page.is_hidden("#cancel-question")
    page.click("#cancel-open")
    assert page.is_visible("#cancel-question") and "Cancel this run?" in page.inner_text("#cancel-question")
    assert_readable_in_both_themes(page, "#cancel-open", "#cancel-question", "#cancel-yes", "#cancel-no")
    screenshot(page, "run_page_cancel_confirm.png")
    toggle_theme(page)
    screenshot(page, "run_page_cancel_confirm_dark.png")
    toggle_theme(page)
    page.click("#cancel-no")
    assert page.is_hidden("#cancel-question")
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING

    # "Yes": the page says "cancelling…" at once, while the request is under way (held here for a
    # second, as a loaded server may take), then shows the status the server answers, in place.
    held = []
    page.route(f"**/runs/{run.pk}/cancel", lambda route: held.append(route))
    page.click("#cancel-open")
    page.click("#cancel-yes")
    page.wait_for_function("document.getElementById('run-status').textContent === 'cancelling…'", timeout=2_000)
    assert page.is_disabled("#cancel-yes") and page.inner_text("#cancel-yes") == "Cancelling…"
    assert page.is_hidden("#cancel-no")
    assert_readable(page, "#run-status", "#cancel-progress")
    screenshot(page, "run_page_cancelling.png")
    assert held, "the cancel was not posted"
    page.wait_for_timeout(1_000)
    held[0].continue_()
    page.wait_for_function("document.getElementById('run-status').textContent === 'cancelled'", timeout=5_000)
    assert page.evaluate("window.notReloaded") is True  # no reload: the charts stay as they were
    assert page.locator("#cancel-confirm").count() == 0
    assert page.inner_text("#run-note") == f"Run #{run.pk} cancelled."
    assert page.inner_text("#run-finished") != "—"
    assert re.fullmatch(r"\d+ min \d\d s", page.inner_text("#run-duration"))
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED


def test_cancel_asks_first_without_javascript_too(browser, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=3)
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        open_logged_in(page, live_server, f"/runs/{run.pk}/")
        assert page.is_hidden("#cancel-question")
        page.click("#cancel-open")
        assert page.is_visible("#cancel-question")
        # "No" reloads the page, the question closed and the run untouched.
        page.click("#cancel-no")
        page.wait_for_load_state()
        assert page.is_hidden("#cancel-question")
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
        page.click("#cancel-open")
        page.click("#cancel-yes")
        page.wait_for_selector("text=cancelled.")
        assert page.inner_text("#run-status") == "cancelled"
        assert page.locator("#cancel-confirm").count() == 0
        assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED
    finally:
        context.close()


def test_fork_with_an_invalid_override_shows_the_field_error(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=3)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.fill("textarea[name=overrides]", '{"rollout": {"group_size": -4}}')
    page.click("#fork button[type=submit]")
    errors = page.inner_text("#fork-errors")
    assert "config.rollout.group_size" in errors
    assert page.input_value("textarea[name=overrides]") == '{"rollout": {"group_size": -4}}'
    screenshot(page, "run_page_fork_error.png")
    assert Run.objects.count() == 1
    page.fill("textarea[name=overrides]", '{"rollout": {"group_size": 4}}')
    page.fill("input[name=name]", "ToRL live, groups of 4")
    page.click("#fork button[type=submit]")
    page.wait_for_selector("text=forked from")
    child = Run.objects.get(name="ToRL live, groups of 4")
    assert page.url.endswith(f"/runs/{child.pk}/")
    assert child.config["rollout"]["group_size"] == 4


def test_websocket_metric_events_append_and_redraw_at_most_four_times_a_second(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=10)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.allLoadedMs")
    before, started_ms = page.evaluate("[window.tirlabRunPage.chartsDrawn, performance.now()]")
    # 200 steps as a fast trainer's websocket events would bring them, 5 ms apart (1 s in all, longer
    # when the machine is loaded).
    page.evaluate(
        """async ([t0, values]) => {
        for (let step = 10; step < 210; step++) {
            const row = {step: step, time: t0 + 30 * step, values: Object.assign({}, values, {accuracy: step / 1000})};
            window.tirlabRunPage.handleEvent({event: "metrics", run_id: 1, data: {steps: [row]}});
            await new Promise(resolve => setTimeout(resolve, 5));
        }
        }""",
        [T0, step_values(0)],
    )
    page.wait_for_function("document.querySelector(\".chart[data-key='accuracy']\").data[2].customdata.length === 210")
    assert chart_steps(page, "accuracy") == list(range(210))
    assert page.inner_text("#run-last-step") == "209"
    after, now_ms = page.evaluate("[window.tirlabRunPage.chartsDrawn, performance.now()]")
    charts = page.evaluate("Object.keys(document.querySelectorAll('.chart[data-key]')).length")
    # Every chart on screen redraws at most once per 250 ms batch, over the time the events took as
    # measured (one batch more for a draw of the page's load still under way, one for the last one).
    batches = int((now_ms - started_ms) // 250) + 2
    assert 0 < after - before <= batches * charts


def test_smoothing_and_relative_time_controls(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=40)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    assert page.is_visible("#smooth")
    page.locator("#smooth").fill("0.9")
    page.wait_for_function("location.search.includes('smooth=0.9')")
    page.wait_for_function(
        "(() => { const t = document.querySelector(\".chart[data-key='accuracy']\").data[2];"
        " return t.y[39] < t.customdata[39][1] - 0.01; })()"  # a rising line: its EMA lags below
    )
    page.select_option("#x-axis", "time")
    page.wait_for_function(
        "document.querySelector(\".chart[data-key='accuracy']\").layout.xaxis.title.text.includes('since first step')"
    )
    # 40 steps 30 s apart: the last point sits at 19.5 minutes.
    x = page.evaluate("document.querySelector(\".chart[data-key='accuracy']\").data[2].x")
    assert x[0] == 0 and x[-1] == pytest.approx(19.5)
    page.reload()
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    assert page.input_value("#x-axis") == "time" and page.input_value("#smooth") == "0.9"


def test_the_log_opens_on_its_newest_lines(page, live_server, researcher):
    run, token = in_thread(reporting_run, user=researcher, steps=1)
    lines = [{"seq": 10 + i, "time": T0 + i, "message": f"line {i}"} for i in range(80)]
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"logs": lines})
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    log = page.locator("#log-lines")
    assert log.evaluate("l => l.scrollHeight > l.clientHeight")  # it does scroll
    assert log.evaluate("l => l.scrollTop + l.clientHeight >= l.scrollHeight - 4")


def test_a_run_that_finishes_while_watched_shows_how_long_it_ran(page, live_server, researcher):
    run, token = in_thread(run_create, user=researcher, name="watched", config={}, managed=False)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    assert page.inner_text("#run-duration") == "not started yet"
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"status": {"status": "succeeded"}})
    page.wait_for_function("document.getElementById('run-status').textContent === 'succeeded'", timeout=12_000)
    assert re.fullmatch(r"\d+ min \d\d s", page.inner_text("#run-duration"))
    assert page.inner_text("#run-started") != "—" and page.inner_text("#run-finished") != "—"


def shown_time(value) -> str:
    """A timing as the run page shows it (UTC, to the second)."""
    return value.strftime("%Y-%m-%d %H:%M:%S")


def test_duration_and_heartbeat_follow_the_run_over_its_websocket(page, live_server, researcher):
    run, token = in_thread(run_create, user=researcher, name="watched live", config={}, managed=False)
    in_thread(run_transition, run=run, status=RunStatus.STARTING)
    socket = RunSocket(page, live_server, run.pk)
    try:
        open_logged_in(page, live_server, f"/runs/{run.pk}/")
        socket.connect()
        page.wait_for_function("document.getElementById('live-state').textContent === 'live'")
        assert page.inner_text("#run-duration") == "not started yet"
        assert page.inner_text("#run-heartbeat") == "—"

        # The trainer's first report: the run is running, and Duration counts from its start, second by second.
        in_thread(ingest_batch, run_id=run.pk, token=token, payload={"status": {"status": "running"}})
        socket.forward_until("status")
        started = Run.objects.get(pk=run.pk).started_at
        assert page.inner_text("#run-started") == shown_time(started)
        assert re.fullmatch(r"0 min 0\d s", page.inner_text("#run-duration"))
        first = page.inner_text("#run-duration")
        page.wait_for_function(f"document.getElementById('run-duration').textContent !== {first!r}", timeout=3_000)
        assert page.inner_text("#live-state") == "live"  # all of it through the socket: no poll

        # Each later report (here a bare heartbeat, two seconds on) moves Heartbeat.
        page.wait_for_timeout(2_000)
        in_thread(ingest_batch, run_id=run.pk, token=token, payload={})
        socket.forward_until("heartbeat")
        beat = Run.objects.get(pk=run.pk).heartbeat_at
        assert beat > started and shown_time(beat) != shown_time(started)
        page.wait_for_function(
            f"document.getElementById('run-heartbeat').textContent === {shown_time(beat)!r}", timeout=2_000
        )
        screenshot(page, "run_page_live_timings.png")

        # Its end stops the count at the run's length.
        in_thread(ingest_batch, run_id=run.pk, token=token, payload={"status": {"status": "succeeded"}})
        socket.forward_until("status")
        ended = page.inner_text("#run-duration")
        page.wait_for_timeout(1_500)
        assert page.inner_text("#run-duration") == ended
    finally:
        socket.close()


def test_a_click_near_a_point_opens_its_rollouts(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=20)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    chart = ".chart[data-key='accuracy']"
    # The points are drawn: a line with markers, where the clicks land.
    assert page.evaluate(f'document.querySelector("{chart}").data[2].mode') == "lines+markers"
    assert page.locator(f"{chart} .scatterlayer .point").count() == 20
    point = page.evaluate(
        f"""() => {{ const gd = document.querySelector("{chart}");
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        return [xa._offset + xa.l2p(12), ya._offset + ya.l2p(0.12)]; }}"""
    )
    svg = page.locator(f"{chart} .main-svg").first.bounding_box()
    # Off the point by a few pixels across, and well above the line: still step 12.
    page.mouse.click(svg["x"] + point[0] + 4, svg["y"] + point[1] - 30)
    page.wait_for_url(f"**/runs/{run.pk}/rollouts/?step=12", timeout=5_000)


def test_a_poll_that_answers_an_older_step_does_not_move_the_page_back(page, live_server, researcher):
    run, _ = in_thread(reporting_run, user=researcher, steps=10)
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.allLoadedMs")
    # Steps the websocket brought, which the server's run (last_step 9) has not caught up with.
    page.evaluate(
        """([t0, values]) => { for (let step = 10; step < 20; step++) {
            const row = {step: step, time: t0 + step, values: values};
            window.tirlabRunPage.handleEvent({event: "metrics", run_id: 1, data: {steps: [row]}});
        } }""",
        [T0, step_values(0)],
    )
    polls = page.evaluate("window.tirlabRunPage.polls")
    page.wait_for_function(f"window.tirlabRunPage.polls > {polls}", timeout=15_000)
    assert page.inner_text("#run-last-step") == "19"
    assert chart_steps(page, "accuracy") == list(range(20))


def test_a_finished_run_is_not_called_live(page, live_server, researcher):
    run, token = in_thread(reporting_run, user=researcher, steps=3)
    in_thread(ingest_batch, run_id=run.pk, token=token, payload={"status": {"status": "succeeded"}})
    open_logged_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.polls > 0", timeout=15_000)
    assert page.inner_text("#live-state") == ""
