"""Who sees what: an owner, another user, staff and an anonymous client against every endpoint."""

import json

import pytest
from rest_framework.test import APIClient

from webapp.datasets.models import Dataset
from webapp.rewards.models import RewardConfig
from webapp.runs.models import Experiment

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(owner, make_run):
    experiment = Experiment.objects.create(name="e", owner=owner)
    run, token = make_run(name="r", experiment=experiment)
    dataset = Dataset.objects.create(
        name="d", owner=owner, format="jsonl_qa", row_count=1, size_bytes=1, checksum="x", path="/x"
    )
    reward = RewardConfig.objects.create(name="rc", owner=owner, reward="torl", params={})
    # Its run is queued, so "e" cannot be deleted by anyone; "empty" can, by its owner.
    empty = Experiment.objects.create(name="empty", owner=owner)
    return {"experiment": experiment, "run": run, "dataset": dataset, "reward": reward, "empty": empty}


def clients(owner, stranger, staff) -> dict[str, APIClient]:
    made = {}
    for name, user in (("owner", owner), ("stranger", stranger), ("staff", staff), ("anonymous", None)):
        made[name] = APIClient()
        if user is not None:
            made[name].force_login(user)
    return made


READS = [
    "/api/v1/experiments/{experiment}/",
    "/api/v1/runs/{run}/",
    "/api/v1/runs/{run}/metrics",
    "/api/v1/runs/{run}/trajectories",
    "/api/v1/runs/{run}/logs",
    "/api/v1/datasets/{dataset}/",
    "/api/v1/reward-configs/{reward}/",
]
EXPECTED_READ = {"owner": 200, "staff": 200, "stranger": 404, "anonymous": 401}


@pytest.mark.parametrize("url", READS)
@pytest.mark.parametrize("who", EXPECTED_READ)
def test_read_detail(rows, owner, stranger, staff, url, who):
    client = clients(owner, stranger, staff)[who]
    ids = {k: v.pk for k, v in rows.items()}
    assert client.get(url.format(**ids)).status_code == EXPECTED_READ[who]


# The owner's rows in each list.
OWNED = {"/api/v1/experiments/": 2, "/api/v1/runs/": 1, "/api/v1/datasets/": 1, "/api/v1/reward-configs/": 1}
LISTS = list(OWNED)


@pytest.mark.parametrize("url", LISTS)
@pytest.mark.parametrize("who", ["owner", "staff", "stranger"])
def test_lists_hold_only_what_the_user_may_see(rows, owner, stranger, staff, url, who):
    count = 0 if who == "stranger" else OWNED[url]
    assert clients(owner, stranger, staff)[who].get(url).json()["count"] == count


@pytest.mark.parametrize("url", [*LISTS, "/api/v1/tokens/", "/api/v1/rewards/", "/api/v1/run-config/schema/"])
def test_anonymous_is_refused_everywhere(url):
    assert APIClient().get(url).status_code == 401


WRITES = [
    ("patch", "/api/v1/experiments/{experiment}/", {"description": "x"}),
    ("patch", "/api/v1/runs/{run}/", {"name": "x"}),
    ("post", "/api/v1/runs/{run}/cancel/", None),
    ("post", "/api/v1/runs/{run}/fork/", {}),
    ("patch", "/api/v1/datasets/{dataset}/", {"description": "x"}),
    ("patch", "/api/v1/reward-configs/{reward}/", {"description": "x"}),
    ("delete", "/api/v1/experiments/{empty}/", None),
]


@pytest.mark.parametrize("method, url, body", WRITES)
@pytest.mark.parametrize("who", ["stranger", "anonymous"])
def test_others_cannot_change_a_users_rows(rows, owner, stranger, staff, method, url, body, who):
    client = clients(owner, stranger, staff)[who]
    ids = {k: v.pk for k, v in rows.items()}
    response = getattr(client, method)(url.format(**ids), body, format="json")
    assert response.status_code in (401, 403, 404)
    rows["run"].refresh_from_db()
    assert rows["run"].status == "queued" and rows["run"].name == "r"


@pytest.mark.parametrize("method, url, body", WRITES)
def test_owner_can_change_their_rows(rows, owner, stranger, staff, method, url, body):
    ids = {k: v.pk for k, v in rows.items()}
    response = getattr(clients(owner, stranger, staff)["owner"], method)(url.format(**ids), body, format="json")
    assert response.status_code in (200, 201, 204)


def test_a_stranger_cannot_fork_into_their_account_or_use_anothers_experiment(rows, stranger):
    client = APIClient()
    client.force_login(stranger)
    response = client.post("/api/v1/runs/", {"name": "x", "experiment": rows["experiment"].pk}, format="json")
    assert response.status_code == 400 and "experiment" in response.json()


def test_builtin_rows_are_visible_to_every_user_but_not_editable(stranger):
    builtin = RewardConfig.objects.create(name="torl", builtin=True, reward="torl", params={})
    client = APIClient()
    client.force_login(stranger)
    assert client.get(f"/api/v1/reward-configs/{builtin.pk}/").status_code == 200
    assert client.delete(f"/api/v1/reward-configs/{builtin.pk}/").status_code == 403


def test_pages_require_login(client):
    for url in ("/", "/tokens/"):
        assert client.get(url).status_code == 302
    assert client.get("/accounts/login/").status_code == 200


def test_ingest_needs_no_session_only_the_run_token(rows, make_run):
    run, token = make_run(name="other")
    response = APIClient().post(
        f"/api/v1/runs/{run.pk}/ingest",
        json.dumps({"heartbeat": True}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200
