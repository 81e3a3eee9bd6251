"""The trainer's phase (loading, SFT cold start, RL) from ingest to the run's API representation."""

import json

import pytest
from rest_framework.test import APIClient

from trainer.contract import MAX_PHASE_DETAIL
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

SFT = {"name": "sft", "done": 340, "total": 1500, "eta_s": 120.0, "detail": "loss 0.31"}


def ingest(run: Run, token: str, payload: dict):
    return APIClient().post(
        f"/api/v1/runs/{run.pk}/ingest",
        json.dumps(payload),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_a_reported_phase_is_stored_with_when_it_came(run_and_token):
    run, token = run_and_token
    assert ingest(run, token, {"phase": SFT}).status_code == 200
    run.refresh_from_db()
    assert {key: run.phase[key] for key in SFT} == SFT
    assert run.phase["at"] >= run.heartbeat_at.isoformat()[:19]


def test_the_latest_phase_wins_and_a_batch_without_one_keeps_it(run_and_token):
    run, token = run_and_token
    ingest(run, token, {"phase": SFT})
    ingest(run, token, {"phase": {"name": "rl", "done": 0, "total": 20}})
    ingest(run, token, {"metrics": [{"step": 0, "values": {"accuracy": 0.5}}]})
    run.refresh_from_db()
    assert (run.phase["name"], run.phase["done"], run.phase["total"], run.phase["eta_s"]) == ("rl", 0, 20, None)


@pytest.mark.parametrize(
    "phase, field, message",
    [
        ({**SFT, "name": "warmup"}, "phase.name", "'loading', 'sft', 'rl' or 'eval'"),
        ({**SFT, "done": 1501}, "phase", "done (1501) is more than total (1500)"),
        ({**SFT, "total": 0}, "phase.total", "greater than or equal to 1"),
        ({**SFT, "done": -1}, "phase.done", "greater than or equal to 0"),
        ({**SFT, "eta_s": -3.0}, "phase.eta_s", "greater than or equal to 0"),
        ({**SFT, "done": "340"}, "phase.done", "valid integer"),
        ({**SFT, "detail": "x" * (MAX_PHASE_DETAIL + 1)}, "phase.detail", f"at most {MAX_PHASE_DETAIL}"),
        ({**SFT, "percent": 22}, "phase.percent", "Extra inputs"),
    ],
)
def test_a_bad_phase_refuses_the_whole_batch_with_a_clear_message(run_and_token, phase, field, message):
    run, token = run_and_token
    response = ingest(run, token, {"phase": phase, "metrics": [{"step": 0, "values": {"accuracy": 0.5}}]})
    assert response.status_code == 400
    assert any(message in text for text in response.json()[field]), response.json()
    run.refresh_from_db()
    assert run.phase is None and run.heartbeat_at is None and run.last_step is None  # nothing written


def test_the_runs_api_shows_the_phase_and_null_before_one(api, run_and_token):
    run, token = run_and_token
    assert api.get(f"/api/v1/runs/{run.pk}/").json()["phase"] is None
    ingest(run, token, {"phase": SFT})
    shown = api.get(f"/api/v1/runs/{run.pk}/").json()["phase"]
    assert {key: shown[key] for key in SFT} == SFT and shown["at"].startswith("20")


def test_the_openapi_schema_documents_the_phase_in_and_out():
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    assert set(components["PhaseIn"]["properties"]) == {"name", "done", "total", "eta_s", "detail"}
    name = components["PhaseIn"]["properties"]["name"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
    assert components[name]["enum"] == ["loading", "sft", "rl", "eval"]
    assert "phase" in components["IngestBatchRequest"]["properties"]
    assert set(components["RunPhase"]["properties"]) == {"name", "done", "total", "eta_s", "detail", "at"}
    assert "phase" in components["Run"]["properties"]
