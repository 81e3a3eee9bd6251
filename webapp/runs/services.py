"""Writes to runs: creation, forks, the status state machine."""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from trainer.config import ConfigError, merge_overrides, validate_config
from webapp.core.tokens import hash_secret, new_secret
from webapp.datasets.models import Dataset
from webapp.rewards.models import RewardConfig
from webapp.runs.events import publish_run_events
from webapp.runs.models import ACTIVE_STATUSES, RUN_TRANSITIONS, Experiment, Run, RunLogLine, RunStatus

RUN_TOKEN_PREFIX = "tlr"
DATASET_REF_PREFIX = "dataset:"


class IllegalTransition(Exception):
    def __init__(self, run: Run, target: str):
        self.current, self.target = run.status, target
        super().__init__(f"run {run.pk} cannot go from {run.status} to {target}")


def _resolve_dataset(ref: str | None, *, user: AbstractBaseUser, field: str, sources: dict) -> str | None:
    """Replace a stored dataset's reference by its file path; the snapshot must not change under the run."""
    if ref is None:
        return None
    if ref.startswith(DATASET_REF_PREFIX):
        key = ref.removeprefix(DATASET_REF_PREFIX)
        dataset = Dataset.objects.visible_to(user).filter(pk=int(key)).first() if key.isdigit() else None
        if dataset is None:
            raise ConfigError({field: [f"no dataset {ref!r} that you can use"]})
    else:
        dataset = Dataset.objects.filter(builtin=True, name=ref).first()
        if dataset is None:
            return ref
    sources[field] = {
        "id": dataset.pk,
        "name": dataset.name,
        "format": dataset.format,
        "checksum": dataset.checksum,
        "row_count": dataset.row_count,
    }
    return dataset.file_path


def resolve_config(
    *, config: dict[str, Any], user: AbstractBaseUser, reward_config: RewardConfig | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate a run config and resolve its references: (self-contained snapshot, where they came from)."""
    data = dict(config)
    if reward_config is not None:
        data["reward"] = {"name": reward_config.reward, "params": reward_config.params}
    sources: dict[str, Any] = {}
    try:
        resolved = validate_config(data).model_dump(mode="json")
        for key in ("train_dataset", "val_dataset"):
            resolved["data"][key] = _resolve_dataset(
                resolved["data"][key], user=user, field=f"data.{key}", sources=sources
            )
        if resolved["sft"].get("dataset"):
            resolved["sft"]["dataset"] = _resolve_dataset(
                resolved["sft"]["dataset"], user=user, field="sft.dataset", sources=sources
            )
    except ConfigError as exc:
        # Callers send the config under "config"; name the fields the way they sent them.
        raise ConfigError({f"config.{path}": messages for path, messages in exc.errors.items()}) from None
    if reward_config is not None:
        sources["reward"] = {"id": reward_config.pk, "name": reward_config.name}
    return resolved, sources


def _check_experiment(experiment: Experiment | None, user: AbstractBaseUser) -> None:
    if experiment is not None and not Experiment.objects.visible_to(user).filter(pk=experiment.pk).exists():
        raise ConfigError({"experiment": ["no such experiment"]})


@transaction.atomic
def run_create(
    *,
    user: AbstractBaseUser,
    name: str,
    config: dict[str, Any],
    experiment: Experiment | None = None,
    reward_config: RewardConfig | None = None,
    description: str = "",
    tags: list[str] | None = None,
    preset: str = "",
    parent: Run | None = None,
    parent_relation: str = "",
) -> tuple[Run, str]:
    """Create a queued run from a config; returns the run and its ingest token (shown once)."""
    _check_experiment(experiment, user)
    snapshot, sources = resolve_config(config=config, user=user, reward_config=reward_config)
    token = new_secret(RUN_TOKEN_PREFIX)
    run = Run.objects.create(
        name=name,
        description=description,
        tags=tags or [],
        experiment=experiment,
        owner=user,
        preset=preset,
        config=snapshot,
        sources=sources,
        token_hash=hash_secret(token),
        parent=parent,
        parent_relation=parent_relation,
    )
    run_log(run=run, message=f"run created ({'from ' + preset if preset else 'custom config'})")
    publish_run_events(run, [], list_event="run.created")
    return run, token


def run_fork(
    *, run: Run, user: AbstractBaseUser, overrides: dict[str, Any] | None = None, name: str | None = None
) -> tuple[Run, str]:
    """A new queued run with the parent's config and `overrides` deep-merged over it."""
    overrides = overrides or {}
    config = merge_overrides(run.config, overrides)
    reward = overrides.get("reward")
    # Another reward's parameters mean nothing to the new one: a new reward name replaces the section.
    if isinstance(reward, dict) and reward.get("name") not in (None, run.config["reward"]["name"]):
        config["reward"] = {"name": reward["name"], "params": reward.get("params", {})}
    return run_create(
        user=user,
        name=name or f"{run.name} (fork)",
        config=config,
        experiment=run.experiment,
        description=run.description,
        tags=list(run.tags),
        preset=run.preset,
        parent=run,
        parent_relation="fork",
    )


def run_transition(*, run: Run, status: str, error: str = "", reason: str = "") -> Run:
    """Move a run along the state machine; an illegal move raises IllegalTransition and changes nothing."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if status not in RUN_TRANSITIONS[locked.status]:
            raise IllegalTransition(locked, status)
        now = timezone.now()
        previous = locked.status
        locked.status = status
        fields = ["status"]
        if status == RunStatus.RUNNING and locked.started_at is None:
            locked.started_at = now
            fields.append("started_at")
        if status not in ACTIVE_STATUSES:
            locked.finished_at = now
            fields.append("finished_at")
        if error:
            locked.error = error
            fields.append("error")
        locked.save(update_fields=fields)
        run_log(
            run=locked,
            message=f"status {previous} → {status}" + (f": {reason or error}" if reason or error else ""),
            level="error" if status in (RunStatus.FAILED, RunStatus.LOST) else "info",
        )
        publish_run_events(
            locked,
            [("status", {"status": status, "previous": previous, "error": locked.error})],
            list_event="run.updated",
        )
    run.refresh_from_db()
    return run


def run_cancel(*, run: Run) -> Run:
    """Cancel a run that has not finished."""
    return run_transition(run=run, status=RunStatus.CANCELLED, reason="cancelled by user")


def run_log(*, run: Run, message: str, level: str = "info") -> RunLogLine:
    """A log line written by tirlab itself (not the trainer)."""
    line = RunLogLine.objects.create(run=run, time=timezone.now(), level=level, source="tirlab", message=message)
    publish_run_events(run, [("logs", {"lines": [log_line_payload(line)]})])
    return line


def log_line_payload(line: RunLogLine) -> dict[str, Any]:
    return {"time": line.time.isoformat(), "level": line.level, "source": line.source, "message": line.message}
