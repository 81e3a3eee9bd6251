"""A Search-R1 run's rollouts in a real browser: each trajectory's searches with their passages, the golden answers
marked where they appear, the answer against the golden answers and Search-R1's counts, readable in both themes."""

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from tests.webapp.test_rollout_search import CONFIG, DOCS, QUERY, outcome, passage, trajectory
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

FIRST_QUERY = "Pelagosa island history"
FIRST_DOCS = [
    {
        "document": {
            "id": "wiki-3310",
            "contents": '"Palagruža"\nPalagruža (Italian: Pelagosa) is a small Croatian archipelago in the '
            "middle of the Adriatic Sea, with a lighthouse built in 1875.",
        },
        "score": 7.81234,
    },
    {
        "document": {"id": "wiki-58", "contents": '"Adriatic Sea"\nThe Adriatic Sea separates the Italian peninsula.'},
        "score": 5.5,
    },
]


def report_run(user) -> int:
    run, token = run_create(user=user, name="search-r1", config=CONFIG, managed=False)
    two_searches = outcome(
        actions=3,
        valid_actions=3,
        valid_searches=2,
        searches=[
            {"query": FIRST_QUERY, "passages": [passage(item) for item in FIRST_DOCS]},
            {"query": QUERY, "passages": [passage(item) for item in DOCS]},
        ],
    )
    ran_out = outcome(end="max_turns", actions=4, valid_actions=1, valid_searches=1)
    ingest_batch(
        run_id=run.pk,
        token=token,
        payload={"trajectories": [trajectory(0, two_searches, "The Pellar."), trajectory(1, ran_out, "")]},
    )
    return run.pk


@pytest.fixture
def run_id(researcher) -> int:
    return in_thread(report_run, user=researcher)


def test_the_passages_and_the_golden_answers_marked(page, live_server, run_id):
    log_in(page, live_server, f"/runs/{run_id}/rollouts/", wait_for="#rollouts")
    assert page.locator(".expected-line .expected").inner_text() == "Pellar | the Pellar family"
    assert page.locator("#t-0-0 .answer-cell").inner_text() == "The Pellar."
    assert page.locator("#t-0-1 .answer-cell").inner_text() == "(turn limit)"
    for row in ("t-0-0", "t-0-1"):
        page.click(f"#{row} > summary")
        page.wait_for_selector(f"#{row}[open] .search-outcome", state="visible")

    answered = page.locator("#t-0-0")
    head = answered.locator(".search-head").inner_text()
    assert head.split()[:2] == ["match", "answered"]
    assert "3 actions · 3 valid · 2 searches" in head and "answer in 2/5 passages" in head
    assert answered.locator(".search-answer .final-answer").inner_text() == "The Pellar. → pellar"
    assert answered.locator(".golden-answer").all_inner_texts() == ["Pellar", "the Pellar family"]

    queries = answered.locator(".search-query")
    assert queries.count() == 2
    assert queries.nth(0).locator(".query").inner_text() == FIRST_QUERY
    assert queries.nth(1).locator("summary").inner_text() == f"search 2 {QUERY} 3 passages, 2 with the answer"
    passages = queries.nth(1).locator(".passage")
    assert passages.nth(0).locator(".passage-head").inner_text().split() == ["1", "Pelagosa", "wiki-1402", "12.346"]
    assert passages.nth(0).locator("mark.golden").all_inner_texts() == ["the Pellar family", "PELLAR"]
    assert passages.nth(1).locator("mark.golden").count() == 0
    assert passages.nth(1).locator(".passage-text").inner_text() == "No answer here <b>bold</b> & more."
    assert passages.nth(2).locator(".passage-title mark.golden").inner_text() == "Pellar"
    for mark in answered.locator("mark.golden").all():
        assert mark.is_visible()
    assert queries.nth(0).locator("mark.golden").count() == 0

    ran_out = page.locator("#t-0-1")
    head = ran_out.locator(".search-head").inner_text()
    assert head.split()[:3] == ["no", "match", "turn"] and "4 actions · 1 valid · 1 search" in head
    assert ran_out.locator(".search-answer .final-answer").inner_text() == "—"

    assert_readable_in_both_themes(
        page,
        "#t-0-0 mark.golden >> nth=0",
        "#t-0-0 .passage-title >> nth=0",
        "#t-0-0 .passage-text >> nth=0",
        "#t-0-0 .passage-score >> nth=0",
        "#t-0-0 .passage-id >> nth=0",
        "#t-0-0 .passage-rank >> nth=0",
        "#t-0-0 .search-query .query >> nth=0",
        "#t-0-0 .search-head .badge >> nth=0",
        "#t-0-0 .search-counts",
        "#t-0-0 .golden-answer >> nth=0",
        "#t-0-0 .search-answer .normalized",
        "#t-0-1 .search-head .badge >> nth=0",
    )
    page.click("#t-0-1 > summary")  # closed again: the screenshot shows the answered one
    page.locator("#t-0-0").scroll_into_view_if_needed()
    screenshot(page, "rollouts_search_r1.png")
    toggle_theme(page)
    screenshot(page, "rollouts_search_r1_dark.png")
    toggle_theme(page)
