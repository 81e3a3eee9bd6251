"""Experiments, created from the new-run page or the API: one service, one set of rules."""

import pytest
from django.test import Client

from tests.webapp.conftest import client_for
from tests.webapp.test_ui_new_run import form_data
from trainer.config import default_config
from webapp.runs.models import Experiment, Run, RunStatus
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db


def launch_from_the_page(user, **meta):
    client = Client()
    client.force_login(user)
    return client.post("/runs/new/", form_data(default_config(), **meta))


def test_the_new_run_page_creates_the_experiment_it_names(owner):
    response = launch_from_the_page(owner, new_experiment="  sweep  ")
    assert response.status_code == 302
    assert Run.objects.get().experiment == Experiment.objects.get(owner=owner, name="sweep")


def test_a_taken_name_is_refused_by_both_doors_with_the_same_message(owner, experiment):
    message = "There is already an experiment named 'tool use'; choose it from the list."
    response = launch_from_the_page(owner, new_experiment="tool use")
    assert response.status_code == 400
    assert message.replace("'", "&#x27;") in response.content.decode()
    assert Run.objects.count() == 0
    response = client_for(owner).post("/api/v1/experiments/", {"name": "tool use"}, format="json")
    assert response.status_code == 400 and response.json() == {"name": [message]}
    assert Experiment.objects.count() == 1


def test_another_users_experiment_name_is_free(stranger, experiment):
    response = client_for(stranger).post("/api/v1/experiments/", {"name": experiment.name}, format="json")
    assert response.status_code == 201 and response.json()["owner"] == "bob"


def test_a_blank_or_long_name_is_refused(api):
    assert api.post("/api/v1/experiments/", {"name": " "}, format="json").json() == {
        "name": ["Give the experiment a name."]
    }
    assert api.post("/api/v1/experiments/", {"name": "x" * 201}, format="json").json() == {
        "name": ["At most 200 characters."]
    }


def test_staff_renaming_an_experiment_checks_its_owners_names(owner, staff, experiment):
    other = Experiment.objects.create(name="other", owner=owner)
    response = client_for(staff).patch(f"/api/v1/experiments/{other.pk}/", {"name": "tool use"}, format="json")
    assert response.status_code == 400 and "name" in response.json()
    assert Experiment.objects.get(pk=other.pk).name == "other"


def test_an_experiment_with_an_active_run_is_not_deleted(api, experiment, make_run):
    run, _ = make_run(experiment=experiment)
    response = api.delete(f"/api/v1/experiments/{experiment.pk}/")
    assert response.status_code == 409 and f"#{run.pk}" in response.json()["detail"]
    assert Run.objects.filter(pk=run.pk).exists() and Experiment.objects.filter(pk=experiment.pk).exists()
    run_transition(run=run, status=RunStatus.CANCELLED)
    assert api.delete(f"/api/v1/experiments/{experiment.pk}/").status_code == 204
    assert not Run.objects.filter(pk=run.pk).exists()
