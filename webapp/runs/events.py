"""Run events pushed to websockets; always published after the database commit."""

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from webapp.runs.models import Run

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
        "created_at": run.created_at.isoformat() if run.created_at else None,
    }


def _send(groups: list[str], message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    for group in groups:
        async_to_sync(layer.group_send)(group, message)


def publish_run_event(
    run: Run, event: str | None, data: dict[str, Any] | None = None, *, list_event: str | None = None
) -> None:
    """Send `event` to the run's socket, and `list_event` to the run lists, after the commit."""
    owner_id, run_id = run.owner_id, run.pk
    run_message = {"type": "run.event", "event": event, "run_id": run_id, "data": data or {}}
    list_message = {"type": "runs.event", "event": list_event, "run": run_list_item(run)}

    def send() -> None:
        if event is not None:
            _send([run_group(run_id)], run_message)
        if list_event is not None:
            _send([owner_list_group(owner_id), STAFF_LIST_GROUP], list_message)

    transaction.on_commit(send)
