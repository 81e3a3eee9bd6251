"""TRL's GRPO completions into tirlab: integrations/tirlab_trl.py's callback during a run, its command after.

The files are TRL's: `<output_dir>/completions/completions_{step:05d}.parquet` with step, prompt,
completion, a column per reward function and advantage, written by `GRPOTrainer.log` right after the
callbacks of that log ran (trl 1.16 grpo_trainer.py). Here a Trainer callback registered after
tirlab's writes them at the same moment; the model is a tiny Llama trained by the HF Trainer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from webapp.runs.models import MetricStep, Run, Trajectory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # a model trains; a subprocess imports mlflow
pytest.importorskip("mlflow")
pd = pytest.importorskip("pandas")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "integrations"))


def completions_frame(step: int):
    return pd.DataFrame(
        {
            "step": [step] * 4,
            "prompt": ["What is 6*7?"] * 2 + ["What is 2+2?"] * 2,
            "completion": ["42", "41", "4", "5"],
            "accuracy_reward": [1.0, 0.0, 1.0, 0.0],
            "advantage": [0.7, -0.7, 0.7, -0.7],
        }
    )


def write_completions(output_dir: Path, step: int) -> None:
    folder = output_dir / "completions"
    folder.mkdir(parents=True, exist_ok=True)
    completions_frame(step).to_parquet(folder / f"completions_{step:05d}.parquet")


def test_the_callback_sends_each_steps_completions_to_the_run(
    django_user_model, live_server, monkeypatch, settings, tmp_path
):
    import torch
    from tirlab_trl import TirlabCompletionsCallback
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

    settings.RUNS_DIR = tmp_path / "runs"
    user = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    output_dir = tmp_path / "grpo"

    class WritesLikeGRPOTrainer(TrainerCallback):
        def on_log(self, args, state, control, **kwargs):
            write_completions(Path(args.output_dir), state.global_step)

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=32,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=16,
        )
    )
    data = [{"input_ids": torch.arange(8) % 32, "labels": torch.arange(8) % 32} for _ in range(16)]
    args = TrainingArguments(
        output_dir=str(output_dir),
        run_name="grpo-tiny",
        max_steps=3,
        logging_steps=1,
        per_device_train_batch_size=4,
        report_to=["mlflow"],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(user)):
        callbacks = [TirlabCompletionsCallback(), WritesLikeGRPOTrainer()]
        Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks).train()

    run = Run.objects.get(source="mlflow")
    assert run.status == "succeeded"
    stored = sorted(p.name for p in (tmp_path / "runs" / str(run.pk) / "artifacts" / "completions").iterdir())
    assert stored == ["completions_00001.parquet", "completions_00002.parquet", "completions_00003.parquet"]
    groups = Trajectory.objects.filter(run=run).values_list("step", "prompt_index", "sample_index", "reward")
    assert sorted(groups) == [(step, p, s, float(s == 0)) for step in (1, 2, 3) for p in (0, 1) for s in (0, 1)]


def test_the_command_imports_a_finished_runs_folder(django_user_model, live_server, settings, tmp_path):
    settings.RUNS_DIR = tmp_path / "runs"
    user = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    output_dir = tmp_path / "experiments" / "qwen-grpo"
    checkpoint = output_dir / "checkpoint-20"
    checkpoint.mkdir(parents=True)
    history = [
        {"step": s, "loss": 1.0 / s, "reward": s / 20, "learning_rate": 1e-6, "epoch": s / 40} for s in range(1, 21)
    ]
    history.append({"step": 20, "train_runtime": 123.4, "total_flos": 0.0})
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 20, "log_history": history}))
    for step in (10, 20):
        write_completions(output_dir, step)
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"{live_server.url}/mlflow",
        "MLFLOW_TRACKING_TOKEN": api_token(user),
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    }
    done = subprocess.run(
        [sys.executable, str(REPO / "integrations" / "tirlab_trl.py"), str(output_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    run = Run.objects.get(source="mlflow")
    assert (run.name, run.experiment.name, run.status) == ("qwen-grpo", "experiments", "succeeded")
    assert MetricStep.objects.filter(run=run).count() == 20 and run.summary["train_runtime"] == 123.4
    assert sorted(set(Trajectory.objects.filter(run=run).values_list("step", flat=True))) == [10, 20]

    empty = tmp_path / "empty"
    empty.mkdir()
    refused = subprocess.run(
        [sys.executable, str(REPO / "integrations" / "tirlab_trl.py"), str(empty)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "nothing to import" in refused.stderr
