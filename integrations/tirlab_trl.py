"""Bring TRL's GRPO completions into tirlab: a callback for a live run, a command for a finished one.

TRL's GRPOTrainer (trl/trainer/grpo_trainer.py, `GRPOTrainer.log`, log_completions=True) writes each
logging step's completions to `<output_dir>/completions/completions_{step:05d}.parquet` (step, prompt,
completion, one column per reward function, advantage) and sends them only to W&B and Trackio. tirlab
reads those files as the run's trajectories when they arrive as artifacts of the run, under
`completions/`. This file needs only `mlflow` (or `mlflow-skinny`) and `transformers`; copy it next to
your training script or put tirlab's `integrations/` folder on PYTHONPATH.

Live, one line (the run is the one `report_to=["mlflow"]` starts, pointed at tirlab by
MLFLOW_TRACKING_URI and MLFLOW_TRACKING_TOKEN):

    trainer = GRPOTrainer(..., callbacks=[TirlabCompletionsCallback()])

TRL writes a step's file just after the callbacks of that step's log ran, so each file is sent at the
next logging step, and the last ones when training ends.

After the fact, from a finished run's output folder (its trainer_state.json's log history becomes the
metrics, its completions the trajectories):

    python integrations/tirlab_trl.py OUTPUT_DIR [--experiment NAME] [--run-name NAME] [--run-id ID]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

from transformers import TrainerCallback

ARTIFACT_PATH = "completions"
PATTERN = "completions_*.parquet"


def completion_files(output_dir: str | Path) -> list[Path]:
    return sorted((Path(output_dir) / ARTIFACT_PATH).glob(PATTERN))


class TirlabCompletionsCallback(TrainerCallback):
    """Uploads every new or changed `completions/completions_*.parquet` of the output folder to the run."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.sent: dict[str, tuple[int, int]] = {}

    def _send_new(self, args, state) -> None:
        if not state.is_world_process_zero:
            return
        import mlflow

        active = mlflow.active_run()
        if active is not None:
            self.run_id = active.info.run_id
        if self.run_id is None:
            return
        client = mlflow.MlflowClient()
        for path in completion_files(args.output_dir):
            stat = path.stat()
            stamp = (stat.st_size, stat.st_mtime_ns)
            if self.sent.get(path.name) != stamp:
                client.log_artifact(self.run_id, str(path), ARTIFACT_PATH)
                self.sent[path.name] = stamp

    def on_log(self, args, state, control, **kwargs):
        self._send_new(args, state)

    def on_train_end(self, args, state, control, **kwargs):
        # The MLflow callback may have ended the run already; its id is kept, and an ended run takes artifacts.
        self._send_new(args, state)


def _log_history(output_dir: Path) -> list[dict]:
    """The Trainer's log history: output_dir/trainer_state.json, else the latest checkpoint's."""
    candidates = [output_dir / "trainer_state.json"]
    checkpoints = sorted(
        output_dir.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[-1])
    )
    candidates += checkpoints[::-1]
    for path in candidates:
        if path.is_file():
            return json.loads(path.read_text()).get("log_history", [])
    return []


def _metric_key(key: str) -> str:
    # As transformers' MLflowCallback sanitises a key before it logs it.
    return re.sub(r"[^0-9A-Za-z_\-\.\ :/]", "_", key)


def import_output_dir(output_dir: Path, *, experiment: str | None, run_name: str | None, run_id: str | None) -> str:
    """Log a finished run's metrics and completions to tirlab; returns the run id."""
    import mlflow

    history = _log_history(output_dir)
    files = completion_files(output_dir)
    if not history and not files:
        raise SystemExit(f"{output_dir}: no trainer_state.json and no {ARTIFACT_PATH}/{PATTERN}; nothing to import")
    client = mlflow.MlflowClient()
    if run_id is None:
        experiment_id = mlflow.set_experiment(experiment or output_dir.resolve().parent.name).experiment_id
        run_id = client.create_run(experiment_id, run_name=run_name or output_dir.resolve().name).info.run_id
    metrics = []
    for entry in history:
        step = entry.get("step")
        if not isinstance(step, int):
            continue
        for key, value in entry.items():
            if (
                key != "step"
                and isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                metrics.append(mlflow.entities.Metric(_metric_key(key), float(value), 0, step))
    client.log_batch(run_id, metrics=metrics)  # the client sends it in batches of MLflow's size
    for path in files:
        client.log_artifact(run_id, str(path), ARTIFACT_PATH)
    client.set_terminated(run_id)
    print(f"run {run_id}: {len(metrics)} metric values, {len(files)} completion files", file=sys.stderr)
    return run_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", type=Path, help="the TRL / Trainer output_dir of a finished run")
    parser.add_argument("--experiment", help="experiment name (default: the folder above output_dir)")
    parser.add_argument("--run-name", help="run name (default: the output_dir's name)")
    parser.add_argument("--run-id", help="add to this existing run instead of creating one")
    args = parser.parse_args(argv)
    if not args.output_dir.is_dir():
        parser.error(f"{args.output_dir} is not a folder")
    import_output_dir(args.output_dir, experiment=args.experiment, run_name=args.run_name, run_id=args.run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
