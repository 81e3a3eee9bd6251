"""The MLflow door writes through the dashboard's services: the rules of experiment_create and of a
run's name hold at both doors, and the MLflow API answers each refusal with MLflow's own error code.
Each rule is checked through the dashboard's API and through the real `mlflow` client."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.webapp.conftest import client_for
from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from webapp.runs import services
from webapp.runs.models import Experiment, Run
from webapp.runs.services import experiment_create

pytestmark = pytest.mark.django_db(transaction=True)
mlflow = pytest.importorskip("mlflow")
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

LONG = "x" * 201


@pytest.fixture
def as_owner(owner, live_server, monkeypatch):
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(owner)) as uri:
        yield uri


def refusal(call) -> MlflowException:
    with pytest.raises(MlflowException) as refused:
        call()
    return refused.value


@pytest.mark.parametrize(
    ("name", "field_message", "code"),
    [
        ("   ", "Give the experiment a name.", "INVALID_PARAMETER_VALUE"),
        (LONG, "At most 200 characters.", "INVALID_PARAMETER_VALUE"),
        (
            "tool use",
            "There is already an experiment named 'tool use'; choose it from the list.",
            "RESOURCE_ALREADY_EXISTS",
        ),
    ],
    ids=["blank", "too long", "taken"],
)
def test_an_experiment_name_is_judged_alike_at_both_doors(as_owner, owner, experiment, name, field_message, code):
    dashboard = client_for(owner).post("/api/v1/experiments/", {"name": name}, format="json")
    assert dashboard.status_code == 400 and dashboard.json() == {"name": [field_message]}
    refused = refusal(lambda: MlflowClient().create_experiment(name))
    assert refused.error_code == code
    if code == "INVALID_PARAMETER_VALUE":
        assert refused.message == f"{code}: Invalid experiment name: {field_message}"
    else:  # MLflow's words, which its users know
        assert refused.message == f"{code}: Experiment(name=tool use) already exists."
    assert list(Experiment.objects.values_list("name", flat=True)) == ["tool use"]


def test_an_experiment_name_is_stripped_at_both_doors(as_owner, owner):
    experiment_id = MlflowClient().create_experiment("  sweep  ")
    assert Experiment.objects.get(pk=int(experiment_id)).name == "sweep"
    assert refusal(lambda: MlflowClient().create_experiment("sweep ")).error_code == "RESOURCE_ALREADY_EXISTS"
    dashboard = client_for(owner).post("/api/v1/experiments/", {"name": " sweep"}, format="json")
    assert dashboard.status_code == 400


@pytest.fixture
def racing(monkeypatch, owner):
    """A request whose check finds the name free, and another that takes it before the insert: the
    check is made to pass, as it did for the loser of the race."""
    Experiment.objects.create(owner=owner, name="sweep")
    monkeypatch.setattr(services, "_experiment_errors", lambda **kwargs: {})


def test_the_loser_of_a_race_for_a_name_is_refused_as_if_it_had_seen_the_winner(racing, owner):
    with pytest.raises(ValidationError) as refused:
        experiment_create(user=owner, name="sweep")
    assert refused.value.error_dict["name"][0].code == "unique"
    assert refused.value.message_dict == {
        "name": ["There is already an experiment named 'sweep'; choose it from the list."]
    }
    assert client_for(owner).post("/api/v1/experiments/", {"name": "sweep"}, format="json").status_code == 400
    assert Experiment.objects.count() == 1


def test_the_mlflow_client_takes_a_lost_race_for_an_existing_experiment(racing, as_owner):
    # set_experiment creates when get-by-name found nothing, and takes RESOURCE_ALREADY_EXISTS from a
    # racing create as "someone else made it".
    assert refusal(lambda: MlflowClient().create_experiment("sweep")).error_code == "RESOURCE_ALREADY_EXISTS"
    assert Experiment.objects.count() == 1


def test_a_note_on_an_experiment_is_its_description(as_owner, owner):
    client = MlflowClient()
    experiment_id = client.create_experiment("notes", tags={"mlflow.note.content": "first"})
    assert Experiment.objects.get(pk=int(experiment_id)).description == "first"
    client.set_experiment_tag(experiment_id, "mlflow.note.content", "second")
    assert Experiment.objects.get(pk=int(experiment_id)).description == "second"


def test_a_run_name_is_judged_alike_at_both_doors(as_owner, owner, make_run):
    client = MlflowClient()
    refused = refusal(lambda: client.create_run("0", run_name=LONG))
    assert refused.error_code == "INVALID_PARAMETER_VALUE"
    assert refused.message == "INVALID_PARAMETER_VALUE: Invalid run name: At most 200 characters."
    assert not Run.objects.exists()

    run_id = client.create_run("0", run_name="  grpo  ").info.run_id
    assert Run.objects.get(pk=int(run_id)).name == "grpo"
    for rename in (
        lambda: client.set_tag(run_id, "mlflow.runName", LONG),
        lambda: client.update_run(run_id, name=LONG),
    ):
        assert refusal(rename).message == "INVALID_PARAMETER_VALUE: Invalid run name: At most 200 characters."
    assert Run.objects.get(pk=int(run_id)).name == "grpo"

    dashboard_run, _ = make_run(name="mine")
    answer = client_for(owner).patch(f"/api/v1/runs/{dashboard_run.pk}/", {"name": LONG}, format="json")
    assert answer.status_code == 400 and answer.json() == {"name": ["At most 200 characters."]}


def test_a_run_given_no_name_is_named_after_its_id(as_owner):
    run_id = MlflowClient().create_run("0").info.run_id
    assert Run.objects.get(pk=int(run_id)).name == f"mlflow run {run_id}"
    assert MlflowClient().get_run(run_id).info.run_name == f"mlflow run {run_id}"


def test_staff_log_a_run_into_any_experiment_as_they_may_on_the_dashboard(
    staff, owner, experiment, live_server, monkeypatch
):
    # run_create's rule: a run may go into an experiment its user may see; staff see every one.
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(staff)):
        run_id = MlflowClient().create_run(str(experiment.pk), run_name="audit").info.run_id
    run = Run.objects.get(pk=int(run_id))
    assert (run.owner, run.experiment) == (staff, experiment)
    # Anyone else gets what MLflow answers for an experiment they cannot see.
    stranger = type(owner).objects.create_user(username="dave", password="pw-dave-123")
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(stranger)):
        refused = refusal(lambda: MlflowClient().create_run(str(experiment.pk)))
    assert refused.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert Run.objects.count() == 1
