"""A retrieval corpus (Search-R1's jsonl, `{"id", "contents"}` a line) uploaded like a dataset: read whole with
retrieval.load_corpus (a bad line refused with its number, nothing stored), listed and previewed as documents,
kept out of the datasets a run trains on; the formats detected before keep theirs."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.retrieval.conftest import ROWS as CORPUS_ROWS
from webapp.datasets.models import Dataset
from webapp.datasets.services import corpus_index

pytestmark = pytest.mark.django_db

# Paris, Zorblat and Quenby Marsh.
ROWS = [CORPUS_ROWS[i] for i in (0, 1, 3)]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.setenv("TIRLAB_VAR_DIR", str(tmp_path / "var"))
    return settings.MEDIA_ROOT


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def upload(api, content: bytes, filename: str = "wiki.jsonl"):
    return api.post("/api/v1/datasets/", {"file": SimpleUploadedFile(filename, content)}, format="multipart")


def test_a_corpus_is_stored_with_its_document_count_and_a_preview(api):
    response = upload(api, jsonl(*ROWS) + b"\n")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["format"], body["row_count"], body["columns"], body["name"]) == (
        "search_corpus",
        3,
        ["id", "contents"],
        "wiki",
    )
    assert body["preview"][1] == {
        "id": "zorblat",
        "title": "Zorblat",
        "text": "Zorblat is a harbour city founded by Quenby Marsh in 1802.",
    }
    dataset = Dataset.objects.get()
    assert dataset.is_corpus and Path(dataset.file_path).read_bytes() == jsonl(*ROWS) + b"\n"


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("not json", "line 3: not JSON (Expecting value at column 1)"),
        (json.dumps({"id": "x"}), "line 3: missing 'contents'"),
        (json.dumps({"id": 7, "contents": "t"}), "line 3: 'id' must be a string, got int"),
        (json.dumps({"id": "paris", "contents": '"P"\nagain'}), "line 3: duplicate id 'paris' (first on line 1)"),
    ],
)
def test_a_bad_corpus_line_is_refused_with_its_number_and_nothing_is_stored(api, media_root, bad_line, message):
    content = jsonl(*ROWS[:2]) + bad_line.encode() + b"\n" + jsonl(ROWS[2])
    response = upload(api, content)
    assert response.status_code == 400
    assert response.json() == {"file": [f"wiki.jsonl: retrieval corpus: {message}"]}
    assert Dataset.objects.count() == 0
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]


def test_the_page_refuses_a_bad_corpus_with_its_line(client, owner, media_root):
    client.force_login(owner)
    content = jsonl(ROWS[0]) + b'{"id": "b", "contents": 3}\n'
    response = client.post("/datasets/", {"file": SimpleUploadedFile("wiki.jsonl", content)})
    assert response.status_code == 400
    assert "wiki.jsonl: retrieval corpus: line 2: &#x27;contents&#x27; must be a string, got int" in (
        response.content.decode()
    )
    assert Dataset.objects.count() == 0
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    ("row", "format"),
    [
        ({"question": "2+2?", "answer": "4", "contents": "x"}, "jsonl_qa"),
        ({"question": "2+2?", "answer": "2 + 2\n#### 4", "id": "a", "contents": "x"}, "gsm8k"),
        ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, "sft_traces"),
        ({"question": "2+2?", "answer": "4"}, "jsonl_qa"),
    ],
)
def test_a_dataset_with_a_contents_field_keeps_the_format_it_was_detected_as(api, row, format):
    response = upload(api, jsonl(row, row), "rows.jsonl")
    assert response.status_code == 201, response.json()
    assert response.json()["format"] == format


def test_a_file_that_is_neither_keeps_the_datasets_error(api):
    response = upload(api, jsonl({"id": "a", "text": "no contents"}), "rows.jsonl")
    assert response.status_code == 400
    assert "'question' and 'answer' are missing" in response.json()["file"][0]


def test_the_pages_list_and_preview_a_corpus_as_documents(client, owner):
    client.force_login(owner)
    response = client.post("/datasets/", {"file": SimpleUploadedFile("wiki.jsonl", jsonl(*ROWS))})
    assert response.status_code == 302, response.content.decode()
    corpus = Dataset.objects.get()
    listing = client.get("/datasets/").content.decode()
    assert re.search(r"<td>Search-R1 retrieval corpus JSONL</td>\s*<td>3 documents</td>", listing)
    page = client.get(f"/datasets/{corpus.pk}/?rows=2").content.decode()
    assert "Documents as a search returns them" in page
    assert f'tools.search_corpus: "dataset:{corpus.pk}"' in page
    assert f"POST /api/v1/datasets/{corpus.pk}/retrieve" in page
    assert re.search(r"<th>Documents</th><td>3</td>", page)
    assert re.search(
        r"Zorblat <small class=\"hint row-id\">id <code>zorblat</code></small></h3>\s*<pre>Zorblat is a", page
    )
    assert "Quenby Marsh was an explorer" not in page  # two rows asked for
    assert "ground truth" not in page and "Prompt template" not in page


def test_the_new_run_form_offers_a_corpus_for_the_search_corpus_and_not_as_problems(client, owner):
    client.force_login(owner)
    client.post("/datasets/", {"file": SimpleUploadedFile("wiki.jsonl", jsonl(*ROWS))})
    corpus = Dataset.objects.get()
    page = client.get("/runs/new/").content.decode()
    assert re.search(r'name="config.tools.search_corpus" value="[^"]*" list="corpus-choices"', page)
    corpora = re.search(r'<datalist id="corpus-choices">(.*?)</datalist>', page, re.S).group(1)
    assert re.findall(r'<option value="([^"]*)" label="([^"]*)">', corpora) == [
        ("search-mini", "search-mini · generated corpus · built-in"),
        (f"dataset:{corpus.pk}", "wiki · 3 documents (uploaded)"),
    ]
    problems = re.search(r'<datalist id="dataset-choices">(.*?)</datalist>', page, re.S).group(1)
    assert f'value="dataset:{corpus.pk}"' not in problems
    # The questions a search run asks, by level, are offered as problems.
    assert '<option value="search-mini" label="mixed search-mini, seeded">' in problems
    assert '<option value="search-mini:2hop" label="2hop search-mini, seeded">' in problems
    assert '<option value="swe-mini" label="mixed swe-mini, seeded">' in problems


def test_a_corpus_is_indexed_once_under_the_var_folder(api, tmp_path):
    corpus = Dataset.objects.get(pk=upload(api, jsonl(*ROWS)).json()["id"])
    index = corpus_index(corpus)
    assert index.path.parent == tmp_path / "var" / "retrieval"
    assert index.path.name.startswith(f"bm25-{corpus.checksum}-")
    assert corpus_index(corpus) is index  # kept loaded in this process
    # The same file content uploaded again (another name) reads the same index.
    again = Dataset.objects.get(pk=upload(api, jsonl(*ROWS), "copy.jsonl").json()["id"])
    assert corpus_index(again).path == index.path and not corpus_index(again).built
