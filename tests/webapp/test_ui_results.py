"""The results page (/results/) as the server renders it: the table, its exports, the links to it, and bad input
said in a message, never a failure."""

import re

import pytest

from tests.webapp.conftest import client_for
from tests.webapp.results_data import paper_runs
from webapp.runs.results import results_table
from webapp.runs.results_export import results_markdown

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(owner, experiment):
    return paper_runs(owner, experiment=experiment)


def page(user, query: dict) -> str:
    response = client_for(user).get("/results/", query)
    assert response.status_code == 200
    return response.content.decode()


def ids(runs) -> str:
    return ",".join(str(run.pk) for run in runs)


def cell_texts(html: str) -> list[list[str]]:
    body = html[html.index("<tbody>") : html.index("</tbody>")]
    return [re.findall(r"<t[dh][^>]*>(?:<a [^>]*>)?([^<]*)", row) for row in body.split("<tr")[1:]]


def test_the_page_shows_each_run_as_a_row_with_the_best_of_each_column_marked(owner, runs):
    html = page(owner, {"runs": ids(runs)})
    assert cell_texts(html) == [
        ["Qwen2.5-Math-1.5B", "0", "10.0", "6.7", "55.2", "24.0"],
        ["ToRL-1.5B · step 100", "100", "23.3", "16.7", "74.2", "38.1"],
        ["ToRL-1.5B · step 200", "200", "26.7", "13.3", "75.8", "38.6"],
    ]
    assert html.count('class="num best"') == 4
    assert "accuracy (%), each run at its last step" in html


def test_the_exports_are_on_the_page_to_select_and_copy(owner, runs):
    html = page(owner, {"runs": ids(runs)})
    markdown = results_markdown(results_table(runs=runs, metric="accuracy"))
    assert f'<pre id="export-markdown" class="export-text" tabindex="0">{markdown}</pre>' in html
    assert 'data-copy="export-latex"' in html and 'data-copy="export-csv"' in html


def test_an_experiment_lists_its_runs_without_a_row_apart(owner, runs, experiment):
    html = page(owner, {"experiment": experiment.pk})
    assert len(cell_texts(html)) == 3
    assert "1 run not in the table" in html and "reports no accuracy on a benchmark" in html


def test_best_mode_shows_each_rows_step(owner, runs):
    html = page(owner, {"runs": ids(runs), "at": "best", "best_on": "aime25"})
    assert [row[1] for row in cell_texts(html)] == ["0", "100", "200"]
    assert "each run at its best step on aime25" in html


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"metric": "f1"}, "No run here reports &#x27;f1&#x27; on a benchmark; they report accuracy."),
        ({"at": "step", "step": "ten"}, "The step must be a whole number, not &#x27;ten&#x27;."),
        ({"at": "step"}, "A row at a step needs the step (step=)."),
        ({"at": "best", "best_on": "gsm8k"}, "&#x27;gsm8k&#x27; is not a benchmark these runs report accuracy on"),
        ({"runs": "1,x"}, "A run id must be a whole number, not &#x27;x&#x27;."),
    ],
)
def test_bad_input_is_said_and_the_table_shown_with_the_default(owner, runs, query, message):
    html = page(owner, {"runs": ids(runs), **query} if "runs" not in query else query)
    assert message in html
    if "runs" not in query:
        assert len(cell_texts(html)) == 3


def test_a_run_the_user_may_not_see_is_named_and_left_out(stranger, owner, runs):
    theirs = paper_runs(stranger)[0]
    html = page(owner, {"runs": f"{runs[0].pk},{theirs.pk}"})
    assert f"Run #{theirs.pk} is not visible to you or does not exist." in html
    assert [row[0] for row in cell_texts(html)] == ["Qwen2.5-Math-1.5B"]


def test_without_runs_the_page_says_how_to_choose_them(owner):
    assert "Choose runs by id" in page(owner, {})


def test_the_nav_and_the_compare_page_link_to_it(owner, runs):
    compare = client_for(owner).get("/compare/", {"runs": ids(runs)}).content.decode()
    assert f'href="/results/?runs={ids(runs)}"' in compare
    assert 'href="/results/">Results</a>' in compare


def test_anonymous_visitors_are_sent_to_log_in(runs):
    response = client_for(None).get("/results/", {"runs": ids(runs)})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
