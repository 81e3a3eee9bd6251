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
    managed: bool = True,
    resume_from: str = "",
) -> tuple[Run, str]:
    """Create a queued run from a config; returns the run and its ingest token.

    A managed run is launched by tirlab as a Ray job once it commits and capacity allows (its
    launcher mints the token the trainer uses, so the token returned here is "" ). An unmanaged run
    is for a trainer you start yourself: the token returned (shown once) is the one it reports with.
    """
    _check_experiment(experiment, user)
    snapshot, sources = resolve_config(config=config, user=user, reward_config=reward_config)
    token = "" if managed else new_secret(RUN_TOKEN_PREFIX)
    run = Run.objects.create(
        name=name,
        description=description,
        tags=tags or [],
        experiment=experiment,
        owner=user,
        preset=preset,
        config=snapshot,
        sources=sources,
        token_hash=hash_secret(token) if token else "",
        parent=parent,
        parent_relation=parent_relation,
        managed=managed,
        resume_from=resume_from,
    )
    run_log(run=run, message=f"run created ({'from ' + preset if preset else 'custom config'})")
    publish_run_events(run, [], list_event="run.created")
    if managed:
        transaction.on_commit(_queue_launch)
    return run, token


def _queue_launch() -> None:
    from webapp.runs.tasks import launch_queued_runs

    launch_queued_runs.delay()


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
        iso = lambda t: t.isoformat() if t else None  # noqa: E731
        publish_run_events(
            locked,
            [
                (
                    "status",
                    {
                        "status": status,
                        "previous": previous,
                        "error": locked.error,
                        # The run page shows the timings; a status change is when they change.
                        "started_at": iso(locked.started_at),
                        "finished_at": iso(locked.finished_at),
                        "heartbeat_at": iso(locked.heartbeat_at),
                    },
                )
            ],
            list_event="run.updated",
        )
    run.refresh_from_db()
    return run


def run_cancel(*, run: Run) -> Run:
    """Cancel a run that has not finished; a managed run's Ray job is stopped once that commits.

    A queued run is never launched afterwards: the launcher only takes runs still queued."""
    run = run_transition(run=run, status=RunStatus.CANCELLED, reason="cancelled by user")
    if run.managed and run.ray_job_id:
        transaction.on_commit(lambda: _queue_stop(run.pk))
    return run


def _queue_stop(run_id: int) -> None:
    from webapp.runs.tasks import stop_run_job

    stop_run_job.delay(run_id)


def run_resume(*, run: Run, user: AbstractBaseUser, max_steps: int | None = None) -> tuple[Run, str]:
    """A new run that continues `run` from its last checkpoint: same config, its steps continue."""
    if run.status in ACTIVE_STATUSES:
        raise ConfigError({"non_field_errors": [f"run {run.pk} is {run.status}; resume it once it has ended"]})
    if not run.checkpoint_path:
        raise ConfigError({"non_field_errors": [f"run {run.pk} has no checkpoint to resume from"]})
    config = run.config if max_steps is None else merge_overrides(run.config, {"schedule": {"max_steps": max_steps}})
    return run_create(
        user=user,
        name=f"{run.name} (resumed)",
        config=config,
        experiment=run.experiment,
        description=run.description,
        tags=list(run.tags),
        preset=run.preset,
        parent=run,
        parent_relation="resume",
        resume_from=run.checkpoint_path,
    )


def run_log(*, run: Run, message: str, level: str = "info") -> RunLogLine:
    """A log line written by tirlab itself (not the trainer)."""
    line = RunLogLine.objects.create(run=run, time=timezone.now(), level=level, source="tirlab", message=message)
    publish_run_events(run, [("logs", {"lines": [log_line_payload(line)]})])
    return line


def log_line_payload(line: RunLogLine) -> dict[str, Any]:
    return {"time": line.time.isoformat(), "level": line.level, "source": line.source, "message": line.message}


def runs_set_archived(*, runs: list[Run], archived: bool) -> int:
    """Archive runs (hidden from the runs list unless asked for) or bring them back; returns how many changed."""
    changed = 0
    with transaction.atomic():
        for run in runs:
            if run.archived != archived:
                run.archived = archived
                run.save(update_fields=["archived"])
                publish_run_events(run, [], list_event="run.updated")
                changed += 1
    return changed
