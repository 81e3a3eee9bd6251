"""Bad input gets a clear 4xx: never a 500, never silently read as something else.

Each case here was found by the API fuzz (test_api_fuzz.py) and is kept as an ordinary test.
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.webapp.test_ingest import counts, ingest
from webapp.datasets.models import Dataset
from webapp.runs.models import Experiment, Run
from webapp.runs.services import run_transition

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("collection", ["experiments", "runs"])
def test_a_utc_offset_postgresql_cannot_store_is_compared_in_utc(api, collection, experiment, make_run):
    make_run()
    # 2000-01-01T00:00+19:00 is 1999-12-31T05:00Z, long before any row here.
    response = api.get(f"/api/v1/{collection}/?created_after=2000-01-01T00:00:00%2B19:00")
    assert response.status_code == 200
    assert response.json()["count"] == 1
    assert api.get(f"/api/v1/{collection}/?created_before=2000-01-01T00:00:00-17:30").json()["count"] == 0


def test_an_instant_before_the_year_1_is_a_field_error(api):
    response = api.get("/api/v1/runs/?created_before=0001-01-01T00:00:00%2B05:00")
    assert response.status_code == 400
    assert "created_before" in response.json()


@pytest.mark.parametrize("query", ["archived=maybe", "archived=2"])
def test_a_boolean_filter_refuses_what_is_not_a_boolean(api, make_run, query):
    make_run()
    response = api.get(f"/api/v1/runs/?{query}")
    assert response.status_code == 400
    assert response.json() == {"archived": ["must be true or false"]}


def test_boolean_filters_of_every_list_refuse_what_is_not_a_boolean(api):
    for url in ("/api/v1/datasets/?builtin=19375595619", "/api/v1/reward-configs/?builtin=null"):
        assert api.get(url).status_code == 400, url


def test_boolean_filters_read_the_same_words_as_the_other_parameters(api, make_run):
    archived, _ = make_run(name="archived")
    Run.objects.filter(pk=archived.pk).update(archived=True)
    make_run(name="live")
    # archived=true lists archived runs along with the others (webapp.runs.selectors.run_list); "" is not given.
    both = ["archived", "live"]
    for word, names in (("yes", both), ("1", both), ("False", ["live"]), ("no", ["live"]), ("", ["live"])):
        results = api.get(f"/api/v1/runs/?archived={word}").json()["results"]
        assert sorted(r["name"] for r in results) == names, word


def test_an_empty_status_is_no_status_given(api, make_run):
    queued, _ = make_run(name="queued")
    cancelled, _ = make_run(name="cancelled")
    run_transition(run=cancelled, status="cancelled")
    assert api.get("/api/v1/runs/?status=").json()["count"] == 2
    assert [r["name"] for r in api.get("/api/v1/runs/?status=&status=cancelled").json()["results"]] == ["cancelled"]


@pytest.mark.parametrize("page_size", ["null", "false", "0", "-3"])
def test_a_page_size_that_is_not_a_positive_integer_is_a_field_error(api, page_size):
    response = api.get(f"/api/v1/tokens/?page_size={page_size}")
    assert response.status_code == 400
    assert response.json() == {"page_size": ["must be a positive integer"]}


def test_a_page_size_above_the_maximum_is_capped_and_an_empty_one_is_the_default(api, run_and_token):
    run, _ = run_and_token
    assert api.get("/api/v1/experiments/?page_size=100000").status_code == 200
    assert api.get(f"/api/v1/runs/{run.pk}/logs/?page_size=").status_code == 200


@pytest.mark.parametrize(
    "query, field",
    [("format=csv&max_points=0", "max_points"), ("format=csv&x=steps", "x"), ("format=xml", "format")],
)
def test_metrics_check_every_parameter_whatever_the_format(api, run_and_token, query, field):
    run, _ = run_and_token
    response = api.get(f"/api/v1/runs/{run.pk}/metrics/?{query}")
    assert response.status_code == 400
    assert field in response.json()


def test_an_empty_ingest_body_is_an_empty_batch(run_and_token):
    run, token = run_and_token
    run_transition(run=run, status="starting")
    response = ingest(run.pk, token, b"")
    assert response.status_code == 200, response.json()
    assert response.json() == {"written": {"metrics": 0, "trajectories": 0, "logs": 0, "checkpoints": 0}, "stop": False}
    run.refresh_from_db()
    assert run.heartbeat_at is not None and counts(run) == (0, 0, 0)


def test_a_path_under_the_api_that_matches_nothing_answers_json(api):
    response = APIClient().post("/api/v1/runs/null,null/ingest", b"{}", content_type="application/json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}
    assert api.get("/api/v1/nothing-here/").json() == {"detail": "Not found."}


def test_a_page_that_matches_nothing_still_answers_html(client, owner):
    client.force_login(owner)
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_a_form_encoded_body_is_refused_not_read_as_text(api):
    # As a form, {"name": null, "tags": 7} arrives as the texts "null" and "7" and was stored so.
    response = api.post("/api/v1/experiments/", {"name": "null", "tags": "7"}, format="multipart")
    assert response.status_code == 415
    assert not Experiment.objects.exists()


def test_datasets_are_uploaded_as_multipart_and_renamed_as_json(api, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    upload = SimpleUploadedFile("qa.jsonl", b'{"question": "1+1?", "answer": "2"}\n')
    created = api.post("/api/v1/datasets/", {"file": upload, "name": "qa"}, format="multipart")
    assert created.status_code == 201, created.json()
    url = f"/api/v1/datasets/{created.json()['id']}/"
    assert api.patch(url, {"name": "renamed"}, format="multipart").status_code == 415
    assert api.patch(url, {"name": "renamed"}, format="json").json()["name"] == "renamed"
    assert Dataset.objects.get().name == "renamed"


@pytest.mark.parametrize("field", ["experiment", "reward_config"])
def test_an_empty_string_is_not_a_row_id(api, field):
    # DRF reads "" as null for HTML forms; this API takes JSON only.
    response = api.post("/api/v1/runs/", {"name": "run", field: ""}, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Run.objects.exists()
