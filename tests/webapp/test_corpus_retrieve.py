"""`POST /api/v1/datasets/<id>/retrieve`: tirlab's /retrieve over a corpus uploaded on the dashboard, behind the
API's auth and for the corpus's owner only, answering both request forms as `python -m retrieval serve` does (its
own parsing and answer code), and reached by verl's and SkyRL-gym's request code unchanged: they set no header,
so `requests` sends the API token from a netrc file as Basic credentials."""

import base64
import importlib.machinery
import importlib.util
import json
from pathlib import Path

import pytest
import requests
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient
from skyrl_gym.envs.search.env import SearchEnv, SearchEnvConfig

from retrieval import BM25Index, load_corpus
from retrieval.server import BadRequest, parse_request, retrieve
from tests.retrieval.conftest import ROWS
from tests.webapp.conftest import client_for
from webapp.accounts.services import api_token_create, api_token_revoke
from webapp.datasets.models import Dataset

ZORBLAT = "Zorblat is a harbour city founded by Quenby Marsh in 1802."
MARSH = "Quenby Marsh was an explorer born in Velloria.\nShe founded a city."
VERL_SEARCH_UTILS = Path(__file__).parents[1] / "retrieval" / "upstream" / "verl-0.7.1-search_r1_like_utils.py.txt"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.setenv("TIRLAB_VAR_DIR", str(tmp_path / "var"))
    return settings.MEDIA_ROOT


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def upload(client: APIClient, content: bytes = jsonl(*ROWS), filename: str = "wiki.jsonl") -> Dataset:
    response = client.post("/api/v1/datasets/", {"file": SimpleUploadedFile(filename, content)}, format="multipart")
    assert response.status_code == 201, response.json()
    return Dataset.objects.get(pk=response.json()["id"])


def bearer(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
    return client


def ask(client: APIClient, dataset: Dataset, body, **extra):
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(f"/api/v1/datasets/{dataset.pk}/retrieve", data, content_type="application/json", **extra)


def served(dataset: Dataset, body: dict) -> dict:
    """What `python -m retrieval serve` answers `body` over the same file."""
    index = BM25Index.load(load_corpus(dataset.file_path), Path(dataset.file_path).parent / "reference-index")
    return retrieve(index, *parse_request(body, 3))


@pytest.mark.django_db
class TestBothForms:
    def test_search_r1s_form_gets_one_scored_list_per_query(self, owner):
        corpus = upload(client_for(owner))
        body = {
            "queries": ["who founded the harbour city Zorblat", "city of bridges"],
            "topk": 2,
            "return_scores": True,
        }
        response = ask(bearer(owner), corpus, body)
        assert response.status_code == 200, response.json()
        answer = response.json()
        assert answer == served(corpus, body)
        assert [[item["document"]["id"] for item in hits] for hits in answer["result"]] == [
            ["zorblat", "marsh"],
            ["velloria-a", "velloria-b"],
        ]
        assert answer["result"][0][0]["document"] == {
            "id": "zorblat",
            "contents": f'"Zorblat"\n{ZORBLAT}',
            "title": "Zorblat",
            "text": ZORBLAT,
        }
        assert answer["result"][0][0]["score"] > answer["result"][0][1]["score"] > 0

    def test_skyrl_gyms_form_gets_one_list(self, owner):
        corpus = upload(client_for(owner))
        body = {"query": "capital of France", "topk": 1, "return_scores": True}
        response = ask(bearer(owner), corpus, body)
        assert response.status_code == 200
        assert response.json() == served(corpus, body)
        assert [[item["document"]["id"] for item in hits] for hits in response.json()["result"]] == [["france"]]

    def test_without_scores_the_documents_come_themselves_and_topk_defaults_to_3(self, owner):
        corpus = upload(client_for(owner))
        for body in ({"queries": ["Velloria city"]}, {"query": "Velloria city", "topk": 0, "return_scores": False}):
            response = ask(bearer(owner), corpus, body)
            assert response.status_code == 200
            [hits] = response.json()["result"]
            assert len(hits) == 3 and hits[0]["id"] == "velloria-a" and "score" not in hits[0]
            assert response.json() == served(corpus, body)

    def test_a_browser_session_may_ask_too(self, owner):
        corpus = upload(client_for(owner))
        assert ask(client_for(owner), corpus, {"query": "Paris"}).status_code == 200


BAD = [
    [1, 2],
    {"queries": ["a"], "query": "a"},
    {},
    {"query": 3},
    {"queries": "who"},
    {"queries": ["a", 2]},
    {"queries": ["a"], "topk": -1},
    {"queries": ["a"], "topk": "3"},
    {"queries": ["a"], "topk": True},
    {"queries": ["a"], "topk": 2.5},
    {"queries": ["a"], "topk": 1001},
    {"queries": ["a"], "return_scores": "yes"},
]


@pytest.mark.django_db
@pytest.mark.parametrize("body", BAD, ids=[json.dumps(body) for body in BAD])
def test_a_bad_request_is_a_400_naming_its_field_as_the_service_answers(owner, body):
    corpus = upload(client_for(owner))
    response = ask(bearer(owner), corpus, body)
    assert response.status_code == 400
    with pytest.raises(BadRequest) as refused:
        parse_request(body, 3)
    assert response.json() == {"detail": str(refused.value), "field": refused.value.field}


@pytest.mark.django_db
def test_a_body_that_is_not_json_is_a_400_without_a_field(owner):
    corpus = upload(client_for(owner))
    response = ask(bearer(owner), corpus, b"{not json")
    assert response.status_code == 400
    assert response.json()["field"] is None and response.json()["detail"].startswith("the body is not JSON")


@pytest.mark.django_db
class TestWhoMayAsk:
    def test_no_credentials_or_a_bad_token_are_401(self, owner):
        corpus = upload(client_for(owner))
        assert ask(APIClient(), corpus, {"query": "Paris"}).status_code == 401
        bad = APIClient()
        bad.credentials(HTTP_AUTHORIZATION="Bearer tlp_not-a-token")
        assert ask(bad, corpus, {"query": "Paris"}).status_code == 401
        token, secret = api_token_create(user=owner, name="revoked")
        api_token_revoke(token=token)
        revoked = APIClient()
        revoked.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        assert ask(revoked, corpus, {"query": "Paris"}).status_code == 401

    def test_basic_credentials_must_carry_a_valid_api_token(self, owner):
        corpus = upload(client_for(owner))
        secret = api_token_create(user=owner, name="netrc")[1]
        for password, code in ((secret, 200), ("pw-alice-123", 401), ("tlp_wrong", 401)):
            encoded = base64.b64encode(f"alice:{password}".encode()).decode()
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Basic {encoded}")
            assert ask(client, corpus, {"query": "Paris"}).status_code == code, password

    def test_another_users_corpus_is_404(self, owner, stranger):
        corpus = upload(client_for(owner))
        response = ask(bearer(stranger), corpus, {"query": "Paris"})
        assert response.status_code == 404
        assert response.json() == {"detail": f"No dataset {corpus.pk}."}

    def test_staff_who_see_every_dataset_are_403_on_others_corpora(self, owner, staff):
        corpus = upload(client_for(owner))
        response = ask(bearer(staff), corpus, {"query": "Paris"})
        assert response.status_code == 403
        assert response.json() == {"detail": "Only the owner of a corpus may search it here."}

    def test_a_dataset_that_is_no_corpus_or_none_is_404(self, owner):
        problems = upload(client_for(owner), jsonl({"question": "2+2?", "answer": "4"}), "problems.jsonl")
        response = ask(bearer(owner), problems, {"query": "Paris"})
        assert response.status_code == 404
        assert "not a retrieval corpus" in response.json()["detail"]
        missing = bearer(owner).post("/api/v1/datasets/999999/retrieve", {"query": "Paris"}, format="json")
        assert missing.status_code == 404


# The clients' own request code, against the dashboard served on a port. Neither lets a caller add a header
# (verl v0.7.1 search_r1_like_utils.py:60-62, skyrl_gym/tools/search.py:48-49); both post with `requests`, which
# takes credentials for the host from the netrc file ($NETRC, else ~/.netrc) when none are given.


@pytest.fixture
def served_corpus(owner, live_server, tmp_path, monkeypatch) -> str:
    corpus = upload(client_for(owner))
    secret = api_token_create(user=owner, name="netrc")[1]
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine localhost login alice password {secret}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    return f"{live_server.url}/api/v1/datasets/{corpus.pk}/retrieve"


@pytest.mark.django_db(transaction=True)
def test_skyrl_gyms_search_env_reads_the_passages(served_corpus):
    env = SearchEnv(
        SearchEnvConfig(search_url=served_corpus, topk=2, timeout=10),
        extras={"reward_spec": {"ground_truth": {"target": ["Quenby Marsh"]}}, "max_turns": 3},
    )
    step = env.step("<think>I need the founder.</think><search> who founded the harbour city Zorblat </search>")
    # skyrl_gym/envs/search/env.py:71 wraps the tool's JSON text; tools/search.py:132-137 renders each passage.
    expected = json.dumps({"result": f'Doc 1: "Zorblat"\n{ZORBLAT}\nDoc 2: "Quenby Marsh"\n{MARSH}\n'})
    assert step["observations"] == [{"role": "user", "content": f"\n<information>{expected}</information>\n"}]
    assert env.step("<answer>Quenby Marsh</answer>")["reward"] == 1.0


@pytest.mark.django_db(transaction=True)
def test_verls_search_request_code_gets_the_passages(served_corpus):
    loader = importlib.machinery.SourceFileLoader("verl_search_r1_like_utils", str(VERL_SEARCH_UTILS))
    utils = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(utils)
    text, metadata = utils.perform_single_search_batch(
        served_corpus, ["who founded the harbour city Zorblat", "city of bridges"], topk=2, timeout=10
    )
    assert (metadata["status"], metadata["total_results"]) == ("success", 4)
    # search_r1_like_utils.py:130-138 renders a query's passages; :222 joins the queries with "\n---\n".
    first = f'Doc 1 (Title: "Zorblat")\n{ZORBLAT}\n\nDoc 2 (Title: "Quenby Marsh")\n{MARSH}'
    velloria = "Velloria is a city of bridges."
    second = f'Doc 1 (Title: "Velloria")\n{velloria}\n\nDoc 2 (Title: "Velloria")\n{velloria}'
    assert json.loads(text) == {"result": f"{first}\n---\n{second}"}


@pytest.mark.django_db(transaction=True)
def test_without_the_netrc_the_clients_get_401(served_corpus, monkeypatch, tmp_path):
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))
    monkeypatch.setenv("HOME", str(tmp_path))
    response = requests.post(served_corpus, json={"query": "Paris"}, timeout=10)
    assert response.status_code == 401
    headers = {"Authorization": f"Bearer {api_token_create(user=Dataset.objects.get().owner, name='b')[1]}"}
    assert requests.post(served_corpus, json={"query": "Paris"}, headers=headers, timeout=10).status_code == 200
