"""The compare page in Chromium: two runs overlaid, smoothing, the state kept in the URL, the config diff."""

import os
from pathlib import Path

import pytest

from tests.browser._helpers import in_thread
from tests.browser.test_run_page import open_logged_in
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import RunStatus
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db(transaction=True)

T0 = 1_780_000_000.0


def run_with_metrics(user, name: str, group_size: int, slope: float):
    run, token = run_create(user=user, name=name, config={"rollout": {"group_size": group_size}}, managed=False)
    run_transition(run=run, status=RunStatus.STARTING)
    metrics = [
        {
            "step": step,
            "time": T0 + 20 * step,
            "values": {"accuracy": slope * step + (0.2 if step % 2 else 0.0), "tool_call_ratio": 0.5},
        }
        for step in range(30)
    ]
    ingest_batch(run_id=run.pk, token=token, payload={"metrics": metrics})
    return run


def chart_state(page, key: str) -> dict:
    return page.evaluate(
        """key => { const gd = document.querySelector(`#charts .chart[data-key='${key}']`);
        const lines = gd.data.filter(t => t.showlegend);
        return { names: lines.map(t => t.name), y: lines.map(t => t.y),
                 raw: lines.map(t => t.customdata.map(c => c[1])), bands: gd.data.filter(t => t.fill).length }; }""",
        key,
    )


def test_compare_two_runs_smooth_reload_and_diff(page, live_server, researcher, django_user_model):
    first = in_thread(run_with_metrics, user=researcher, name="C=1", group_size=16, slope=0.01)
    second = in_thread(run_with_metrics, user=researcher, name="C=3", group_size=8, slope=0.02)
    other = django_user_model.objects.create_user(username="bob", password="pw-bob-12345")
    foreign = in_thread(run_with_metrics, user=other, name="bob's run", group_size=4, slope=0.03)
    path = f"/compare/?runs={first.pk},{second.pk},{foreign.pk}&metrics=accuracy,tool_call_ratio&smooth=0&x=step"
    open_logged_in(page, live_server, path)
    assert f"Runs #{foreign.pk} are not visible to you or do not exist" in page.inner_text("main")
    page.wait_for_function("document.body.dataset.chartsRendered")
    assert page.eval_on_selector_all("#charts .chart", "divs => divs.map(d => d.dataset.key)") == [
        "accuracy",
        "tool_call_ratio",
    ]
    accuracy = chart_state(page, "accuracy")
    assert accuracy["names"] == [f"#{first.pk} C=1", f"#{second.pk} C=3"]
    assert accuracy["bands"] == 2
    assert accuracy["y"] == accuracy["raw"]  # no smoothing yet
    assert "bob's run" not in page.inner_text("main")

    # Smoothing applies at once and goes into the URL.
    page.locator("#smooth").fill("0.6")
    page.wait_for_function("location.search.includes('smooth=0.6')")
    page.wait_for_function(
        "(() => { const t = document.querySelector(\"#charts .chart[data-key='accuracy']\").data[2];"
        " return t.y[1] !== t.customdata[1][1]; })()"
    )
    page.select_option("#x-axis", "time")
    page.wait_for_function("location.search.includes('x=time')")
    page.check("#only-differences")
    page.wait_for_function("location.search.includes('only_differences=1')")

    # The diff table shows only the differing fields now.
    assert page.locator("#diff-table tr.differs").count() >= 1
    assert page.locator("#diff-table tr.same").first.is_hidden()
    assert page.locator("#diff-table tr", has_text="rollout.group_size").is_visible()
    assert page.locator("#diff-table tr", has_text="rollout.temperature").is_hidden()

    # A reload (or the URL shared) restores the whole view.
    url = page.url
    assert f"runs={first.pk},{second.pk}" in url
    page.reload()
    page.wait_for_function("document.body.dataset.chartsRendered")
    assert page.input_value("#smooth") == "0.6"
    assert page.input_value("#x-axis") == "time"
    assert page.is_checked("#only-differences")
    assert page.locator("#diff-table tr", has_text="rollout.temperature").is_hidden()
    state = chart_state(page, "accuracy")
    assert state["y"] != state["raw"]
    xaxis = page.evaluate("document.querySelector(\"#charts .chart[data-key='accuracy']\").layout.xaxis.title.text")
    assert "since first step" in xaxis
    shots = os.environ.get("TIRLAB_SCREENSHOT_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "compare.png"), full_page=True)

    # Unticking "only differences" shows every field again.
    page.uncheck("#only-differences")
    assert page.locator("#diff-table tr", has_text="rollout.temperature").is_visible()
    assert "only_differences" not in page.url


def test_a_pointer_near_a_point_shows_that_point(page, live_server, researcher):
    first = in_thread(run_with_metrics, user=researcher, name="C=1", group_size=16, slope=0.01)
    second = in_thread(run_with_metrics, user=researcher, name="C=3", group_size=8, slope=0.02)
    open_logged_in(page, live_server, f"/compare/?runs={first.pk},{second.pk}&metrics=accuracy&smooth=0&x=step")
    page.wait_for_function("document.body.dataset.chartsRendered")
    chart = "#charts .chart[data-key='accuracy']"
    # Each run's line shows its points.
    modes = page.evaluate(f'document.querySelector("{chart}").data.filter(t => t.showlegend).map(t => t.mode)')
    assert modes == ["lines+markers", "lines+markers"]
    # 25 px below C=1's point at step 26 (0.26, a low one: its neighbours and C=3's points are all above).
    point = page.evaluate(
        f"""() => {{ const gd = document.querySelector("{chart}");
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        return [xa._offset + xa.l2p(26), ya._offset + ya.l2p(0.26)]; }}"""
    )
    svg = page.locator(f"{chart} .main-svg").first.bounding_box()
    page.mouse.move(svg["x"] + point[0], svg["y"] + point[1] + 25)
    page.wait_for_function(f"document.querySelector(\"{chart} .hoverlayer\").textContent !== ''", timeout=3_000)
    hover = page.locator(f"{chart} .hoverlayer").text_content()
    assert f"#{first.pk} C=1" in hover and "step 26" in hover and "value 0.26" in hover
