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

from trainer.config import DATASET_REF_PREFIX, ConfigError, merge_overrides
from webapp.datasets.models import Dataset
from webapp.runs.models import Checkpoint, Run
from webapp.runs.services import NAME_MAX, run_create

MAX_SAMPLES = 1024


def run_evaluation_datasets(run: Run) -> list[str]:
    """The datasets a run evaluates on (its snapshot's: stored datasets as their files)."""
    data = run.config.get("data", {}) if isinstance(run.config, dict) else {}
    first = data.get("val_dataset")
    return [first, *data.get("extra_val_datasets", [])] if first else []


def run_evaluation_fields(run: Run) -> list[tuple[str, str]]:
    """(config field, snapshot value) of each dataset a run evaluates on: data.val_dataset, then
    data.extra_val_datasets.0, …"""
    own = run_evaluation_datasets(run)
    fields = ["data.val_dataset", *(f"data.extra_val_datasets.{n}" for n in range(len(own) - 1))]
    return list(zip(fields, own, strict=False))


def stored_ref(run: Run, field: str, value: Any, user: AbstractBaseUser) -> Any:
    """A stored dataset's reference for the snapshot's file at `field`, where the run recorded it (its sources)
    and the same file is still there for `user`: a built-in one by its name, an upload as `dataset:<id>`, so the
    evaluation records where its data came from, as its parent did. Otherwise the file as it is."""
    source = run.sources.get(field) if isinstance(run.sources, dict) else None
    if not source or not value:
        return value
    stored = Dataset.objects.visible_to(user).filter(pk=source.get("id"), checksum=source.get("checksum")).first()
    if stored is None:
        return value
    return stored.name if stored.builtin else f"{DATASET_REF_PREFIX}{stored.pk}"


def run_evaluation_refs(run: Run, user: AbstractBaseUser) -> list[tuple[str, str]]:
    """(config field, reference) of each dataset a run evaluates on, stored ones by their reference
    (`stored_ref`): what an evaluation of the run evaluates on unless told otherwise."""
    return [(field, stored_ref(run, field, value, user)) for field, value in run_evaluation_fields(run)]


def _name(run: Run, what: str) -> str:
    suffix = f" · {what}"
    return run.name[: NAME_MAX - len(suffix)] + suffix


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
    if datasets is None:
        datasets = [ref for _, ref in run_evaluation_refs(run, user)]
    # Each dataset once, in the order given: a dataset named twice would be evaluated (and weigh) twice.
    datasets = list(dict.fromkeys(ref.strip() if isinstance(ref, str) else ref for ref in datasets))
    errors, checkpoint = _evaluation_errors(run, step=step, datasets=datasets, samples=samples, temperature=temperature)
    if errors:
        raise ConfigError(errors)
    data = run.config.get("data", {})
    overrides: dict[str, Any] = {
        "data": {
            "train_dataset": stored_ref(run, "data.train_dataset", data.get("train_dataset"), user),
            "val_dataset": datasets[0],
            "extra_val_datasets": datasets[1:],
        },
        "schedule": {"eval_pass_k": samples, "eval_temperature": temperature},
    }
    if run.config.get("sft", {}).get("dataset"):
        overrides["sft"] = {"dataset": stored_ref(run, "sft.dataset", run.config["sft"]["dataset"], user)}
    if run.config.get("tools", {}).get("search_corpus"):
        corpus = stored_ref(run, "tools.search_corpus", run.config["tools"]["search_corpus"], user)
        overrides["tools"] = {"search_corpus": corpus}
    what = "base model" if checkpoint is None else f"step {checkpoint.step}"
    evaluation, _ = run_create(
        user=user,
        name=_name(run, what),
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
