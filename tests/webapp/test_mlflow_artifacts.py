"""Artifacts through MLflow's proxy API with the real client, and the samples tirlab reads from them."""

from __future__ import annotations

import json

import pytest
import requests

from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from webapp.runs.models import Run, RunLogLine, Trajectory

pytestmark = pytest.mark.django_db(transaction=True)
mlflow = pytest.importorskip("mlflow")
pd = pytest.importorskip("pandas")
from mlflow.tracking import MlflowClient  # noqa: E402


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def runs_dir(settings, tmp_path):
    settings.RUNS_DIR = tmp_path / "runs"
    return settings.RUNS_DIR


@pytest.fixture
def as_alice(alice, live_server, monkeypatch, runs_dir):
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(alice)) as uri:
        yield uri


def test_text_dicts_and_files_are_stored_under_the_run_and_come_back(as_alice, runs_dir, tmp_path):
    mlflow.set_experiment("artifacts")
    with mlflow.start_run() as run:
        mlflow.log_text("hello\n", "notes/hello.txt")
        mlflow.log_dict({"lr": 1e-6}, "config.json")
        local = tmp_path / "model_card.md"
        local.write_text("# tiny\n")
        mlflow.log_artifact(str(local), artifact_path="docs")
    run_id = run.info.run_id
    stored = runs_dir / run_id / "artifacts"
    assert (stored / "notes" / "hello.txt").read_text() == "hello\n"
    assert json.loads((stored / "config.json").read_text()) == {"lr": 1e-6}
    client = MlflowClient()
    assert sorted((f.path, f.is_dir) for f in client.list_artifacts(run_id)) == [
        ("config.json", False),
        ("docs", True),
        ("notes", True),
    ]
    assert [f.path for f in client.list_artifacts(run_id, "docs")] == ["docs/model_card.md"]
    assert mlflow.artifacts.load_text(f"runs:/{run_id}/notes/hello.txt") == "hello\n"
    assert mlflow.artifacts.load_dict(f"runs:/{run_id}/config.json") == {"lr": 1e-6}
    assert Run.objects.get(pk=int(run_id)).mlflow.artifact_bytes == sum(
        f.stat().st_size for f in stored.rglob("*") if f.is_file()
    )


def test_an_artifact_path_cannot_leave_the_run(as_alice, alice, live_server, runs_dir):
    import httpx

    run_id = MlflowClient().create_run("0").info.run_id
    headers = {"Authorization": f"Bearer {api_token(alice)}"}
    base = f"{live_server.url}/mlflow/api/2.0/mlflow-artifacts/artifacts/0/{run_id}/artifacts"
    for path in ("..%2F..%2Fescape.txt", "a/%2E%2E/%2E%2E/b.txt", "..\\escape.txt"):
        answer = httpx.put(f"{base}/{path}", content=b"x", headers=headers)
        assert answer.status_code in (400, 404), (path, answer.status_code)
        assert answer.json()["error_code"] in ("INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST")
    assert not any(runs_dir.parent.rglob("escape.txt")) and not any(runs_dir.parent.rglob("b.txt"))


def test_a_file_over_the_limit_is_refused_and_the_old_one_stays(as_alice, settings, runs_dir, tmp_path):
    settings.ARTIFACT_MAX_BYTES = 1000
    with mlflow.start_run() as run:
        mlflow.log_text("small", "out.txt")
        # The artifact client raises requests' HTTPError with tirlab's answer in it (not a retried 5xx).
        with pytest.raises(requests.HTTPError) as refused:
            mlflow.log_text("x" * 5000, "out.txt")
    assert "at most 1000 bytes" in str(refused.value)
    assert (runs_dir / run.info.run_id / "artifacts" / "out.txt").read_text() == "small"
    assert not list((runs_dir / run.info.run_id / "artifacts").glob(".upload-*"))


def test_logged_tables_become_the_runs_trajectories_and_grow_when_appended(as_alice):
    with mlflow.start_run() as run:
        mlflow.log_metric("reward", 0.5, step=7)
        table = {"prompt": ["2+2?", "2+2?", "3*3?"], "completion": ["4", "5", "9"], "reward": [1.0, -1.0, 1.0]}
        mlflow.log_table(table, artifact_file="samples.json")
        mlflow.log_table({"prompt": ["1+1?"], "completion": ["2"], "reward": [1.0]}, artifact_file="samples.json")
    rows = Trajectory.objects.filter(run_id=int(run.info.run_id)).order_by("prompt_index", "sample_index")
    assert [(t.step, t.prompt_index, t.sample_index, t.turns[0]["text"], t.reward, t.correct) for t in rows] == [
        (7, 0, 0, "4", 1.0, True),
        (7, 0, 1, "5", -1.0, False),
        (7, 1, 0, "9", 1.0, True),
        (7, 2, 0, "2", 1.0, True),
    ]


def test_verl_validation_generations_become_that_steps_trajectories(as_alice, tmp_path):
    samples = [
        {"input": "Q: 6*7?", "output": "<answer>42</answer>", "score": 1.0},
        {"input": "Q: 6*8?", "output": "<answer>47</answer>", "score": 0.0},
    ]
    path = tmp_path / "val_step20.json"
    path.write_text(json.dumps(samples))
    with mlflow.start_run() as run:
        mlflow.log_artifact(str(path))
    rows = list(Trajectory.objects.filter(run_id=int(run.info.run_id)).order_by("prompt_index"))
    assert [(t.step, t.prompt, t.turns, t.reward, t.correct) for t in rows] == [
        (20, "Q: 6*7?", [{"kind": "model", "text": "<answer>42</answer>"}], 1.0, True),
        (20, "Q: 6*8?", [{"kind": "model", "text": "<answer>47</answer>"}], 0.0, False),
    ]


def test_trl_completions_become_groups_with_their_reward_functions(as_alice, tmp_path):
    frame = pd.DataFrame(
        {
            "step": [3, 3, 3, 3],
            "prompt": [[{"role": "user", "content": "6*7?"}]] * 2 + [[{"role": "user", "content": "2+2?"}]] * 2,
            "completion": [
                [{"role": "assistant", "content": "42"}],
                [{"role": "assistant", "content": "41"}],
                [{"role": "assistant", "content": "4"}],
                [{"role": "assistant", "content": "4"}],
            ],
            "accuracy_reward": [1.0, 0.0, 1.0, 1.0],
            "format_reward": [0.5, 0.5, 0.0, 0.5],
            "advantage": [0.7, -0.7, -0.5, 0.5],
        }
    )
    path = tmp_path / "completions_00003.parquet"
    frame.to_parquet(path)
    with mlflow.start_run() as run:
        mlflow.log_artifact(str(path), artifact_path="completions")
    rows = list(Trajectory.objects.filter(run_id=int(run.info.run_id)).order_by("prompt_index", "sample_index"))
    assert [(t.step, t.prompt_index, t.sample_index, t.reward) for t in rows] == [
        (3, 0, 0, 1.5),
        (3, 0, 1, 0.5),
        (3, 1, 0, 1.0),
        (3, 1, 1, 1.5),
    ]
    assert rows[0].prompt == [{"role": "user", "content": "6*7?"}]
    assert rows[0].reward_components == {"accuracy_reward": 1.0, "format_reward": 0.5, "advantage": 0.7}


def test_a_file_that_is_not_samples_stays_a_file_and_the_log_says_why(as_alice, tmp_path):
    path = tmp_path / "val_step1.json"
    path.write_text('{"not": "a list"}')
    with mlflow.start_run() as run:
        mlflow.log_artifact(str(path))
    run_id = int(run.info.run_id)
    assert not Trajectory.objects.filter(run_id=run_id).exists()
    assert RunLogLine.objects.filter(run_id=run_id, message__contains="val_step1.json: not read as samples").exists()
