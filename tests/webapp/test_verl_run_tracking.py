"""A verl run tirlab launched, as its job reports it: verl's own tracking (verl/utils/tracking.py, loaded as
tests/webapp/test_mlflow_verl.py loads it) logs into the run tirlab created (MLFLOW_RUN_ID, the run token as
MLFLOW_TRACKING_TOKEN), and the launch wrapper's reporter adds what verl has no equivalent for, computed
per sample from verl's rollout dumps (trainer.verl.launch.publish_dumps). Together they fill the run's
headline charts; verl's validation samples and the dumps' GRPO groups show as rollouts; a run whose
MLflow start failed is flagged on its page."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.trainer.test_verl_samples import SAMPLES, write_dump
from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from tests.webapp.test_mlflow_verl import verl_tracking
from trainer.config import RunConfig
from trainer.contract import HEADLINE_METRICS
from trainer.presets import preset_config
from trainer.report.client import Reporter
from trainer.verl.command import run_paths
from trainer.verl.samples import publish_dumps
from webapp.core.tokens import hash_secret, new_secret
from webapp.runs.models import RUN_TOKEN_PREFIX, Run, RunStatus, Trajectory

pytestmark = pytest.mark.django_db(transaction=True)
pytest.importorskip("mlflow")


def verl_config() -> dict:
    config = preset_config("torl").model_dump(mode="json")
    config["engine"] = "verl"
    config["cluster"] = {"nnodes": 1, "gpus_per_node": 8, "tensor_parallel": 1}
    return RunConfig.model_validate(config).model_dump(mode="json")


@pytest.fixture
def launched(django_user_model):
    """A managed verl run as the launcher leaves it: running, with the token its job holds."""
    alice = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    token = new_secret(RUN_TOKEN_PREFIX)
    run = Run.objects.create(
        name="torl on verl",
        owner=alice,
        config=verl_config(),
        managed=True,
        status=RunStatus.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        token_hash=hash_secret(token),
        ray_job_id="tirlab-run-verl",
    )
    return alice, run, token


def verl_logs_a_step(verl, step: int) -> None:
    """What verl's trainer logs for a step (names from verl/trainer/ppo/metric_utils.py and ray_trainer.py)."""
    verl.log(
        {
            "training/global_step": step,
            "critic/score/mean": 0.2 * step,
            "response_length/mean": 310.0 + step,
            "tool_call_counts/mean": 0.75,
            "num_turns/mean": 3.5,
            "actor/pg_loss": -0.01 * step,
        },
        step=step,
    )


def test_verls_tracking_and_the_rollout_dumps_fill_the_headline_charts_and_rollouts(
    launched, live_server, monkeypatch, settings, tmp_path, client
) -> None:
    alice, run, token = launched
    settings.RUNS_DIR = tmp_path / "runs"
    tracking = verl_tracking()
    with mlflow_client_env(monkeypatch, live_server.url, token=token):
        monkeypatch.setenv("MLFLOW_RUN_ID", str(run.pk))
        verl = tracking.Tracking(
            project_name="tirlab", experiment_name=run.name, default_backend=["mlflow"], config={"trainer": {"n": 1}}
        )
        assert "mlflow" in verl.logger
        for step in (1, 2):
            verl_logs_a_step(verl, step)
        samples = [("What is 6*7?", "```python\nprint(6*7)\n```\n```output\n42\n```\n\\boxed{42}", 1.0)]
        tracking.ValidationGenerationsLogger("tirlab", run.name).log(["mlflow"], samples, 2)
        verl.finish()

    # The launch wrapper, beside verl: the dumps of steps 1 and 2, read once verl has written them.
    config = RunConfig.model_validate(run.config)
    out = tmp_path / "out"
    paths = run_paths(config, out_dir=str(out), config_path=str(out / "run-config.json"), name=run.name)
    for step in (1, 2):
        write_dump(Path(paths.rollout_data_dir), step, [{**item, "step": step} for item in SAMPLES])
    ingest = f"{live_server.url}/api/v1/runs/{run.pk}/ingest"
    with Reporter(out, report_url=ingest, run_token=token) as reporter:
        publish_dumps(config, Path(paths.rollout_data_dir), reporter, set(), final=True)

    run.refresh_from_db()
    # verl ending its MLflow run does not end a launched run: its launcher reports how verl's process ended.
    assert run.status == RunStatus.RUNNING
    assert run.mlflow.params == {"trainer/n": "1"}
    assert run.last_step == 2
    for key in HEADLINE_METRICS:
        assert key in run.metric_keys, key
    assert run.summary["accuracy"] == pytest.approx(0.5)  # from the dumps, per sample
    assert run.summary["response_length/mean"] == pytest.approx(312.0)  # verl's own, in tokens
    assert run.summary["critic/score/mean"] == pytest.approx(0.4)

    client.force_login(alice)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    headline = json.loads(page.split('id="run-page-data"')[1].split(">", 1)[1].split("</script>")[0])["headline"]
    assert headline[:5] == list(HEADLINE_METRICS)
    metrics = client.get(f"/api/v1/runs/{run.pk}/metrics/", {"keys": ",".join(HEADLINE_METRICS)}).json()
    assert {key: metrics["series"][key]["step"] for key in HEADLINE_METRICS} == dict.fromkeys(HEADLINE_METRICS, [1, 2])

    # The dumps' first GRPO group of each step (trajectories_to_report: 2 groups), with calls and outputs.
    groups = Trajectory.objects.filter(run=run, step=1).order_by("prompt_index", "sample_index")
    assert [(t.prompt_index, t.sample_index) for t in groups] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    first = groups[0]
    assert [turn["kind"] for turn in first.turns] == ["model", "tool", "model"]
    assert first.turns[1]["call"] == "print(6 * 7)\n" and first.tool_call_count == 1
    rollouts = client.get(f"/runs/{run.pk}/rollouts/?step=1").content.decode()
    assert "What is 6*7?" in rollouts and "print(6 * 7)" in rollouts
    assert Trajectory.objects.filter(run=run, step=2, prompt="What is 6*7?").exists()


def test_a_run_token_reads_and_writes_its_own_run_only(launched, live_server, monkeypatch, django_user_model) -> None:
    alice, run, token = launched
    other = Run.objects.create(name="other", owner=alice, config={}, source="mlflow", managed=False)
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    with mlflow_client_env(monkeypatch, live_server.url, token=token):
        client = MlflowClient()
        assert client.get_run(str(run.pk)).info.run_id == str(run.pk)
        for attempt in (
            lambda: client.log_metric(str(other.pk), "x", 1.0),
            lambda: client.create_run("0"),
            lambda: client.search_experiments(),
        ):
            with pytest.raises(MlflowException, match="run token reads and writes its own run"):
                attempt()
    # Once the run has ended, its token opens nothing.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    with mlflow_client_env(monkeypatch, live_server.url, token=token):
        with pytest.raises(MlflowException, match="Invalid run token"):
            MlflowClient().get_run(str(run.pk))
    # An API token of the owner is no key to a verl run's writes either way around: it is the owner's.
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(alice)):
        assert MlflowClient().get_run(str(run.pk)).info.run_id == str(run.pk)


def test_a_run_whose_mlflow_start_failed_is_flagged_on_its_page(
    launched, live_server, monkeypatch, settings, client
) -> None:
    alice, run, _ = launched
    tracking = verl_tracking()
    monkeypatch.setattr(tracking, "MLFLOW_SLEEP_SECONDS", 0)
    with mlflow_client_env(monkeypatch, live_server.url, token=new_secret(RUN_TOKEN_PREFIX)):
        monkeypatch.setenv("MLFLOW_RUN_ID", str(run.pk))
        verl = tracking.Tracking(
            project_name="tirlab", experiment_name=run.name, default_backend=["mlflow"], config={"trainer": {"n": 1}}
        )
        assert "mlflow" not in verl.logger  # verl's "Proceeding without MLflow tracking"
        verl_logs_a_step(verl, 1)  # goes nowhere
    client.force_login(alice)
    settings.VERL_SILENT_AFTER_S = 60
    assert 'id="verl-silent"' not in client.get(f"/runs/{run.pk}/").content.decode()
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(seconds=90))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="verl-silent"' in page and "Proceeding without MLflow tracking" in page
