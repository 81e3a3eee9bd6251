"""Evaluation runs: a checkpoint a run saved, or the model it starts from, evaluated on chosen benchmarks.

An evaluation is a run of its own (parent: the run it evaluates, relation "evaluation"), so it goes through
everything a run does: the same queue and capacity, a Ray job (`python -m trainer evaluate`,
webapp.runs.lifecycle), cancel, supervision by heartbeat, ingest, its trajectories on the rollouts page. Its
metrics and trajectories are recorded at the checkpoint's step (the training steps done when it was saved; 0
for the starting model), so the results page can put "run at step N" beside the run itself. Its config is
the parent's, with the datasets evaluated (data.val_dataset, data.extra_val_datasets) and the sampling
(schedule.eval_pass_k, schedule.eval_temperature) set as asked.
"""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from trainer.config import ConfigError, merge_overrides
from webapp.runs.models import Checkpoint, Run
from webapp.runs.services import run_create

MAX_SAMPLES = 1024


def run_evaluation_datasets(run: Run) -> list[str]:
    """The datasets a run evaluates on (its snapshot's: stored datasets as their files)."""
    data = run.config.get("data", {}) if isinstance(run.config, dict) else {}
    first = data.get("val_dataset")
    return [first, *data.get("extra_val_datasets", [])] if first else []


def _evaluation_errors(
    run: Run, *, step: int | None, datasets: list[str], samples: int, temperature: float | None
) -> tuple[dict[str, list[str]], Checkpoint | None]:
    errors: dict[str, list[str]] = {}
    if run.source != "tirlab":
        errors["non_field_errors"] = ["a run logged through the MLflow API keeps its checkpoints in its own trainer"]
        return errors, None
    if run.is_evaluation:
        errors["non_field_errors"] = [f"run {run.pk} is an evaluation; evaluate run {run.parent_id} instead"]
        return errors, None
    if run.config.get("engine") == "verl":
        errors["non_field_errors"] = [
            "a run of engine 'verl' saves verl's checkpoints; it evaluates in verl (schedule.eval_every)"
        ]
        return errors, None
    checkpoint = None
    if step is not None:
        checkpoint = run.checkpoints.filter(step=step).first()
        if checkpoint is None:
            saved = ", ".join(str(s) for s in run.checkpoints.values_list("step", flat=True))
            errors["step"] = [
                f"run {run.pk} saved no checkpoint after step {step}; "
                + (f"its checkpoints: {saved}" if saved else "it saved none (schedule.checkpoint_every)")
            ]
    if not datasets or not all(isinstance(ref, str) and ref.strip() for ref in datasets):
        errors["datasets"] = ["choose at least one dataset to evaluate on"]
    if not 1 <= samples <= MAX_SAMPLES:
        errors["samples"] = [f"between 1 (greedy) and {MAX_SAMPLES} samples a prompt"]
    elif temperature is not None and samples == 1:
        errors["temperature"] = ["one sample a prompt is greedy; sample at a temperature with 2 or more"]
    elif temperature is not None and temperature <= 0:
        errors["temperature"] = ["must be above 0"]
    return errors, checkpoint


def run_evaluate(
    *,
    run: Run,
    user: AbstractBaseUser,
    step: int | None,
    datasets: list[str] | None = None,
    samples: int = 1,
    temperature: float | None = None,
) -> Run:
    """Queue an evaluation of `run`'s checkpoint saved after `step` training steps (None: the model `run`
    starts from) on `datasets` (default: the run's own validation datasets), greedily (`samples` 1) or with
    `samples` samples a prompt at `temperature` (None: the run's rollout temperature). Refused by field
    (ConfigError: step, datasets, samples, temperature, and the config's own fields under config.)."""
    datasets = run_evaluation_datasets(run) if datasets is None else [ref.strip() for ref in datasets]
    errors, checkpoint = _evaluation_errors(run, step=step, datasets=datasets, samples=samples, temperature=temperature)
    if errors:
        raise ConfigError(errors)
    overrides: dict[str, Any] = {
        "data": {"val_dataset": datasets[0], "extra_val_datasets": datasets[1:]},
        "schedule": {"eval_pass_k": samples, "eval_temperature": temperature},
    }
    what = "base model" if checkpoint is None else f"step {checkpoint.step}"
    evaluation, _ = run_create(
        user=user,
        name=f"{run.name} · {what}"[: Run._meta.get_field("name").max_length],
        config=merge_overrides(run.config, overrides),
        experiment=run.experiment,
        description=f"Evaluation of run #{run.pk} ({what}).",
        tags=list(run.tags),
        preset=run.preset,
        parent=run,
        parent_relation="evaluation",
        evaluated_step=0 if checkpoint is None else checkpoint.step,
        evaluated_checkpoint="" if checkpoint is None else checkpoint.path,
    )
    return evaluation
