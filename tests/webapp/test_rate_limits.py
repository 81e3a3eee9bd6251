"""Per-credential rate limits: a client over its limit is answered 429 with Retry-After before anything is
written, every answer says where the client stands (RateLimit-*), one client's bucket never slows another,
and without Redis the limits step aside rather than fail requests.

The limits here refill one request every 10 s, so a slow machine cannot refill a bucket mid-test.
"""

import json

import pytest

from tests.webapp.conftest import client_for
from webapp.accounts.services import api_token_create
from webapp.runs.models import MetricStep

pytestmark = pytest.mark.django_db

SLOW = (0.1, 3)  # one request per 10 s sustained, 3 at once


def post_step(client, run, token: str, step: int):
    return client.post(
        f"/api/v1/runs/{run.pk}/ingest",
        data=json.dumps({"metrics": [{"step": step, "values": {"accuracy": 0.5}}]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_a_trainer_over_its_limit_gets_429_with_retry_after_and_nothing_of_it_is_written(client, make_run, settings):
    settings.INGEST_RATE_LIMIT = SLOW
    run, token = make_run()
    answers = [post_step(client, run, token, step) for step in range(5)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    refused = answers[3]
    assert 1 <= int(refused["Retry-After"]) <= 10
    assert refused["RateLimit-Limit"] == "3" and refused["RateLimit-Remaining"] == "0"
    assert "throttled" in refused.json()["detail"]
    assert sorted(MetricStep.objects.filter(run=run).values_list("step", flat=True)) == [0, 1, 2]


def test_a_refused_report_is_not_a_heartbeat(client, make_run, settings):
    settings.INGEST_RATE_LIMIT = (0.1, 1)
    run, token = make_run()
    assert post_step(client, run, token, 0).status_code == 200
    run.refresh_from_db()
    beat = run.heartbeat_at
    assert post_step(client, run, token, 1).status_code == 429
    run.refresh_from_db()
    assert run.heartbeat_at == beat


def test_one_runaway_trainer_does_not_slow_another(client, make_run, settings):
    settings.INGEST_RATE_LIMIT = SLOW
    runaway, runaway_token = make_run(name="runaway")
    calm, calm_token = make_run(name="calm")
    while post_step(client, runaway, runaway_token, 0).status_code != 429:
        pass
    assert post_step(client, calm, calm_token, 0).status_code == 200


def test_every_answer_says_how_many_requests_remain_and_when_the_bucket_is_full(client, make_run, settings):
    settings.INGEST_RATE_LIMIT = SLOW
    run, token = make_run()
    first, second = post_step(client, run, token, 0), post_step(client, run, token, 1)
    assert (first["RateLimit-Limit"], first["RateLimit-Remaining"]) == ("3", "2")
    assert second["RateLimit-Remaining"] == "1"
    assert 10 <= int(second["RateLimit-Reset"]) <= 20
    assert "Retry-After" not in second


def test_the_api_limits_each_token_and_each_browser_session_apart(owner, settings):
    settings.API_RATE_LIMIT = (0.1, 2)
    _, secret = api_token_create(user=owner, name="script")
    script = client_for(None)
    script.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert [script.get("/api/v1/runs/").status_code for _ in range(3)] == [200, 200, 429]
    assert client_for(owner).get("/api/v1/runs/").status_code == 200


def test_without_redis_the_limits_step_aside_and_requests_are_served(client, make_run, settings, caplog):
    settings.INGEST_RATE_LIMIT = (0.1, 1)
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    run, token = make_run()
    answers = [post_step(client, run, token, step) for step in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert "RateLimit-Limit" not in answers[0]
    assert MetricStep.objects.filter(run=run).count() == 3
