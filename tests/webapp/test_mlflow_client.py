"""tirlab as an MLflow tracking server, driven by the real `mlflow` client against a live server.

What verl, TRL and the Hugging Face Trainer call when `trainer.logger=mlflow` / `report_to=["mlflow"]`:
set_experiment, start_run, log_params, log_metrics with steps, set_tags, end_run; resuming a run with
MLFLOW_RUN_ID; and the client's own exceptions for what tirlab refuses, with MLflow's error codes.
"""

from __future__ import annotations

import math

import pytest

from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from webapp.runs.models import MetricStep, Run

pytestmark = pytest.mark.django_db(transaction=True)
mlflow = pytest.importorskip("mlflow")
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def as_alice(alice, live_server, monkeypatch):
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(alice)) as uri:
        yield uri


def test_a_training_loop_logs_a_run_that_tirlab_shows_as_its_own(as_alice, alice, client):
    experiment = mlflow.set_experiment("grpo-gsm8k")
    assert experiment.name == "grpo-gsm8k" and experiment.lifecycle_stage == "active"
    # set_experiment of an existing name finds it instead of creating a second one.
    assert mlflow.set_experiment("grpo-gsm8k").experiment_id == experiment.experiment_id
    with mlflow.start_run(run_name="qwen-1.5b-grpo") as active:
        mlflow.log_params({"actor_rollout_ref/rollout/n": 16, "algorithm/adv_estimator": "grpo"})
        for step in range(1, 6):
            mlflow.log_metrics({"critic/score/mean": step / 10, "actor/pg_loss": -step, "nan_one": math.nan}, step=step)
        mlflow.set_tags({"framework": "verl", "mlflow.note.content": "first try"})
        run_id = active.info.run_id

    run = Run.objects.get(pk=int(run_id))
    assert run.source == "mlflow" and not run.managed and run.owner == alice
    assert run.status == "succeeded" and run.finished_at is not None
    assert run.name == "qwen-1.5b-grpo" and run.experiment.name == "grpo-gsm8k"
    assert run.config == {"actor_rollout_ref/rollout/n": "16", "algorithm/adv_estimator": "grpo"}
    assert run.mlflow.tags["framework"] == "verl"
    assert list(MetricStep.objects.filter(run=run).order_by("step").values_list("step", flat=True)) == [1, 2, 3, 4, 5]

    fetched = MlflowClient().get_run(run_id)
    assert fetched.info.status == "FINISHED" and fetched.info.run_name == "qwen-1.5b-grpo"
    assert fetched.data.params["actor_rollout_ref/rollout/n"] == "16"
    assert fetched.data.metrics["critic/score/mean"] == pytest.approx(0.5)
    assert math.isnan(fetched.data.metrics["nan_one"])
    assert fetched.data.tags["framework"] == "verl" and fetched.data.tags["mlflow.runName"] == "qwen-1.5b-grpo"

    # The dashboard's own API has the series, as for any tirlab run.
    client.force_login(alice)
    series = client.get(f"/api/v1/runs/{run.pk}/metrics/?keys=critic/score/mean").json()
    assert series["series"]["critic/score/mean"]["last"] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


def test_mlflow_run_id_resumes_an_ended_run(as_alice, monkeypatch):
    mlflow.set_experiment("resume")
    with mlflow.start_run() as first:
        mlflow.log_metric("loss", 2.0, step=1)
    run_id = first.info.run_id
    assert Run.objects.get(pk=int(run_id)).status == "succeeded"

    monkeypatch.setenv("MLFLOW_RUN_ID", run_id)
    with mlflow.start_run() as again:
        assert again.info.run_id == run_id
        assert Run.objects.get(pk=int(run_id)).status == "running"
        mlflow.log_metric("loss", 1.0, step=2)
    history = MlflowClient().get_metric_history(run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(1, 2.0), (2, 1.0)]
    assert Run.objects.get(pk=int(run_id)).status == "succeeded"


def test_params_are_write_once_and_a_refused_batch_writes_nothing(as_alice):
    client = MlflowClient()
    run = client.create_run(mlflow.set_experiment("params").experiment_id)
    run_id = run.info.run_id
    client.log_param(run_id, "lr", "1e-6")
    client.log_param(run_id, "lr", "1e-6")  # the same value again is fine
    with pytest.raises(MlflowException) as refused:
        client.log_batch(
            run_id,
            metrics=[mlflow.entities.Metric("loss", 1.0, 0, 3)],
            params=[mlflow.entities.Param("lr", "3e-6")],
        )
    assert refused.value.error_code == "INVALID_PARAMETER_VALUE"
    assert "Changing param values is not allowed" in refused.value.message
    assert client.get_run(run_id).data.params == {"lr": "1e-6"}
    assert not MetricStep.objects.filter(run_id=int(run_id)).exists()


@pytest.mark.slow  # 31 batches of 1,000 metrics
def test_metric_history_comes_back_whole_across_pages(as_alice, live_server, alice):
    client = MlflowClient()
    run_id = client.create_run(mlflow.set_experiment("history").experiment_id).info.run_id
    steps = 30_500  # more than one page of the client's 25,000
    for start in range(0, steps, 1000):
        client.log_batch(
            run_id,
            metrics=[
                mlflow.entities.Metric("loss", 1 / (s + 1), 1_700_000_000_000 + s, s)
                for s in range(start, min(start + 1000, steps))
            ],
        )
    history = client.get_metric_history(run_id, "loss")
    assert [m.step for m in history] == list(range(steps))
    assert history[-1].value == pytest.approx(1 / steps) and history[7].timestamp == 1_700_000_000_007

    # One small page through the REST endpoint: its token leads to the next.
    import httpx

    headers = {"Authorization": f"Bearer {api_token(alice)}"}
    url = f"{live_server.url}/mlflow/api/2.0/mlflow/metrics/get-history"
    first = httpx.get(url, params={"run_id": run_id, "metric_key": "loss", "max_results": 3}, headers=headers).json()
    assert [m["step"] for m in first["metrics"]] == [0, 1, 2]
    second = httpx.get(
        url,
        params={"run_id": run_id, "metric_key": "loss", "max_results": 3, "page_token": first["next_page_token"]},
        headers=headers,
    ).json()
    assert [m["step"] for m in second["metrics"]] == [3, 4, 5]


def test_a_login_works_as_well_as_a_token_and_bad_credentials_are_refused(alice, live_server, monkeypatch):
    with mlflow_client_env(monkeypatch, live_server.url, basic=("alice", "pw-alice-123")):
        assert mlflow.set_experiment("basic").name == "basic"
    with mlflow_client_env(monkeypatch, live_server.url, basic=("alice", "wrong")):
        with pytest.raises(MlflowException) as refused:
            MlflowClient().get_experiment_by_name("basic")
    assert refused.value.error_code == "UNAUTHENTICATED"
    with mlflow_client_env(monkeypatch, live_server.url, token="tlp_not-a-token"):
        with pytest.raises(MlflowException) as refused:
            MlflowClient().get_experiment_by_name("basic")
    assert refused.value.error_code == "UNAUTHENTICATED"


def test_another_users_run_is_refused(alice, bob, live_server, monkeypatch):
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(alice)):
        run_id = MlflowClient().create_run("0").info.run_id
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(bob)):
        client = MlflowClient()
        for call in (
            lambda: client.get_run(run_id),
            lambda: client.log_metric(run_id, "loss", 1.0),
            lambda: client.set_terminated(run_id),
        ):
            with pytest.raises(MlflowException) as refused:
                call()
            assert refused.value.error_code == "PERMISSION_DENIED"
        # Each user has their own experiments: bob's "Default" holds none of alice's runs.
        assert client.search_runs(["0"]) == []
    assert not MetricStep.objects.filter(run_id=int(run_id)).exists()


def test_mlflows_limits_are_refused_with_its_error(as_alice):
    client = MlflowClient()
    run_id = client.create_run("0").info.run_id
    store = client._tracking_client.store  # the REST store, which sends one batch as given
    too_many = [mlflow.entities.Metric(f"m{i}", 1.0, 0, 0) for i in range(1001)]
    for kwargs, words in (
        ({"metrics": too_many, "params": [], "tags": []}, "at most 1000 metrics"),
        (
            {"metrics": [], "params": [mlflow.entities.Param(f"p{i}", "v") for i in range(101)], "tags": []},
            "at most 100 params",
        ),
        (
            {"metrics": [], "params": [], "tags": [mlflow.entities.RunTag(f"t{i}", "v") for i in range(101)]},
            "at most 100 tags",
        ),
        (
            {
                "metrics": [mlflow.entities.Metric("big", 1.0, 0, 0)],
                "params": [mlflow.entities.Param(f"p{i}", "y" * 6000) for i in range(100)],
                "tags": [mlflow.entities.RunTag(f"t{i}", "v" * 7900) for i in range(100)],
            },
            "at most 1000000 bytes",
        ),
        ({"metrics": [mlflow.entities.Metric("a//b", 1.0, 0, 0)], "params": [], "tags": []}, "Invalid metric name"),
        ({"metrics": [mlflow.entities.Metric("loss", 1.0, 0, -1)], "params": [], "tags": []}, "step -1"),
    ):
        with pytest.raises(MlflowException) as refused:
            store.log_batch(run_id, **kwargs)
        assert refused.value.error_code == "INVALID_PARAMETER_VALUE", refused.value.message
        assert words in refused.value.message
    assert client.get_run(run_id).data.metrics == {} and client.get_run(run_id).data.params == {}


def test_keys_as_trainers_write_them_are_taken(as_alice):
    client = MlflowClient()
    run_id = client.create_run("0").info.run_id
    keys = [
        "profiling/Time taken: GRPOTrainer._prepare_inputs",
        "val-core/openai/gsm8k/reward/mean_at_1",
        "train/loss",
        "eval_runtime",
        "perf/mfu/actor",
    ]
    client.log_batch(run_id, metrics=[mlflow.entities.Metric(k, float(i), 0, 0) for i, k in enumerate(keys)])
    assert client.get_run(run_id).data.metrics == {k: float(i) for i, k in enumerate(keys)}


def test_experiments_and_runs_can_be_searched(as_alice):
    client = MlflowClient()
    experiment_id = client.create_experiment("search-me", tags={"team": "rl"})
    with pytest.raises(MlflowException) as refused:
        client.create_experiment("search-me")
    assert refused.value.error_code == "RESOURCE_ALREADY_EXISTS"
    names = [e.name for e in client.search_experiments(filter_string="name LIKE 'search%'")]
    assert names == ["search-me"]
    assert client.get_experiment(experiment_id).tags == {"team": "rl"}
    ids = []
    for lr in ("1e-6", "3e-6"):
        run = client.create_run(experiment_id, run_name=f"lr {lr}")
        client.log_param(run.info.run_id, "lr", lr)
        client.log_metric(run.info.run_id, "acc", float(lr[0]), step=1)
        ids.append(run.info.run_id)
    found = client.search_runs([experiment_id], filter_string="params.lr = '3e-6'")
    assert [r.info.run_id for r in found] == [ids[1]]
    ordered = client.search_runs([experiment_id], order_by=["metrics.acc DESC"])
    assert [r.info.run_id for r in ordered] == [ids[1], ids[0]]
    client.delete_run(ids[0])
    assert [r.info.run_id for r in client.search_runs([experiment_id])] == [ids[1]]
    assert Run.objects.get(pk=int(ids[0])).archived
    client.restore_run(ids[0])
    assert len(client.search_runs([experiment_id])) == 2
    with pytest.raises(MlflowException) as refused:
        client.search_runs([experiment_id], filter_string="params.lr = '1' OR params.lr = '2'")
    assert refused.value.error_code == "INVALID_PARAMETER_VALUE"


def test_what_tirlab_does_not_offer_says_so_and_is_not_retried(as_alice, alice, live_server):
    import httpx

    with pytest.raises(MlflowException) as refused:
        MlflowClient().search_registered_models()
    assert refused.value.error_code == "ENDPOINT_NOT_FOUND" and "model registry" in refused.value.message
    headers = {"Authorization": f"Bearer {api_token(alice)}"}
    for method, path in (
        ("POST", "api/3.0/mlflow/traces"),
        ("POST", "api/2.0/mlflow/experiments/delete"),
        ("POST", "api/2.0/mlflow/runs/log-inputs"),
        ("GET", "api/2.0/mlflow/no/such/thing"),
    ):
        answer = httpx.request(method, f"{live_server.url}/mlflow/{path}", headers=headers, json={})
        assert answer.status_code == 404 and answer.json()["error_code"] == "ENDPOINT_NOT_FOUND", path


def test_an_over_long_param_or_tag_is_kept_cut_to_mlflows_limit_and_the_batch_written(as_alice, alice, live_server):
    # MLflow 3.17.2's server answers 200 and keeps the first 6,000 (params) or 8,000 (run tags)
    # characters (webapp/tracking/runs.py says where); a raw REST client sends whole values.
    import httpx

    run_id = MlflowClient().create_run("0").info.run_id
    prompt, note = "p" * 5990 + "0123456789abc", "n" * 9000
    answer = httpx.post(
        f"{live_server.url}/mlflow/api/2.0/mlflow/runs/log-batch",
        headers={"Authorization": f"Bearer {api_token(alice)}"},
        json={
            "run_id": run_id,
            "params": [{"key": "prompt", "value": prompt}, {"key": "lr", "value": "1e-6"}],
            "tags": [{"key": "note", "value": note}],
            "metrics": [{"key": "loss", "value": 0.5, "timestamp": 0, "step": 1}],
        },
    )
    assert (answer.status_code, answer.json()) == (200, {})
    data = MlflowClient().get_run(run_id).data
    assert data.params == {"prompt": prompt[:6000], "lr": "1e-6"} and len(data.params["prompt"]) == 6000
    assert data.tags["note"] == note[:8000] and data.metrics == {"loss": 0.5}
    warnings = Run.objects.get(pk=int(run_id)).log_lines.filter(level="warning").values_list("message", flat=True)
    assert sorted(warnings) == [
        "param 'prompt' was 6,003 characters long; its first 6,000 were kept, as MLflow keeps them",
        "tag 'note' was 9,000 characters long; its first 8,000 were kept, as MLflow keeps them",
    ]


def test_the_client_logs_an_over_long_param_as_mlflow_takes_it(as_alice):
    client = MlflowClient()
    run_id = client.create_run("0").info.run_id
    config = "{" + "x" * 6999 + "}"  # a whole config logged as one param, as trainers do
    client.log_param(run_id, "config", config)
    with mlflow.start_run(run_id=run_id):  # the fluent API sends them through log-batch
        mlflow.log_params({"config": config, "seed": 1})  # the same value again: cut alike, so unchanged
        mlflow.set_tag("summary", "s" * 8001)
    data = client.get_run(run_id).data
    assert data.params == {"config": config[:6000], "seed": "1"}
    assert data.tags["summary"] == "s" * 8000
    # Write-once compares what is kept: another value that differs only past 6,000 characters is the same param.
    client.log_param(run_id, "config", config[:6000] + "different tail")
    with pytest.raises(MlflowException) as refused:
        client.log_param(run_id, "config", "{}")
    assert refused.value.error_code == "INVALID_PARAMETER_VALUE"
    assert "Changing param values is not allowed" in refused.value.message
