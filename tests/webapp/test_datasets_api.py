import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from webapp.datasets.models import Dataset

pytestmark = pytest.mark.django_db

GSM8K = Path(__file__).resolve().parents[2] / "data" / "gsm8k" / "test.jsonl"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def jsonl(*rows) -> bytes:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows).encode()


def verl_parquet(**columns) -> bytes:
    table = pa.table(
        columns
        or {
            "prompt": [[{"role": "user", "content": "What is 2+3?"}], [{"role": "user", "content": "What is 4*5?"}]],
            "reward_model": [{"ground_truth": "5", "style": "rule"}, {"ground_truth": "20", "style": "rule"}],
            "data_source": ["toy", "toy"],
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def upload(api, content: bytes, filename: str = "data.jsonl", **fields):
    file = SimpleUploadedFile(filename, content)
    return api.post("/api/v1/datasets/", {"file": file, **fields}, format="multipart")


def stored_files(media_root) -> list[Path]:
    return [p for p in Path(media_root).rglob("*") if p.is_file()]


FORMATS = [
    ("qa.jsonl", jsonl({"question": "2+2?", "answer": 4}, {"question": "3+3?", "answer": "6"}), "jsonl_qa", 2),
    ("gsm8k.jsonl", GSM8K.read_bytes(), "gsm8k", 1319),
    ("toy.parquet", verl_parquet(), "verl_parquet", 2),
    (
        "calls.jsonl",
        jsonl(
            {
                "question": "Weather in Paris?",
                "tools": [{"name": "get_weather", "parameters": {"type": "object"}}],
                "ground_truth": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            }
        ),
        "function_calling",
        1,
    ),
]


@pytest.mark.parametrize("filename, content, fmt, rows", FORMATS, ids=[f[2] for f in FORMATS])
def test_upload_detects_format_and_counts_rows(api, media_root, filename, content, fmt, rows):
    response = upload(api, content, filename, name="my data")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["format"], body["row_count"], body["name"]) == (fmt, rows, "my data")
    assert body["preview"] and len(body["preview"]) <= 5
    assert len(stored_files(media_root)) == 1


def test_gsm8k_preview_shows_the_ground_truth_after_the_marker(api):
    body = upload(api, GSM8K.read_bytes(), "test.jsonl").json()
    assert body["preview"][0]["ground_truth"] == "18"


MALFORMED = [
    ("bad json line", jsonl({"question": "a", "answer": "1"}, '{"question": "b", "answer": '), "line 2"),
    ("missing field", jsonl({"question": "a", "answer": "1"}, {"question": "b"}), "answer"),
    ("wrong type", jsonl({"question": ["a"], "answer": "1"}), "question"),
    ("empty", b"", "empty"),
    ("binary", b"\x00\x01\x02\xff" * 100, "binary"),
    (
        "gsm8k row without marker",
        jsonl({"question": "a", "answer": "so #### 3"}, {"question": "b", "answer": "4"}),
        "line 2",
    ),
    (
        "parquet missing column",
        verl_parquet(prompt=[[{"role": "user", "content": "hi"}]], data_source=["x"]),
        "reward_model",
    ),
]


@pytest.mark.parametrize("case, content, expected", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_file_is_refused_naming_the_problem_and_nothing_is_stored(api, media_root, case, content, expected):
    filename = "data.parquet" if case.startswith("parquet") else "data.jsonl"
    response = upload(api, content, filename)
    assert response.status_code == 400
    assert expected in response.json()["file"][0]
    assert Dataset.objects.count() == 0
    assert stored_files(media_root) == []


def test_file_over_the_size_limit_is_refused(api, settings, media_root):
    settings.DATASET_MAX_BYTES = 1024
    response = upload(api, jsonl(*({"question": "x" * 50, "answer": "1"} for _ in range(100))))
    assert response.status_code == 400
    assert "over the limit" in response.json()["file"][0]
    assert Dataset.objects.count() == 0 and stored_files(media_root) == []


def test_upload_without_a_file_is_refused(api):
    assert "file" in api.post("/api/v1/datasets/", {"name": "x"}, format="multipart").json()


def test_deleting_a_dataset_removes_its_file_after_the_commit(api, media_root, django_capture_on_commit_callbacks):
    body = upload(api, FORMATS[0][1], "qa.jsonl").json()
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/api/v1/datasets/{body['id']}/").status_code == 204
    assert stored_files(media_root) == []
