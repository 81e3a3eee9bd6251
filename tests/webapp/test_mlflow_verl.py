"""verl's own tracking backend (verl/utils/tracking.py, `trainer.logger=['mlflow']`) against a live tirlab: its
runs, and its validation metrics as the results table's columns.

verl's package imports its GPU stack on import (`verl/__init__.py` needs tensordict and more), so its
tracking module is loaded from the installed verl (requirements-dev-nodeps.txt, no dependencies) by its
file path; the classes and calls are verl's own: `Tracking(...)`, `.log(data, step)`,
`ValidationGenerationsLogger.log(["mlflow"], samples, step)` and `.finish()`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from webapp.runs.models import Run, Trajectory
from webapp.runs.results import results_table

pytestmark = pytest.mark.django_db(transaction=True)
pytest.importorskip("mlflow")
pytest.importorskip("orjson")


def verl_tracking():
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        pytest.skip("verl is not installed (make dev-deps installs it without its dependencies)")
    path = Path(spec.origin).parent / "utils" / "tracking.py"
    module_spec = importlib.util.spec_from_file_location("verl_utils_tracking", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


# A slice of verl's ppo_trainer.yaml as the trainer hands it to Tracking (lists and all).
CONFIG = {
    "data": {"train_batch_size": 128, "max_prompt_length": 1024, "train_files": ["gsm8k/train.parquet"]},
    "actor_rollout_ref": {
        "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
        "actor": {"optim": {"lr": 1e-6}, "use_kl_loss": False, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28},
        "rollout": {"name": "vllm", "n": 16, "temperature": 1.0, "val_kwargs": {"n": 1, "do_sample": False}},
    },
    "algorithm": {"adv_estimator": "grpo", "use_kl_in_reward": False},
    "trainer": {
        "logger": ["console", "mlflow"],
        "project_name": "verl_grpo",
        "experiment_name": "qwen05b",
        "log_val_generations": 2,
    },
}


def test_verl_logs_its_config_metrics_and_validation_samples_into_tirlab(
    django_user_model, live_server, monkeypatch, settings, tmp_path, client
):
    settings.RUNS_DIR = tmp_path / "runs"
    alice = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    verl = verl_tracking()
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(alice)):
        tracking = verl.Tracking(
            project_name="verl_grpo", experiment_name="qwen05b", default_backend=["mlflow"], config=CONFIG
        )
        assert "mlflow" in tracking.logger  # verl swallows a failed start; it must not have failed
        for step in (1, 2):
            tracking.log(
                {
                    "actor/pg_loss": -0.1 * step,
                    "critic/score/mean": 0.3 * step,
                    "perf/mfu/actor": 0.41,
                    "timing_s/gen": 12.5,
                    "val-core/openai/gsm8k/reward/mean@1": 0.2 * step,
                    "response_length/mean": 230.0 + step,
                },
                step=step,
            )
        samples = [("Question: 6*7?", "The answer is \\boxed{42}", 1.0), ("Question: 9*9?", "\\boxed{18}", 0.0)]
        verl.ValidationGenerationsLogger("verl_grpo", "qwen05b").log(["mlflow"], samples, 2)
        tracking.finish()

    run = Run.objects.get(source="mlflow")
    assert run.name == "qwen05b" and run.experiment.name == "verl_grpo" and run.status == "succeeded"
    # verl flattens its config with '/' and turns lists into {list_len, 0, 1, ...}.
    assert run.config["actor_rollout_ref/rollout/n"] == "16"
    assert run.config["trainer/logger/list_len"] == "2" and run.config["trainer/logger/1"] == "mlflow"
    # verl sanitises '@' to '_at_' before it logs.
    assert "val-core/openai/gsm8k/reward/mean_at_1" in run.metric_keys and run.last_step == 2
    assert run.summary["critic/score/mean"] == pytest.approx(0.6)

    trajectories = list(Trajectory.objects.filter(run=run).order_by("prompt_index"))
    assert [(t.step, t.prompt, t.turns[0]["text"], t.reward, t.correct) for t in trajectories] == [
        (2, "Question: 6*7?", "The answer is \\boxed{42}", 1.0, True),
        (2, "Question: 9*9?", "\\boxed{18}", 0.0, False),
    ]
    client.force_login(alice)
    page = client.get(f"/runs/{run.pk}/rollouts/?step=2").content.decode()
    assert "Question: 6*7?" in page and "\\boxed{18}" in page


def test_verl_validation_metrics_logged_through_mlflow_are_the_results_tables_columns(
    django_user_model, live_server, monkeypatch, settings, tmp_path
):
    settings.RUNS_DIR = tmp_path / "runs"
    alice = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    verl = verl_tracking()
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(alice)):
        tracking = verl.Tracking(
            project_name="verl_grpo", experiment_name="torl-1.5b", default_backend=["mlflow"], config=CONFIG
        )
        assert "mlflow" in tracking.logger
        # verl's validation (ray_trainer._validate): one mean@1 per data source, at the steps it validates.
        tracking.log({"actor/pg_loss": -0.1, "val-core/aime24/acc/mean@1": 0.1, "val-core/math500/acc/mean@1": 0.55}, 0)
        tracking.log({"actor/pg_loss": -0.2}, 1)
        tracking.log({"val-core/aime24/acc/mean@1": 0.2667, "val-core/math500/acc/mean@1": 0.758}, 2)
        tracking.finish()

    run = Run.objects.get(source="mlflow")
    assert "val-core/aime24/acc/mean_at_1" in run.metric_keys  # verl's MLflow logger writes '@' so
    table = results_table(runs=[run], metric="accuracy")
    assert table.columns == ["aime24", "math500"]
    [row] = table.rows
    assert row.step == 2 and row.cells == pytest.approx({"aime24": 0.2667, "math500": 0.758})

    api = APIClient()
    api.force_login(alice)
    body = api.get("/api/v1/results/", {"runs": str(run.pk), "at": "step", "step": 0}).json()
    assert body["columns"] == ["aime24", "math500"]
    assert body["rows"][0]["cells"] == pytest.approx({"aime24": 0.1, "math500": 0.55})
