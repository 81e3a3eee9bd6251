"""A run's name, tags and preset, and which runs may be deleted: one rule (webapp.runs.services) that
the new-run page and the API both apply, with the same messages."""

import pytest
from django.test import Client

from tests.webapp.conftest import client_for
from tests.webapp.test_ui_new_run import form_data
from trainer.config import default_config
from webapp.runs.models import Run, RunStatus
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db

UNKNOWN_PRESET = "Unknown preset 'nope'; choose one of: "


def from_the_page(user, **meta):
    client = Client()
    client.force_login(user)
    return client.post("/runs/new/", form_data(default_config(), **meta))


def from_the_api(user, **body):
    body.setdefault("config", {})
    return client_for(user).post("/api/v1/runs/", body, format="json")


def test_an_unknown_preset_is_refused_by_both_doors_with_the_same_message(owner):
    page = from_the_page(owner, name="run", preset="nope")
    assert page.status_code == 400
    assert UNKNOWN_PRESET.replace("'", "&#x27;") in page.content.decode()
    api = from_the_api(owner, name="run", preset="nope")
    assert api.status_code == 400 and api.json()["preset"][0].startswith(UNKNOWN_PRESET)
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    "meta, field, message",
    [
        ({"name": "  "}, "name", "Give the run a name."),
        ({"name": "x" * 201}, "name", "At most 200 characters."),
        ({"name": "run", "tags": ["ok", "t" * 65]}, "tags", "Each tag has at most 64 characters."),
    ],
)
def test_names_and_tags_follow_one_rule_on_both_doors(owner, meta, field, message):
    page_meta = {**meta, "tags": ", ".join(meta.get("tags", []))}
    assert message in from_the_page(owner, **page_meta).content.decode()
    response = from_the_api(owner, **meta)
    assert response.status_code == 400 and response.json()[field] == [message]
    assert Run.objects.count() == 0


def test_the_api_reports_metadata_and_config_errors_together(owner):
    response = from_the_api(owner, name="", preset="nope", config={"rollout": {"group_size": 0}})
    assert response.status_code == 400
    assert {"name", "preset", "config.rollout.group_size"} <= set(response.json())


def test_names_and_tags_are_stored_trimmed(owner):
    body = from_the_api(owner, name="  spaced  ", tags=[" a ", "", "b"]).json()
    assert (body["name"], body["tags"]) == ("spaced", ["a", "b"])


def test_a_fork_keeps_its_parents_preset_even_once_that_preset_is_gone(owner, make_run):
    parent, _ = make_run(name="old", preset="quickstart")
    Run.objects.filter(pk=parent.pk).update(preset="retired-preset")
    response = client_for(owner).post(f"/api/v1/runs/{parent.pk}/fork/", {}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["preset"] == "retired-preset"


def test_renaming_follows_the_same_rule(owner, make_run):
    run, _ = make_run(name="before")
    api = client_for(owner)
    response = api.patch(f"/api/v1/runs/{run.pk}/", {"name": " "}, format="json")
    assert response.status_code == 400 and response.json() == {"name": ["Give the run a name."]}
    assert api.patch(f"/api/v1/runs/{run.pk}/", {"name": " after "}, format="json").json()["name"] == "after"


@pytest.mark.parametrize("status, code", [(RunStatus.RUNNING, 409), (RunStatus.FAILED, 204)])
def test_only_a_finished_run_can_be_deleted(owner, make_run, status, code):
    run, _ = make_run()
    run_transition(run=run, status=RunStatus.STARTING)
    run_transition(run=run, status=status)
    response = client_for(owner).delete(f"/api/v1/runs/{run.pk}/")
    assert response.status_code == code
    assert Run.objects.filter(pk=run.pk).exists() == (code == 409)
    if code == 409:
        assert response.json() == {"detail": "run is running; cancel it first"}


def test_a_stranger_cannot_delete_a_finished_run_and_staff_can(owner, stranger, staff, make_run):
    run, _ = make_run()
    run_transition(run=run, status=RunStatus.CANCELLED)
    assert client_for(stranger).delete(f"/api/v1/runs/{run.pk}/").status_code == 404
    assert client_for(staff).delete(f"/api/v1/runs/{run.pk}/").status_code == 204
