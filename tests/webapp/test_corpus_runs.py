"""`tools.search_corpus: "dataset:<id>"` resolves at submission to the stored corpus's path; a missing id, another
user's, or a dataset that is no corpus is refused at that field, and a corpus is refused as a training dataset."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.webapp.conftest import client_for
from webapp.datasets.models import Dataset
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

CORPUS = [
    {"id": "paris", "contents": '"Paris"\nParis is the capital and largest city of France.'},
    {"id": "zorblat", "contents": '"Zorblat"\nZorblat is a harbour city founded by Quenby Marsh in 1802.'},
]
FIELD = "config.tools.search_corpus"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def upload(api, content: bytes, filename: str) -> dict:
    response = api.post("/api/v1/datasets/", {"file": SimpleUploadedFile(filename, content)}, format="multipart")
    assert response.status_code == 201, response.json()
    return response.json()


def search_run(api, corpus: str, **config):
    config = {"tools": {"protocol": "search_r1", "search_corpus": corpus}, **config}
    return api.post("/api/v1/runs/", {"name": "search", "launch": False, "config": config}, format="json")


def test_a_corpus_ref_resolves_to_the_stored_file(api):
    corpus = upload(api, jsonl(*CORPUS), "wiki.jsonl")
    response = search_run(api, f"dataset:{corpus['id']}")
    assert response.status_code == 201, response.json()
    body = response.json()
    stored = Dataset.objects.get(pk=corpus["id"])
    assert body["config"]["tools"]["search_corpus"] == stored.file_path
    assert body["sources"]["tools.search_corpus"] == {
        "id": stored.pk,
        "name": "wiki",
        "format": "search_corpus",
        "checksum": stored.checksum,
        "row_count": 2,
    }


def test_a_builtin_corpus_name_or_a_path_is_left_to_the_trainer(api):
    response = search_run(api, "search-mini")
    assert response.status_code == 201, response.json()
    assert response.json()["config"]["tools"]["search_corpus"] == "search-mini"
    assert "tools.search_corpus" not in response.json()["sources"]


@pytest.mark.parametrize("ref", ["dataset:999999", "dataset:abc", "dataset:"])
def test_a_missing_corpus_is_refused_at_its_field(api, ref):
    response = search_run(api, ref)
    assert response.status_code == 400
    assert response.json() == {FIELD: [f"no corpus {ref!r} that you can use"]}
    assert Run.objects.count() == 0


def test_another_users_corpus_is_refused_at_its_field(api, stranger):
    theirs = upload(client_for(stranger), jsonl(*CORPUS), "theirs.jsonl")
    response = search_run(api, f"dataset:{theirs['id']}")
    assert response.status_code == 400
    assert response.json() == {FIELD: [f"no corpus 'dataset:{theirs['id']}' that you can use"]}
    assert Run.objects.count() == 0


def test_a_dataset_that_is_no_corpus_is_refused_as_search_corpus(api):
    problems = upload(api, jsonl({"question": "2+2?", "answer": "4"}), "problems.jsonl")
    ref = f"dataset:{problems['id']}"
    response = search_run(api, ref)
    assert response.status_code == 400
    [message] = response.json()[FIELD]
    assert message.startswith(f"'{ref}' (problems) is a JSONL question/answer dataset, not a retrieval corpus")
    assert Run.objects.count() == 0


@pytest.mark.parametrize("field", ["train_dataset", "val_dataset"])
def test_a_corpus_is_refused_as_a_training_dataset(api, field):
    corpus = upload(api, jsonl(*CORPUS), "wiki.jsonl")
    ref = f"dataset:{corpus['id']}"
    response = api.post(
        "/api/v1/runs/", {"name": "r", "launch": False, "config": {"data": {field: ref}}}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {
        f"config.data.{field}": [
            f"'{ref}' (wiki) is a retrieval corpus, not a dataset of problems; name it as tools.search_corpus of a "
            "run with tools.environment 'search'"
        ]
    }
    assert Run.objects.count() == 0


def test_a_corpus_is_refused_as_sft_traces(api):
    corpus = upload(api, jsonl(*CORPUS), "wiki.jsonl")
    ref = f"dataset:{corpus['id']}"
    config = {"sft": {"enabled": True, "dataset": ref}}
    response = api.post("/api/v1/runs/", {"name": "r", "launch": False, "config": config}, format="json")
    assert response.status_code == 400
    assert "is a retrieval corpus" in response.json()["config.sft.dataset"][0]
