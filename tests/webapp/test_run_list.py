"""The runs list through both doors: the runs page (/runs/) and GET /api/v1/runs/ list the same runs
for the same question, because both ask webapp.runs.selectors.run_list."""

import re

import pytest
import yaml
from django.test import Client

from tests.webapp.conftest import client_for
from webapp.runs.models import Run, RunStatus
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db


def page_ids(user, query: str = "") -> list[int]:
    client = Client()
    client.force_login(user)
    response = client.get(f"/runs/?{query}")
    assert response.status_code == 200
    return [int(pk) for pk in re.findall(r'<tr data-run-id="(\d+)"', response.content.decode())]


def api_ids(user, query: str = "") -> list[int]:
    response = client_for(user).get(f"/api/v1/runs/?{query}")
    assert response.status_code == 200, response.json()
    return [run["id"] for run in response.json()["results"]]


@pytest.fixture
def runs(owner, experiment, make_run) -> dict[str, Run]:
    torl, _ = make_run(name="ToRL C=1", tags=["math", "c1"], experiment=experiment, preset="torl")
    retool, _ = make_run(name="ReTool cold start", description="SFT first", tags=["sft"], preset="retool")
    run_transition(run=retool, status=RunStatus.STARTING)
    old, _ = make_run(name="old sweep", tags=["math"])
    Run.objects.filter(pk=old.pk).update(archived=True, summary={"accuracy": 0.9})
    Run.objects.filter(pk=torl.pk).update(summary={"accuracy": 0.5})
    return {"torl": torl, "retool": retool, "old": old}


def test_both_doors_hide_archived_runs_unless_asked_to_show_them(owner, runs):
    live = [runs["retool"].pk, runs["torl"].pk]
    everything = [runs["old"].pk, *live]
    assert page_ids(owner) == api_ids(owner) == live
    assert page_ids(owner, "archived=1") == api_ids(owner, "archived=true") == everything


@pytest.mark.parametrize(
    "query, expected",
    [
        ("torl", ["torl"]),  # name and preset
        ("COLD", ["retool"]),  # any case
        ("sft first", ["retool"]),  # description
        ("tool use", ["torl"]),  # the experiment's name
        ("c1", ["torl"]),  # a tag
        ("math", ["torl"]),  # the archived run carries it too, but stays hidden
    ],
)
def test_both_doors_search_alike(owner, runs, query, expected):
    ids = [runs[name].pk for name in expected]
    assert page_ids(owner, f"q={query}") == api_ids(owner, f"search={query}") == ids


def test_both_doors_find_a_run_by_its_id(owner, runs):
    pk = runs["retool"].pk
    assert page_ids(owner, f"q=%23{pk}") == api_ids(owner, f"search=%23{pk}") == [pk]


def test_both_doors_filter_status_experiment_and_tag_alike(owner, experiment, runs):
    assert page_ids(owner, "status=starting") == api_ids(owner, "status=starting") == [runs["retool"].pk]
    assert page_ids(owner, f"experiment={experiment.pk}") == api_ids(owner, f"experiment={experiment.pk}")
    assert page_ids(owner, "tag=math&archived=1") == api_ids(owner, "tags=math&archived=true")
    assert page_ids(owner, "tag=math&archived=1") == [runs["old"].pk, runs["torl"].pk]


def test_both_doors_sort_by_the_same_keys(owner, runs):
    by_accuracy = [runs["old"].pk, runs["torl"].pk, runs["retool"].pk]  # no accuracy yet: last
    assert page_ids(owner, "sort=-accuracy&archived=1") == api_ids(owner, "ordering=-accuracy&archived=true")
    assert page_ids(owner, "sort=-accuracy&archived=1") == by_accuracy
    assert page_ids(owner, "sort=name") == api_ids(owner, "ordering=name") == [runs["retool"].pk, runs["torl"].pk]


def test_a_bad_value_is_a_field_error_in_the_api_and_a_message_on_the_page(owner, runs):
    response = client_for(owner).get("/api/v1/runs/?ordering=colour&status=sleeping")
    assert response.status_code == 400
    assert set(response.json()) == {"ordering", "status"}
    client = Client()
    client.force_login(owner)
    page = client.get("/runs/?sort=colour&status=sleeping").content.decode()
    assert "Cannot sort by &#x27;colour&#x27;" in page and "Unknown status &#x27;sleeping&#x27;" in page


def test_the_api_filters_by_preset_parent_and_creation_time(owner, api, runs, make_run):
    child, _ = make_run(name="fork", parent=runs["torl"], parent_relation="fork", preset="torl")
    assert api_ids(owner, "preset=retool") == [runs["retool"].pk]
    assert api_ids(owner, f"parent={runs['torl'].pk}") == [child.pk]
    assert api_ids(owner, "created_before=2000-01-01T00:00:00Z") == []
    assert len(api_ids(owner, "created_after=2000-01-01T00:00:00Z")) == 3


def test_each_door_lists_only_the_runs_its_user_may_see(owner, stranger, staff, runs, make_run):
    theirs, _ = make_run(user=stranger, name="theirs")
    assert page_ids(stranger) == api_ids(stranger) == [theirs.pk]
    assert page_ids(staff) == api_ids(staff) == [theirs.pk, runs["retool"].pk, runs["torl"].pk]


def test_the_api_schema_documents_every_list_parameter(api):
    schema = yaml.safe_load(api.get("/api/schema/").content)
    parameters = {p["name"] for p in schema["paths"]["/api/v1/runs/"]["get"]["parameters"]}
    assert {
        "status",
        "experiment",
        "preset",
        "parent",
        "tags",
        "archived",
        "created_after",
        "created_before",
        "search",
        "ordering",
        "page",
        "page_size",
    } <= parameters


def test_the_page_and_the_api_cost_the_same_queries_for_5_or_50_runs(
    owner, make_run, django_assert_max_num_queries, client
):
    client.force_login(owner)
    api = client_for(owner)

    def counts() -> tuple[int, int]:
        with django_assert_max_num_queries(20) as page:
            client.get("/runs/")
        with django_assert_max_num_queries(10) as listed:
            api.get("/api/v1/runs/")
        return len(page.captured_queries), len(listed.captured_queries)

    for i in range(5):
        make_run(name=f"r{i}", managed=True)
    few = counts()
    for i in range(45):
        make_run(name=f"more {i}", managed=True)
    assert counts() == few
