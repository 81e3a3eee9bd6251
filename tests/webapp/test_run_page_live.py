"""What an open run page is kept current with: heartbeats and timings over the run's socket, the SFT
cold start's metrics on their own steps, and a cancel answered in place."""

import json

import pytest
from channels.db import database_sync_to_async
from django.db import connections
from django.test import Client

from tests.webapp.test_websockets import connect, post_ingest, receive_event
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition


@pytest.fixture
async def close_thread_connections():
    yield
    await database_sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.usefixtures("close_thread_connections")
async def test_every_report_pushes_the_heartbeat_and_the_snapshot_has_the_timings(owner):
    run, token = await database_sync_to_async(run_create)(user=owner, name="live", config={}, managed=False)
    communicator, connected = await connect(f"/ws/runs/{run.pk}/", owner)
    assert connected
    snapshot = await communicator.receive_json_from(timeout=5)
    assert snapshot["event"] == "snapshot"
    assert {key: snapshot["data"][key] for key in ("started_at", "finished_at", "heartbeat_at")} == dict.fromkeys(
        ("started_at", "finished_at", "heartbeat_at")
    )
    assert await database_sync_to_async(post_ingest)(run.pk, token, {}) == 200  # a bare heartbeat
    beat = await receive_event(communicator, "heartbeat")
    stored = await database_sync_to_async(Run.objects.get)(pk=run.pk)
    assert beat["data"] == {"heartbeat_at": stored.heartbeat_at.isoformat()}
    await communicator.disconnect()

    # A page that connects later gets the timings in its snapshot.
    communicator, _ = await connect(f"/ws/runs/{run.pk}/", owner)
    snapshot = await communicator.receive_json_from(timeout=5)
    assert snapshot["data"]["started_at"] == stored.started_at.isoformat()
    assert snapshot["data"]["heartbeat_at"] == stored.heartbeat_at.isoformat()
    await communicator.disconnect()


@pytest.mark.django_db
def test_the_sft_metrics_keep_their_own_steps_and_do_not_move_the_last_step(owner):
    run, token = run_create(user=owner, name="cold start", config={}, managed=False)
    sft = [{"step": step, "values": {"sft/loss": 2.0 / step}} for step in range(1, 51)]
    ingest_batch(run_id=run.pk, token=token, payload={"metrics": sft})
    run.refresh_from_db()
    assert run.last_step is None  # no RL step yet
    assert run.metric_keys == ["sft/loss"] and run.summary == {"sft/loss": 2.0 / 50}
    rl = [{"step": step, "values": {"accuracy": step / 10}} for step in range(3)]
    ingest_batch(run_id=run.pk, token=token, payload={"metrics": rl})
    run.refresh_from_db()
    assert run.last_step == 2
    assert run.summary == {"sft/loss": 2.0 / 50, "accuracy": 0.2}
    series = Client()
    series.force_login(owner)
    body = series.get(f"/api/v1/runs/{run.pk}/metrics/?keys=sft/loss,accuracy&x=step").json()["series"]
    assert body["sft/loss"]["step"] == list(range(1, 51)) and body["accuracy"]["step"] == [0, 1, 2]


@pytest.mark.django_db
def test_the_run_pages_cancel_is_answered_as_json_for_its_script(owner):
    run, _ = run_create(user=owner, name="to stop", config={}, managed=False)
    run_transition(run=run, status=RunStatus.STARTING)
    run_transition(run=run, status=RunStatus.RUNNING)
    client = Client()
    client.force_login(owner)
    response = client.post(f"/runs/{run.pk}/cancel", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    body = json.loads(response.content)
    run.refresh_from_db()
    assert body["status"] == "cancelled" and body["message"] == f"Run #{run.pk} cancelled."
    assert body["finished_at"] == run.finished_at.isoformat() and body["started_at"] == run.started_at.isoformat()
    # Once more: it has ended, and the answer says so with its status.
    again = client.post(f"/runs/{run.pk}/cancel", HTTP_ACCEPT="application/json")
    assert again.status_code == 409
    assert json.loads(again.content)["status"] == "cancelled"
    assert "cannot be cancelled" in json.loads(again.content)["message"]
    # A plain form post still gets the page back.
    assert client.post(f"/runs/{run.pk}/cancel").status_code == 302


@pytest.mark.django_db
def test_the_run_page_counts_its_duration_from_the_timings_it_is_given(owner):
    run, _ = run_create(user=owner, name="timed", config={}, managed=False)
    run_transition(run=run, status=RunStatus.STARTING)
    run_transition(run=run, status=RunStatus.RUNNING)
    client = Client()
    client.force_login(owner)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    start = html.index('id="run-page-data"')
    page = json.loads(html[html.index(">", start) + 1 : html.index("</script>", start)])
    run.refresh_from_db()
    assert page["timings"] == {"started_at": run.started_at.isoformat(), "finished_at": None, "heartbeat_at": None}
    assert page["now"] >= run.started_at.isoformat() and page["sftPrefix"] == "sft/"
