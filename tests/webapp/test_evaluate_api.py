"""POST /api/v1/runs/<id>/evaluate and GET /api/v1/runs/<id>/checkpoints: an evaluation run queued from the API,
refused by field, and only for the runs a user may see and tirlab can evaluate."""

import pytest

from tests.webapp.conftest import client_for
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run
from webapp.tracking.runs import create_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def trained(make_run) -> Run:
    """A run whose trainer reported checkpoints after steps 3 and 6 (step 6 twice: the second path wins)."""
    run, token = make_run(name="ToRL mini", config={"data": {"val_dataset": "arithmetic:hard"}})
    reported = [{"step": 3, "path": "/ckpt/step-3"}, {"step": 6, "path": "/ckpt/old-6"}]
    ingest_batch(run_id=run.pk, token=token, payload={"checkpoints": reported})
    ingest_batch(run_id=run.pk, token=token, payload={"checkpoints": [{"step": 6, "path": "/ckpt/step-6"}]})
    return run


def evaluate(api, run: Run, **body):
    return api.post(f"/api/v1/runs/{run.pk}/evaluate", body, format="json")


def evaluations(run: Run):
    return Run.objects.filter(parent=run, parent_relation="evaluation")


def test_checkpoints_are_listed_by_step_with_their_latest_path(api, trained):
    response = api.get(f"/api/v1/runs/{trained.pk}/checkpoints")
    assert response.status_code == 200
    assert [(c["step"], c["path"]) for c in response.json()] == [(3, "/ckpt/step-3"), (6, "/ckpt/step-6")]


def test_an_evaluation_is_created_at_the_checkpoints_step(api, trained):
    response = evaluate(api, trained, step=6, datasets=["arithmetic:easy"], samples=4, temperature=0.8)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["parent"], body["parent_relation"], body["status"]) == (trained.pk, "evaluation", "queued")
    assert (body["evaluated_step"], body["evaluated_checkpoint"]) == (6, "/ckpt/step-6")
    assert body["config"]["data"]["val_dataset"] == "arithmetic:easy"
    assert (body["config"]["schedule"]["eval_pass_k"], body["config"]["schedule"]["eval_temperature"]) == (4, 0.8)


def test_an_evaluation_defaults_to_the_runs_own_datasets_greedily(api, trained):
    body = evaluate(api, trained, step=None).json()
    assert (body["evaluated_step"], body["evaluated_checkpoint"]) == (0, "")
    assert body["config"]["data"]["val_dataset"] == "arithmetic:hard"
    assert body["config"]["schedule"]["eval_pass_k"] == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"step": 4}, "step"),
        ({"step": 6, "datasets": []}, "datasets"),
        ({"step": 6, "samples": 0}, "samples"),
        ({"step": 6, "samples": 1, "temperature": 0.8}, "temperature"),
        ({"step": 6, "samples": 4, "temperature": 0}, "temperature"),
        ({"step": 6, "datasets": ["dataset:999"]}, "config.data.val_dataset"),
        ({}, "step"),
    ],
)
def test_a_bad_evaluation_is_refused_at_its_field_and_creates_nothing(api, trained, body, field):
    response = evaluate(api, trained, **body)
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not evaluations(trained).exists()


def test_a_strangers_run_is_not_found(trained, stranger):
    api = client_for(stranger)
    assert evaluate(api, trained, step=6).status_code == 404
    assert api.get(f"/api/v1/runs/{trained.pk}/checkpoints").status_code == 404
    assert not evaluations(trained).exists()


def test_an_mlflow_logged_run_is_refused(api, owner):
    run = create_run(owner, experiment_id="0", user_id="researcher", start_time=None, run_name="verl", tags={})
    response = evaluate(api, run, step=None, datasets=["arithmetic"])
    assert response.status_code == 400
    assert "MLflow" in response.json()["non_field_errors"][0]
    assert not evaluations(run).exists()


def test_an_evaluation_is_not_evaluated_again(api, trained):
    evaluation = evaluate(api, trained, step=6).json()
    response = api.post(f"/api/v1/runs/{evaluation['id']}/evaluate", {"step": None}, format="json")
    assert response.status_code == 400
    assert f"evaluate run {trained.pk} instead" in response.json()["non_field_errors"][0]


def test_a_dataset_named_twice_is_evaluated_once(api, trained):
    body = evaluate(api, trained, step=6, datasets=["arithmetic:easy", "arithmetic:hard", "arithmetic:easy"]).json()
    assert (body["config"]["data"]["val_dataset"], body["config"]["data"]["extra_val_datasets"]) == (
        "arithmetic:easy",
        ["arithmetic:hard"],
    )


def test_a_long_run_name_keeps_what_the_evaluation_evaluates(api, make_run):
    run, token = make_run(name="x" * 200, config={"data": {"val_dataset": "arithmetic"}})
    ingest_batch(run_id=run.pk, token=token, payload={"checkpoints": [{"step": 12, "path": "/ckpt/step-12"}]})
    name = evaluate(api, run, step=12).json()["name"]
    assert len(name) == 200 and name.endswith(" · step 12")


def test_the_stored_datasets_of_the_run_stay_recorded_in_its_evaluation(api, make_run, owner, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from webapp.datasets.services import dataset_create_from_upload

    settings.MEDIA_ROOT = tmp_path / "media"
    questions = b'{"question": "1+1?", "answer": "2"}\n{"question": "2+3?", "answer": "5"}\n'
    stored = dataset_create_from_upload(user=owner, upload=SimpleUploadedFile("sums.jsonl", questions), name="sums")
    ref = f"dataset:{stored.pk}"
    run, _ = make_run(config={"data": {"train_dataset": ref, "val_dataset": ref}})
    body = evaluate(api, run, step=None).json()
    # The evaluation names the stored dataset, as its parent did, not only the file it resolved to.
    assert body["sources"]["data.val_dataset"]["id"] == stored.pk
    assert body["sources"]["data.train_dataset"]["id"] == stored.pk
    assert body["config"]["data"]["val_dataset"] == stored.file_path


def test_a_run_without_validation_data_asks_for_datasets(api, make_run):
    run, token = make_run(config={})
    ingest_batch(run_id=run.pk, token=token, payload={"checkpoints": [{"step": 2, "path": "/ckpt/step-2"}]})
    response = evaluate(api, run, step=2)
    assert response.status_code == 400
    assert response.json()["datasets"] == ["choose at least one dataset to evaluate on"]
