"""Writes to the runs that trainers tirlab does not launch report themselves, through the MLflow API
(webapp.tracking): created running and unmanaged by run_create's rules for names and experiments;
their params grow their config and never change it; every report is a heartbeat."""

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from trainer.config import ConfigError
from webapp.runs.events import publish_run_events
from webapp.runs.models import Experiment, Run, RunStatus
from webapp.runs.services import experiment_errors_for_run, run_metadata_errors
from webapp.runs.transitions import run_log, run_transition


@transaction.atomic
def external_run_create(
    *,
    user: AbstractBaseUser,
    name: str,
    experiment: Experiment | None = None,
    description: str = "",
    started_at: datetime | None = None,
    logged_by: str = "",
) -> Run:
    """A run that a trainer tirlab does not launch reports itself through the MLflow API: running
    from its creation, unmanaged, its config the params its trainer logs (external_run_add_params).

    Its name and experiment follow run_create's rules; a run given no name is named after its id,
    as MLflow names one. `logged_by` (the trainer's program) goes into its first log line."""
    name = name.strip()
    # A blank name is allowed here (it is named below); any other follows run_create's rules.
    errors = run_metadata_errors(name=name) if name else {}
    errors.update(experiment_errors_for_run(experiment, user))
    if errors:
        raise ConfigError(errors)
    now = timezone.now()
    run = Run.objects.create(
        name=name or "mlflow run",
        description=description,
        experiment=experiment,
        owner=user,
        config={},
        status=RunStatus.RUNNING,
        started_at=started_at or now,
        heartbeat_at=now,
        managed=False,
        source="mlflow",
    )
    if not name:
        run.name = f"mlflow run {run.pk}"
        run.save(update_fields=["name"])
    run_log(run=run, message="created through the MLflow API" + (f" by {logged_by}" if logged_by else ""))
    publish_run_events(run, [], list_event="run.created")
    return run


class ParamsChanged(ConfigError):
    """Params logged again with other values; `changed` maps each key to (logged, attempted)."""

    def __init__(self, changed: dict[str, tuple[str, str]]):
        self.changed = changed
        super().__init__(
            {
                f"params.{key}": [f"was logged as {old!r}; a logged param keeps its value (attempted {new!r})"]
                for key, (old, new) in changed.items()
            }
        )


def external_run_add_params(*, run: Run, params: dict[str, str]) -> list[str]:
    """Add params to an external run's config; returns the keys that were new. A param is written
    once: logged again with its value it changes nothing, with another value the whole call is
    refused (ParamsChanged) and nothing is added. The caller holds the run's row lock."""
    changed = {
        key: (run.config[key], value) for key, value in params.items() if key in run.config and run.config[key] != value
    }
    if changed:
        raise ParamsChanged(changed)
    new = [key for key in params if key not in run.config]
    if new:
        run.config = {**run.config, **{key: params[key] for key in new}}
        run.save(update_fields=["config"])
    return new


def external_run_beat(*, run: Run) -> None:
    """Its trainer reported: the run's heartbeat, and a run marked lost runs again."""
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(heartbeat_at=now)
    run.heartbeat_at = now
    if run.status == RunStatus.LOST and not run.managed:
        run_transition(run=run, status=RunStatus.RUNNING, reason="its trainer reports again")
