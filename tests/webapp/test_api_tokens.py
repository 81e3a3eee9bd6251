import pytest
from rest_framework.test import APIClient

from webapp.accounts.models import ApiToken
from webapp.core.tokens import hash_secret

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_token_secret_is_shown_once_and_stored_hashed(api):
    body = api.post("/api/v1/tokens/", {"name": "cluster script"}, format="json").json()
    secret = body["token"]
    stored = ApiToken.objects.get(pk=body["id"])
    assert stored.key_hash == hash_secret(secret) and secret not in stored.key_hash
    assert "token" not in api.get(f"/api/v1/tokens/{body['id']}/").json()
    assert all("token" not in t for t in api.get("/api/v1/tokens/").json()["results"])


def test_bearer_token_acts_as_its_user(api, owner, make_run):
    make_run(name="mine")
    secret = api.post("/api/v1/tokens/", {"name": "s"}, format="json").json()["token"]
    response = bearer(secret).get("/api/v1/runs/")
    assert response.status_code == 200
    assert [r["owner"] for r in response.json()["results"]] == [owner.username]


def test_revoked_token_is_refused(api):
    body = api.post("/api/v1/tokens/", {"name": "s"}, format="json").json()
    assert api.delete(f"/api/v1/tokens/{body['id']}/").status_code == 204
    assert ApiToken.objects.get(pk=body["id"]).revoked_at is not None
    assert bearer(body["token"]).get("/api/v1/runs/").status_code == 401


def test_unknown_token_and_run_token_do_not_authenticate(run_and_token):
    _, run_token = run_and_token
    assert bearer("tlp_made-up").get("/api/v1/runs/").status_code == 401
    assert bearer(run_token).get("/api/v1/runs/").status_code in (401, 403)


def test_users_see_only_their_own_tokens(api, stranger):
    api.post("/api/v1/tokens/", {"name": "alice's"}, format="json")
    theirs = APIClient()
    theirs.force_login(stranger)
    assert theirs.get("/api/v1/tokens/").json()["results"] == []


def test_tokens_page_shows_a_new_secret_once(client, owner):
    client.force_login(owner)
    page = client.post("/tokens/", {"name": "laptop"}).content.decode()
    token = ApiToken.objects.get(name="laptop")
    assert token.key_prefix in page and "will not be shown again" in page
    assert "will not be shown again" not in client.get("/tokens/").content.decode()
