"""Run events pushed to websockets; always published after the database commit."""

from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from webapp.runs.models import Run, RunLogLine

STAFF_LIST_GROUP = "runs.all"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def owner_list_group(owner_id: int) -> str:
    return f"runs.owner.{owner_id}"


def run_list_item(run: Run) -> dict[str, Any]:
    return {
        "id": run.pk,
        "name": run.name,
        "status": run.status,
        "experiment": run.experiment_id,
        "last_step": run.last_step,
        "summary": run.summary,
        "phase": run.phase,
        "created_at": run.created_at.isoformat() if run.created_at else None,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def run_timings(run: Run) -> dict[str, str | None]:
    """When the run started, finished and was last heard from (ISO 8601): what its page shows as
    timings, pushed with every status change and in the snapshot a socket opens with."""
    return {
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "heartbeat_at": _iso(run.heartbeat_at),
    }


def heartbeat_event(run: Run) -> tuple[str, dict[str, Any]]:
    """The "heartbeat" event a trainer's report sends the run's socket: each one is a heartbeat."""
    return ("heartbeat", {"heartbeat_at": _iso(run.heartbeat_at)})


def log_line_payload(line: RunLogLine) -> dict[str, Any]:
    return {"time": line.time.isoformat(), "level": line.level, "source": line.source, "message": line.message}


async def _send_all(messages: list[tuple[str, dict[str, Any]]]) -> None:
    layer = get_channel_layer()
    for group, message in messages:
        await layer.group_send(group, message)


def publish_run_events(run: Run, events: list[tuple[str, dict[str, Any]]], *, list_event: str | None = None) -> None:
    """Send `events` to the run's socket, and `list_event` to the run lists, once the transaction commits.

    One async_to_sync call for the lot: each costs a thread hop, which dominated small ingest batches.
    Robust: what was committed stays committed and the request succeeds when the channel layer (Redis)
    is down; the pages poll while their socket is away, so a lost push costs a viewer nothing.
    """
    messages = [
        (run_group(run.pk), {"type": "run.event", "event": event, "run_id": run.pk, "data": data})
        for event, data in events
    ]
    if list_event is not None:
        item = {"type": "runs.event", "event": list_event, "run": run_list_item(run)}
        messages += [(owner_list_group(run.owner_id), item), (STAFF_LIST_GROUP, item)]
    if messages:
        transaction.on_commit(lambda: async_to_sync(_send_all)(messages), robust=True)
