"""The results page in Chromium: a base model and two RL runs on three benchmarks, the row choice written into
the URL, Markdown copied to the clipboard, readable in both themes. The numbers and names are made up for the test,
so its pages are not saved as screenshots: docs/results.png shows real evaluation runs
(tests/e2e/test_run_lifecycle.py)."""

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread
from tests.browser.test_run_page import open_logged_in
from tests.webapp.results_data import evaluation, run_with_steps

pytestmark = pytest.mark.django_db(transaction=True)

# Step -> accuracy on each benchmark (AIME has 30 problems: 8/30 prints 26.7).
TORL = {100: (7 / 30, 5 / 30, 0.742), 200: (9 / 30, 6 / 30, 0.776), 300: (8 / 30, 6 / 30, 0.770)}
ZEROTIR = {100: (6 / 30, 4 / 30, 0.728), 200: (7 / 30, 4 / 30, 0.751), 300: (8 / 30, 5 / 30, 0.764)}


def validated(by_step: dict[int, tuple[float, float, float]]) -> dict[int, dict[str, float]]:
    """A training run's steps: its validation on the three benchmarks every 100 steps, training metrics between."""
    steps: dict[int, dict[str, float]] = {step: {"accuracy": 0.3 + step / 1000} for step in range(0, 300, 50)}
    for step, (aime24, aime25, math500) in by_step.items():
        steps[step] = {"accuracy": 0.6} | evaluation({"aime24": aime24, "aime25": aime25, "math500": math500})
    return steps


def three_runs(user) -> list[int]:
    base = run_with_steps(user, "base model", {0: evaluation({"aime24": 3 / 30, "aime25": 2 / 30, "math500": 0.552})})
    torl = run_with_steps(user, "run A", validated(TORL))
    zerotir = run_with_steps(user, "run B", validated(ZEROTIR))
    return [base.pk, torl.pk, zerotir.pk]


def table_rows(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#results-table tbody tr", "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))"
    )


def test_read_the_table_choose_best_steps_and_copy_markdown(page, live_server, researcher):
    ids = in_thread(three_runs, user=researcher)
    runs = ",".join(map(str, ids))
    open_logged_in(page, live_server, f"/results/?runs={runs}")
    assert table_rows(page) == [
        ["base model", "0", "10.0", "6.7", "55.2", "24.0"],
        ["run A", "300", "26.7", "20.0", "77.0", "41.2"],
        ["run B", "300", "26.7", "16.7", "76.4", "39.9"],
    ]
    assert page.locator(".results-step").is_hidden() and page.locator(".results-best-on").is_hidden()

    # "Best step" loads each run at its best step on the mean; the choice is in the URL.
    page.click("text=Best step")
    page.wait_for_url(lambda url: "at=best" in url)
    assert page.locator(".results-best-on").is_visible()
    assert table_rows(page) == [
        ["base model", "0", "10.0", "6.7", "55.2", "24.0"],
        ["run A · step 200", "200", "30.0", "20.0", "77.6", "42.5"],
        ["run B", "300", "26.7", "16.7", "76.4", "39.9"],
    ]
    assert page.eval_on_selector_all("#results-table td.best", "cells => cells.map(c => c.innerText)") == [
        "30.0",
        "20.0",
        "77.6",
        "42.5",
    ]
    assert "each run at its best step on the mean of its benchmarks" in page.inner_text("caption")

    readable = (
        "#results-table caption",
        "#results-table tbody tr:nth-child(2) th a",
        "#results-table tbody tr:nth-child(2) td:nth-child(3)",
        "#results-table tbody tr:nth-child(3) td.step",
        ".results-at label:has(input:checked)",
        "button[data-copy=export-latex]",
        "#export-latex",
    )
    assert_readable_in_both_themes(page, *readable)

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("button[data-copy=export-markdown]")
    page.wait_for_function("document.querySelector('#export-markdown-box .copy-state').textContent === 'Copied'")
    copied = page.evaluate("navigator.clipboard.readText()")
    # What was copied is the API's Markdown of the same table.
    api = f"/api/v1/results/?runs={runs}&at=best&format=markdown"
    assert copied == page.evaluate("url => fetch(url).then(response => response.text())", api)
    assert copied.splitlines()[3] == "| run A · step 200 | **30.0** | **20.0** | **77.6** | **42.5** |"
