"""SFT traces on the dashboard: uploaded through the API and the page, previewed as the cold start
trains on them, offered for sft.dataset only, and refused where a run reads problems (and problems
refused where it reads traces), with the field named."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from trainer.config import BUILTIN_SFT_TRACES
from trainer.sft.data import load_sft_dataset
from webapp.datasets.models import Dataset
from webapp.datasets.services import builtin_datasets_seed
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

RETOOL_TRACE = {
    "messages": [
        {"role": "user", "content": "What is 47 * 83?"},
        {"role": "assistant", "content": "<code>\nprint(47 * 83)\n</code>"},
        {"role": "tool", "content": "3901"},
        {"role": "assistant", "content": "<answer>\\boxed{3901}</answer>"},
    ]
}
PROBLEMS = {"question": "2+2?", "answer": "4"}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def upload(api, content: bytes, filename: str = "traces.jsonl"):
    return api.post("/api/v1/datasets/", {"file": SimpleUploadedFile(filename, content)}, format="multipart")


def create_run(api, **config):
    return api.post("/api/v1/runs/", {"name": "cold start", "launch": False, "config": config}, format="json")


def test_uploaded_traces_are_stored_with_their_protocol_and_a_preview(api):
    response = upload(api, jsonl(RETOOL_TRACE, RETOOL_TRACE))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["format"], body["protocol"], body["row_count"]) == ("sft_traces", "retool", 2)
    assert "<interpreter>\n3901\n</interpreter>" in body["preview"][0]["response"]
    dataset = Dataset.objects.get()
    assert len(load_sft_dataset(dataset.file_path, protocol="retool")) == 2


def test_a_bad_trace_is_refused_with_its_line_and_nothing_is_stored(api, media_root):
    bad = {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "3901"}]}
    response = upload(api, jsonl(RETOOL_TRACE, bad))
    assert response.status_code == 400
    assert response.json() == {
        "file": ["traces.jsonl: line 2: 'messages' needs a user message, then an assistant message"]
    }
    assert Dataset.objects.count() == 0
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]


@pytest.mark.parametrize("field", ["train_dataset", "val_dataset"])
def test_traces_named_as_problems_are_refused_at_their_field(api, field):
    traces = upload(api, jsonl(RETOOL_TRACE)).json()
    for ref in (f"dataset:{traces['id']}", *BUILTIN_SFT_TRACES):
        response = create_run(api, data={field: ref})
        assert response.status_code == 400
        assert response.json()[f"config.data.{field}"] == [f"'{ref}' holds SFT traces; use it as sft.dataset"]
    assert Run.objects.count() == 0


def test_problems_named_as_traces_are_refused_at_sft_dataset(api):
    builtin_datasets_seed()
    problems = upload(api, jsonl(PROBLEMS), "problems.jsonl").json()
    for ref in (f"dataset:{problems['id']}", "gsm8k-test", "arithmetic"):
        response = create_run(api, sft={"enabled": True, "dataset": ref})
        assert response.status_code == 400
        assert "holds problems for RL, not SFT traces" in response.json()["config.sft.dataset"][0], ref
    assert Run.objects.count() == 0


def test_uploaded_traces_must_be_in_the_runs_protocol_when_sft_runs(api):
    traces = upload(api, jsonl(RETOOL_TRACE)).json()
    ref = f"dataset:{traces['id']}"
    refused = create_run(api, sft={"enabled": True, "dataset": ref}, tools={"protocol": "python_markdown"})
    assert refused.status_code == 400
    assert "written in the 'retool' protocol but tools.protocol is 'python_markdown'" in str(refused.json())
    created = create_run(api, sft={"enabled": True, "dataset": ref}, tools={"protocol": "retool"})
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["config"]["sft"]["dataset"] == Dataset.objects.get().file_path
    assert body["sources"]["sft.dataset"]["format"] == "sft_traces"


def test_the_detail_page_shows_the_response_with_its_tool_output_masked(client, owner):
    client.force_login(owner)
    traces = upload_as(client, jsonl(RETOOL_TRACE))
    page = client.get(f"/datasets/{traces.pk}/").content.decode()
    assert "Traces as the cold start trains on them" in page
    assert re.search(r"<th>Protocol</th><td><code>retool</code>", page)
    assert re.search(
        r'tool-output"><span class="role">tool output · masked from the loss</span><pre>&lt;interpreter&gt;\n3901\n',
        page,
    )
    assert '<span class="role">response · trained on</span><pre>&lt;code&gt;\nprint(47 * 83)' in page
    assert "ground truth" not in page
    # Under another protocol the tool message follows no call of that protocol: the parser says so.
    other = client.get(f"/datasets/{traces.pk}/?protocol=python_markdown").content.decode()
    assert "does not end with a complete call in the &#x27;python_markdown&#x27; protocol" in other


def upload_as(client, content: bytes) -> Dataset:
    response = client.post("/datasets/", {"file": SimpleUploadedFile("traces.jsonl", content)})
    assert response.status_code == 302, response.content.decode()
    return Dataset.objects.get(builtin=False)


def datalist(page: str, name: str) -> list[tuple[str, str]]:
    body = re.search(rf'<datalist id="{name}">(.*?)</datalist>', page, re.S).group(1)
    return re.findall(r'<option value="([^"]*)" label="([^"]*)">', body)


def test_the_form_offers_traces_for_sft_dataset_and_problems_elsewhere(client, owner):
    builtin_datasets_seed()
    client.force_login(owner)
    traces = upload_as(client, jsonl(RETOOL_TRACE))
    page = client.get("/runs/new/").content.decode()
    assert re.search(r'name="config.sft.dataset" value="[^"]*" list="trace-choices"', page)
    assert re.search(r'name="config.data.train_dataset" value="[^"]*" list="dataset-choices"', page)
    assert datalist(page, "trace-choices") == [
        ("tiny-cold-start", "tiny-cold-start · python_markdown · built-in"),
        ("retool-mini-sft", "retool-mini-sft · retool · built-in"),
        ("artist-mini-sft", "artist-mini-sft · artist · built-in"),
        ("fc-mini-sft", "fc-mini-sft · tool_call_json · built-in"),
        ("toolrl-mini-sft", "toolrl-mini-sft · tool_call_json · built-in"),
        ("tool-n1-mini-sft", "tool-n1-mini-sft · tool_call_json · built-in"),
        ("artist-fc-mini-sft", "artist-fc-mini-sft · artist_fc · built-in"),
        ("swe-mini-sft", "swe-mini-sft · codeact_mini · built-in"),
        ("search-mini-copy", "search-mini-copy · search_r1 · built-in"),
        ("search-mini-read", "search-mini-read · search_r1 · built-in"),
        ("search-mini-sft", "search-mini-sft · search_r1 · built-in"),
        (f"dataset:{traces.pk}", "traces · retool · 1 traces (uploaded)"),
    ]
    problems = [value for value, _ in datalist(page, "dataset-choices")]
    assert "gsm8k-test" in problems and f"dataset:{traces.pk}" not in problems
    # The generators' levels (arithmetic, function calling), which no upload stands for.
    assert {"arithmetic", "arithmetic:easy", "arithmetic:hard", "arithmetic:multi"} <= set(problems)
    assert {"function-calling", "function-calling:easy", "function-calling:hard"} <= set(problems)
