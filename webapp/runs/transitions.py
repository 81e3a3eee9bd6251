"""The run state machine: which status may follow which, and the one function that moves a run.

Everything that changes a run's status goes through `run_transition`: the services (cancel), the
lifecycle (launch, reconcile) and the trainer's ingest. It needs only the models and the event
publisher, so any of them may import it without importing each other.
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from webapp.runs.events import log_line_payload, publish_run_events, run_timings
from webapp.runs.models import ACTIVE_STATUSES, FINISHED_STATUSES, Run, RunLogLine, RunStatus

# queued → starting → running → succeeded | failed | cancelled | lost. A run can fail or be
# cancelled before it runs (submission failed, cancelled while waiting), and be lost once a
# trainer may exist; finished runs never change again.
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.QUEUED: frozenset({RunStatus.STARTING, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.STARTING: frozenset({RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.LOST}),
    RunStatus.RUNNING: frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.LOST}),
    **{status: frozenset() for status in FINISHED_STATUSES},
}
# A run reported through the MLflow API (source "mlflow") is not launched by tirlab: it is running from its
# creation, and its trainer moves it as MLflow lets a client move a run, from any status to any other
# (end it FINISHED, FAILED or KILLED, resume an ended one with start_run(run_id=...) or MLFLOW_RUN_ID,
# correct an ending); tirlab marks it lost when it falls silent, and it runs again when its trainer
# reports again.
_EXTERNAL_STATUSES = (RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.LOST)
EXTERNAL_RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.QUEUED: frozenset(),
    RunStatus.STARTING: frozenset(),
    **{status: frozenset(_EXTERNAL_STATUSES) - {status} for status in _EXTERNAL_STATUSES},
}


def run_transitions(run: Run) -> dict[str, frozenset[str]]:
    """The state machine that applies to `run`."""
    return EXTERNAL_RUN_TRANSITIONS if run.source == "mlflow" else RUN_TRANSITIONS


class IllegalTransition(Exception):
    def __init__(self, run: Run, target: str):
        self.current, self.target = run.status, target
        super().__init__(f"run {run.pk} cannot go from {run.status} to {target}")


def run_transition(
    *, run: Run, status: str, error: str = "", reason: str = "", end_time: datetime | None = None
) -> Run:
    """Move a run along the state machine; an illegal move raises IllegalTransition and changes nothing.
    `end_time` is when a run that ends ended, when its trainer says so (MLflow's end_time); now otherwise."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if status not in run_transitions(locked)[locked.status]:
            raise IllegalTransition(locked, status)
        now = timezone.now()
        previous = locked.status
        locked.status = status
        fields = ["status"]
        if status == RunStatus.RUNNING and locked.started_at is None:
            locked.started_at = now
            fields.append("started_at")
        if status not in ACTIVE_STATUSES:
            locked.finished_at = end_time or now
            fields.append("finished_at")
        elif locked.finished_at is not None:
            # An external run running again (resumed) has not finished.
            locked.finished_at = None
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
            [
                (
                    "status",
                    # The run page shows the timings; a status change is when they change.
                    {"status": status, "previous": previous, "error": locked.error, **run_timings(locked)},
                )
            ],
            list_event="run.updated",
        )
    run.refresh_from_db()
    return run


def run_log(*, run: Run, message: str, level: str = "info") -> RunLogLine:
    """A log line written by tirlab itself (not the trainer): each transition leaves one."""
    line = RunLogLine.objects.create(run=run, time=timezone.now(), level=level, source="tirlab", message=message)
    publish_run_events(run, [("logs", {"lines": [log_line_payload(line)]})])
    return line
