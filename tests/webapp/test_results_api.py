"""GET /api/v1/results/: who may read which runs' table, its formats, and bad input answered 400 by field."""

import pytest

from tests.webapp.conftest import client_for
from tests.webapp.results_data import STEP_200, paper_runs
from webapp.runs.results import results_table
from webapp.runs.results_export import results_csv, results_latex, results_markdown

pytestmark = pytest.mark.django_db

URL = "/api/v1/results/"


@pytest.fixture
def runs(owner, experiment):
    return paper_runs(owner, experiment=experiment)


def ids(runs) -> str:
    return ",".join(str(run.pk) for run in runs)


def test_the_owner_reads_the_table_as_json(api, runs):
    response = api.get(URL, {"runs": ids(runs)})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["metric"], body["better"], body["at"], body["metrics"]) == ("accuracy", "higher", "last", ["accuracy"])
    assert body["columns"] == ["aime24", "aime25", "math500"]
    last = body["rows"][2]
    assert (last["run"], last["name"], last["label"], last["step"], last["url"]) == (
        runs[2].pk,
        "ToRL-1.5B · step 200",
        "ToRL-1.5B · step 200",
        200,
        f"/runs/{runs[2].pk}/",
    )
    assert last["cells"] == pytest.approx(STEP_200)
    assert body["best"]["aime24"] == pytest.approx(STEP_200["aime24"])
    assert body["left_out"] == []


def test_an_experiment_gives_every_run_of_it_and_says_which_have_no_row(api, runs, experiment):
    body = api.get(URL, {"experiment": experiment.pk, "at": "best", "best_on": "aime25"}).json()
    assert [row["run"] for row in body["rows"]] == [run.pk for run in runs]
    assert body["best_on"] == "aime25"
    assert body["left_out"] == [
        {"run": runs[0].parent_id, "name": "ToRL-1.5B", "reason": "reports no accuracy on a benchmark"}
    ]


@pytest.mark.parametrize(
    ("output", "content_type", "export"),
    [
        ("markdown", "text/plain; charset=utf-8", results_markdown),
        ("latex", "text/plain; charset=utf-8", results_latex),
        ("csv", "text/csv", results_csv),
    ],
)
def test_each_text_format_is_the_export_of_the_same_table(api, runs, output, content_type, export):
    response = api.get(URL, {"runs": ids(runs), "format": output})
    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert response.content.decode() == export(results_table(runs=runs, metric="accuracy"))


def test_a_stranger_is_told_which_runs_they_may_not_see(stranger, runs):
    response = client_for(stranger).get(URL, {"runs": ids(runs[:2])})
    assert response.status_code == 400
    listed = ", ".join(f"#{run.pk}" for run in runs[:2])
    assert response.json() == {"runs": [f"runs {listed} are not visible to you or do not exist"]}


def test_a_stranger_may_not_read_the_owners_experiment(stranger, runs, experiment):
    response = client_for(stranger).get(URL, {"experiment": experiment.pk})
    assert response.status_code == 400
    assert response.json() == {"experiment": [f"experiment {experiment.pk} is not visible to you or does not exist"]}


def test_staff_read_every_run(staff, runs):
    response = client_for(staff).get(URL, {"runs": ids(runs)})
    assert response.status_code == 200 and len(response.json()["rows"]) == 3


def test_anonymous_requests_are_refused(runs):
    assert client_for(None).get(URL, {"runs": ids(runs)}).status_code in (401, 403)


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({}, "runs", "choose runs=1,2,3 or experiment=<id>"),
        ({"runs": "1,two"}, "runs", "'two' is not a run id"),
        ({"step": "ten", "at": "step"}, "step", "A valid integer is required."),
        ({"at": "step"}, "step", "a row at a step needs the step (step=)"),
        ({"at": "first"}, "at", '"first" is not a valid choice.'),
        ({"format": "html"}, "format", '"html" is not a valid choice.'),
        ({"metric": "f1"}, "metric", "no run here reports 'f1' on a benchmark; they report accuracy"),
        (
            {"at": "best", "best_on": "gsm8k"},
            "best_on",
            "'gsm8k' is not a benchmark these runs report accuracy on; choose one of mean, aime24, aime25, math500",
        ),
    ],
)
def test_bad_input_is_answered_400_by_field(api, runs, query, field, message):
    query = {"runs": ids(runs), **query} if "runs" not in query and query else query
    response = api.get(URL, query)
    assert response.status_code == 400
    assert response.json()[field] == [message]


def test_the_endpoint_is_in_the_schema_with_its_formats(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = schema["paths"]["/api/v1/results/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"runs", "experiment", "metric", "at", "step", "best_on"}
    assert set(operation["responses"]["200"]["content"]) == {"application/json", "text/plain", "text/csv"}
    assert {"400", "401", "403"} <= set(operation["responses"])
