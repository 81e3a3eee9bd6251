"""ToolRL's and Tool-N1's parquet files uploaded through the datasets page: the preview lists each row's tools.

The files are ToolRL's rlla_4k test split as shipped (data/toolrl/test.parquet) and Tool-N1's training
parquet as tests/tool_n1_data.py builds it in that paper's exact format.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.tool_n1_data import tool_n1_parquet_bytes
from trainer.data.datasets import BUILTIN_FILES
from webapp.datasets.models import Dataset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(user, filename: str, content: bytes) -> tuple[Client, Dataset]:
    client = Client()
    client.force_login(user)
    response = client.post("/datasets/", {"file": SimpleUploadedFile(filename, content), "name": filename})
    dataset = Dataset.objects.get(name=filename)
    assert response.status_code == 302 and response["Location"] == f"/datasets/{dataset.pk}/"
    return client, dataset


def test_toolrl_upload_previews_the_tools_its_system_prompt_lists(owner):
    client, dataset = upload(owner, "train.parquet", BUILTIN_FILES["toolrl-test"].path.read_bytes())
    assert (dataset.format, dataset.row_count, dataset.offers_tools) == ("verl_parquet", 80, True)
    response = client.get(f"/datasets/{dataset.pk}/")
    page = response.context
    assert page["protocol"] == "tool_call_json"  # rows that offer tools are previewed as function calling
    first = page["rows"][0]["tools"]
    assert [tool["name"] for tool in first] == ["GetPowerBINews", "SingleOffer", "Domain WHOIS Lookup API", "GetNews"]
    page_number = "The page number of news articles to retrieve"
    assert first[3]["parameters"] == [{"name": "page", "type": "int", "description": page_number, "optional": False}]
    html = response.content.decode()
    assert "tools offered · 4" in html
    assert '<strong class="tool-name">GetNews</strong>(<span class="tool-param"' in html
    assert '>page: int</span>)</code> <span class="tool-description">Retrieve Azure news articles</span>' in html


def test_tool_n1_upload_previews_its_tools_and_calls(owner):
    client, dataset = upload(owner, "tool_n1.parquet", tool_n1_parquet_bytes())
    assert (dataset.format, dataset.row_count) == ("verl_parquet", 5)
    assert dataset.columns[:4] == ["tools", "conversations", "answer", "raw_system"]
    response = client.get(f"/datasets/{dataset.pk}/?rows=5")
    rows = response.context["rows"]
    # ToolACE's JSON schema says which parameters are required; the others are marked optional.
    book = rows[3]["tools"][0]
    assert [(p["name"], p["type"], p["optional"]) for p in book["parameters"]] == [
        ("restaurant", "string", False),
        ("party_size", "integer", False),
        ("time", "string", True),
    ]
    assert json.loads(rows[1]["ground_truth"])[1] == {
        "name": "convert_currency",
        "arguments": {"amount": 120.0, "to_currency": "JPY"},
    }
    html = response.content.decode()
    assert ">time?: string</span>)</code>" in html
    assert '<strong class="tool-name">cancel_booking</strong>' in html
    assert "tools offered · 1" in html  # the irrelevance row offers the one tool it kept
