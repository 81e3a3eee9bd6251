"""Websockets through the real ASGI stack (AuthMiddlewareStack, Redis channel layer, after-commit events)."""

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from webapp.asgi import application
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
async def close_thread_connections():
    yield
    # database_sync_to_async runs in one shared thread whose persistent connection would
    # otherwise outlive the test database.
    await database_sync_to_async(connections.close_all)()


def session_headers(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    return [(b"cookie", cookie.encode()), (b"origin", b"http://testserver")]


async def connect(path: str, user=None) -> tuple[WebsocketCommunicator, bool]:
    headers = await database_sync_to_async(session_headers)(user) if user else [(b"origin", b"http://testserver")]
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    return communicator, connected


def post_ingest(run_id: int, token: str, payload: dict) -> int:
    return (
        Client()
        .post(
            f"/api/v1/runs/{run_id}/ingest",
            json.dumps(payload),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        .status_code
    )


async def receive_event(communicator: WebsocketCommunicator, event: str) -> dict:
    while True:
        message = await communicator.receive_json_from(timeout=5)
        if message["event"] == event:
            return message


async def test_run_socket_receives_metrics_trajectories_and_logs_after_ingest(owner):
    run, token = await database_sync_to_async(run_create)(user=owner, name="live", config={}, managed=False)
    communicator, connected = await connect(f"/ws/runs/{run.pk}/", owner)
    assert connected
    assert (await communicator.receive_json_from(timeout=5))["event"] == "snapshot"
    payload = {
        "metrics": [{"step": 3, "values": {"accuracy": 0.75}}],
        "trajectories": [
            {"step": 3, "prompt_index": 0, "sample_index": 0, "prompt": "2+2?", "reward": 1.0, "correct": True}
        ],
        "logs": [{"seq": 1, "message": "step 3"}],
    }
    assert await database_sync_to_async(post_ingest)(run.pk, token, payload) == 200
    metrics = await receive_event(communicator, "metrics")
    assert metrics["data"]["steps"][0]["step"] == 3 and metrics["data"]["steps"][0]["values"] == {"accuracy": 0.75}
    trajectories = await receive_event(communicator, "trajectories")
    assert trajectories["data"]["trajectories"][0]["correct"] is True
    logs = await receive_event(communicator, "logs")
    assert logs["data"]["lines"][0]["message"] == "step 3"
    await communicator.disconnect()


async def test_run_socket_receives_status_changes(owner):
    run, _ = await database_sync_to_async(run_create)(user=owner, name="live", config={}, managed=False)
    communicator, _ = await connect(f"/ws/runs/{run.pk}/", owner)
    await database_sync_to_async(run_transition)(run=run, status="starting")
    status = await receive_event(communicator, "status")
    assert status["data"]["status"] == "starting" and status["data"]["previous"] == "queued"
    # Timings travel with a status change, so an open run page can show them.
    assert status["data"]["started_at"] is None and status["data"]["finished_at"] is None
    await database_sync_to_async(run_transition)(run=run, status="running")
    status = await receive_event(communicator, "status")
    assert status["data"]["started_at"].startswith("20") and status["data"]["finished_at"] is None
    await communicator.disconnect()


async def test_anonymous_sockets_are_closed(owner):
    run, _ = await database_sync_to_async(run_create)(user=owner, name="live", config={}, managed=False)
    for path in ("/ws/runs/", f"/ws/runs/{run.pk}/"):
        communicator, connected = await connect(path)
        assert not connected


async def test_another_users_run_socket_is_refused(owner, stranger, staff):
    run, _ = await database_sync_to_async(run_create)(user=owner, name="live", config={}, managed=False)
    communicator, connected = await connect(f"/ws/runs/{run.pk}/", stranger)
    assert not connected
    communicator, connected = await connect(f"/ws/runs/{run.pk}/", staff)
    assert connected
    await communicator.disconnect()


async def test_run_list_socket_only_carries_runs_the_user_may_see(owner, stranger, staff):
    owner_socket, _ = await connect("/ws/runs/", owner)
    stranger_socket, _ = await connect("/ws/runs/", stranger)
    staff_socket, _ = await connect("/ws/runs/", staff)
    run, _ = await database_sync_to_async(run_create)(user=owner, name="visible", config={})
    for socket in (owner_socket, staff_socket):
        message = await receive_event(socket, "run.created")
        assert message["run"]["id"] == run.pk and message["run"]["status"] == "queued"
    assert await stranger_socket.receive_nothing(timeout=0.5)
    for socket in (owner_socket, stranger_socket, staff_socket):
        await socket.disconnect()


async def test_events_are_not_sent_when_the_transaction_rolls_back(owner):
    from django.db import transaction

    run, _ = await database_sync_to_async(run_create)(user=owner, name="live", config={}, managed=False)
    communicator, _ = await connect(f"/ws/runs/{run.pk}/", owner)
    await communicator.receive_json_from(timeout=5)

    def transition_then_fail() -> None:
        with transaction.atomic():
            run_transition(run=run, status="starting")
            raise RuntimeError("database write failed after the transition")

    with pytest.raises(RuntimeError):
        await database_sync_to_async(transition_then_fail)()
    assert await communicator.receive_nothing(timeout=0.5)
    await communicator.disconnect()


async def test_run_socket_receives_the_trainers_phase(owner):
    run, token = await database_sync_to_async(run_create)(user=owner, name="cold start", config={}, managed=False)
    communicator, _ = await connect(f"/ws/runs/{run.pk}/", owner)
    assert (await communicator.receive_json_from(timeout=5))["data"]["phase"] is None  # the snapshot
    phase = {"name": "sft", "done": 340, "total": 1500, "eta_s": 120.0, "detail": "loss 0.31"}
    assert await database_sync_to_async(post_ingest)(run.pk, token, {"phase": phase}) == 200
    event = await receive_event(communicator, "phase")
    assert {key: event["data"][key] for key in phase} == phase and event["data"]["at"].startswith("20")
    await communicator.disconnect()
    # A page that connects later finds it in the snapshot.
    communicator, _ = await connect(f"/ws/runs/{run.pk}/", owner)
    assert (await communicator.receive_json_from(timeout=5))["data"]["phase"]["done"] == 340
    await communicator.disconnect()
