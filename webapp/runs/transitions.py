"""The run state machine: which status may follow which, and the one function that moves a run.

Everything that changes a run's status goes through `run_transition`: the services (cancel), the
lifecycle (launch, reconcile) and the trainer's ingest. It needs only the models and the event
publisher, so any of them may import it without importing each other.
"""

from django.db import transaction
from django.utils import timezone

from webapp.runs.events import log_line_payload, publish_run_events
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


class IllegalTransition(Exception):
    def __init__(self, run: Run, target: str):
        self.current, self.target = run.status, target
        super().__init__(f"run {run.pk} cannot go from {run.status} to {target}")


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


def run_log(*, run: Run, message: str, level: str = "info") -> RunLogLine:
    """A log line written by tirlab itself (not the trainer): each transition leaves one."""
    line = RunLogLine.objects.create(run=run, time=timezone.now(), level=level, source="tirlab", message=message)
    publish_run_events(run, [("logs", {"lines": [log_line_payload(line)]})])
    return line
