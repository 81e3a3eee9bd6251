"""POST /retrieve over real HTTP in Search-R1's and SkyRL-gym's forms, bad input, auth and the loopback rule."""

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from retrieval.server import RetrievalServer
from tests.retrieval.conftest import serving, write_corpus

REPO = Path(__file__).resolve().parents[2]
ZORBLAT = {
    "id": "zorblat",
    "contents": '"Zorblat"\nZorblat is a harbour city founded by Quenby Marsh in 1802.',
    "title": "Zorblat",
    "text": "Zorblat is a harbour city founded by Quenby Marsh in 1802.",
}


def retrieve(endpoint: str, body, **kwargs) -> httpx.Response:
    return httpx.post(f"{endpoint}/retrieve", json=body, **kwargs)


def test_search_r1_form_answers_one_scored_list_per_query(endpoint, index):
    body = {"queries": ["harbour city", "bridges"], "topk": 2, "return_scores": True}
    r = retrieve(endpoint, body)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    result = r.json()["result"]
    assert len(result) == 2 and len(result[0]) == 2
    assert result[0][0] == {"document": ZORBLAT, "score": index.search("harbour city", 1)[0].score}
    assert [item["document"]["id"] for item in result[1]] == ["velloria-a", "velloria-b"]


def test_without_scores_each_list_holds_the_documents_themselves(endpoint):
    # retrieval_server.py:356-357 appends the documents, not {"document": ...} items.
    result = retrieve(endpoint, {"queries": ["harbour"], "topk": 1, "return_scores": False}).json()["result"]
    assert result == [[ZORBLAT]]
    assert retrieve(endpoint, {"queries": ["harbour"], "topk": 1}).json()["result"] == [[ZORBLAT]]


@pytest.mark.parametrize("topk", [None, 0])
def test_null_or_zero_topk_means_the_servers_default_of_three(endpoint, topk):
    result = retrieve(endpoint, {"queries": ["city"], "topk": topk, "return_scores": True}).json()["result"]
    assert len(result[0]) == 3
    assert len(retrieve(endpoint, {"queries": ["city"]}).json()["result"][0]) == 3


def test_skyrl_gym_form_answers_a_list_of_one_list(endpoint):
    # skyrl_gym/tools/search.py:48 posts one query; it reads api_response["result"] as lists (lines 222-229).
    result = retrieve(endpoint, {"query": "harbour city", "topk": 1, "return_scores": True}).json()["result"]
    assert result == [[{"document": ZORBLAT, "score": result[0][0]["score"]}]]
    assert retrieve(endpoint, {"query": "harbour", "topk": 1, "return_scores": False}).json() == {"result": [[ZORBLAT]]}


def test_a_query_without_hits_gets_an_empty_list(endpoint):
    assert retrieve(endpoint, {"queries": ["xylophone", "harbour"], "topk": 1}).json()["result"] == [[], [ZORBLAT]]
    assert retrieve(endpoint, {"queries": []}).json() == {"result": []}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"queries": "harbour"}, "queries"),
        ({"queries": ["ok", 3]}, "queries"),
        ({"query": ["harbour"]}, "query"),
        ({"query": "a", "queries": ["b"]}, "queries"),
        ({"topk": 3}, "queries"),
        ({"queries": ["a"], "topk": -1}, "topk"),
        ({"queries": ["a"], "topk": "3"}, "topk"),
        ({"queries": ["a"], "topk": 2.5}, "topk"),
        ({"queries": ["a"], "topk": True}, "topk"),
        ({"queries": ["a"], "topk": 10**6}, "topk"),
        ({"queries": ["a"], "return_scores": "yes"}, "return_scores"),
        (["harbour"], None),
    ],
)
def test_bad_fields_are_400_naming_the_field(endpoint, body, field):
    r = retrieve(endpoint, body)
    assert r.status_code == 400
    assert r.json()["field"] == field and r.json()["detail"]


@pytest.mark.parametrize("content", [b"not json", b"\xff\xfe", b""])
def test_a_body_that_is_not_json_is_400(endpoint, content):
    r = httpx.post(f"{endpoint}/retrieve", content=content)
    assert r.status_code == 400 and "not JSON" in r.json()["detail"]


def test_unknown_routes_are_404_and_health_says_what_is_served(endpoint, index):
    assert httpx.post(f"{endpoint}/search", json={"queries": ["a"]}).status_code == 404
    health = httpx.get(f"{endpoint}/health").json()
    assert health == {"status": "ok", "documents": 6, "corpus_sha256": index.corpus.sha256, "topk": 3}


def test_with_a_token_every_request_needs_it(index):
    with serving(RetrievalServer(("127.0.0.1", 0), index, token="s3cret", topk=1)) as url:
        body = {"queries": ["harbour"]}
        assert retrieve(url, body).status_code == 401
        assert retrieve(url, body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert retrieve(url, body, headers={"Authorization": "Basic s3cret"}).status_code == 401
        assert httpx.get(f"{url}/health").status_code == 401
        r = retrieve(url, body, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200 and r.json() == {"result": [[ZORBLAT]]}  # the server's topk=1


def test_a_non_loopback_address_without_a_token_is_refused(index):
    with pytest.raises(ValueError, match="refusing to serve the retrieval service on '0.0.0.0' without a token"):
        RetrievalServer(("0.0.0.0", 0), index)
    server = RetrievalServer(("0.0.0.0", 0), index, token="s3cret")
    server.server_close()


def run_cli(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TIRLAB_RETRIEVAL_TOKEN", None)
    return subprocess.Popen([sys.executable, "-m", "retrieval", *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_the_command_refuses_a_public_address_without_a_token_before_indexing(tmp_path):
    proc = run_cli("serve", "--corpus", str(write_corpus(tmp_path / "c.jsonl")), "--host", "0.0.0.0",
                   "--index-dir", str(tmp_path / "cache"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "refusing to serve" in err and "--token" in err
    assert not (tmp_path / "cache").exists()


def test_the_command_refuses_a_malformed_corpus_with_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "contents": "x"}\n{"id": "a", "contents": "y"}\n')
    proc = run_cli("serve", "--corpus", str(path), "--index-dir", str(tmp_path / "cache"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "line 2: duplicate id 'a'" in err


def test_the_command_serves_the_corpus(tmp_path):
    proc = run_cli("serve", "--corpus", str(write_corpus(tmp_path / "c.jsonl")), "--port", "0", "--topk", "1",
                   "--index-dir", str(tmp_path / "cache"))
    try:
        match = None
        for line in proc.stderr:
            match = re.search(r"on (http://127\.0\.0\.1:\d+)/retrieve", line)
            if match:
                break
        assert match, "the server never said where it listens"
        r = retrieve(match.group(1), {"queries": ["harbour"]})
        assert r.json() == {"result": [[ZORBLAT]]}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
