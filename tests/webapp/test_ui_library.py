"""Datasets and reward configs pages, server side: who may see and delete what, escaping, errors."""

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from webapp.datasets.models import Dataset
from webapp.datasets.services import builtin_datasets_seed, dataset_create_from_upload
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed

pytestmark = pytest.mark.django_db

FENCE = "```"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def browser_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def stored(user, content: bytes, name: str = "mine") -> Dataset:
    upload = SimpleUploadedFile(f"{name}.jsonl", content)
    return dataset_create_from_upload(user=user, upload=upload, name=name)


def stored_files(media_root) -> list[Path]:
    return [p for p in Path(media_root).rglob("*") if p.is_file()]


# --- datasets ------------------------------------------------------------------------------


def test_pages_need_a_login(client):
    for url in ("/datasets/", "/datasets/1/", "/rewards/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_another_users_dataset_is_not_found(owner, stranger):
    dataset = stored(owner, jsonl({"question": "1+1?", "answer": "2"}))
    client = browser_for(stranger)
    assert client.get(f"/datasets/{dataset.pk}/").status_code == 404
    assert client.post(f"/datasets/{dataset.pk}/delete").status_code == 404
    assert "mine" not in client.get("/datasets/").content.decode()
    assert f"/datasets/{dataset.pk}/delete" in browser_for(owner).get("/datasets/").content.decode()
    assert Dataset.objects.filter(pk=dataset.pk).exists()


def test_builtin_datasets_are_shown_but_cannot_be_deleted(owner):
    builtin = {d.name: d for d in builtin_datasets_seed()}["gsm8k-test"]
    client = browser_for(owner)
    listing = client.get("/datasets/").content.decode()
    assert "gsm8k-test" in listing and f"/datasets/{builtin.pk}/delete" not in listing
    assert client.post(f"/datasets/{builtin.pk}/delete").status_code == 403
    assert Dataset.objects.filter(pk=builtin.pk).exists()


def test_owner_deletes_an_upload_and_its_file(owner, media_root, django_capture_on_commit_callbacks):
    dataset = stored(owner, jsonl({"question": "1+1?", "answer": "2"}))
    assert len(stored_files(media_root)) == 1
    with django_capture_on_commit_callbacks(execute=True):
        response = browser_for(owner).post(f"/datasets/{dataset.pk}/delete")
    assert response.status_code == 302 and response["Location"] == "/datasets/"
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert stored_files(media_root) == []


def test_malformed_upload_names_the_line_and_stores_nothing(owner, media_root):
    content = jsonl({"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": "4"}) + b"{not json\n"
    response = browser_for(owner).post("/datasets/", {"file": SimpleUploadedFile("bad.jsonl", content)})
    assert response.status_code == 400
    assert "bad.jsonl: line 3: " in response.content.decode()
    assert Dataset.objects.count() == 0 and stored_files(media_root) == []


def test_dataset_list_is_paginated(owner):
    for index in range(53):
        Dataset.objects.create(
            name=f"set-{index}", owner=owner, format="jsonl_qa", row_count=1, size_bytes=1, checksum="ab" * 32
        )
    client = browser_for(owner)
    first = client.get("/datasets/")
    assert len(first.context["page"]) == 50 and "Page 1 of 2 (53 datasets)" in first.content.decode()
    assert [d.name for d in client.get("/datasets/?page=2").context["page"]] == ["set-2", "set-1", "set-0"]


def test_upload_without_a_file_is_refused(owner):
    response = browser_for(owner).post("/datasets/", {"name": "nothing"})
    assert response.status_code == 400 and "Choose a file to upload." in response.content.decode()


def test_good_upload_redirects_to_its_preview(owner):
    content = jsonl({"question": "What is 6*7?", "answer": "42"})
    response = browser_for(owner).post("/datasets/", {"file": SimpleUploadedFile("toy.jsonl", content), "name": "toy"})
    dataset = Dataset.objects.get(name="toy")
    assert (dataset.owner, dataset.row_count, dataset.format) == (owner, 1, "jsonl_qa")
    assert response.status_code == 302 and response["Location"] == f"/datasets/{dataset.pk}/"


def test_preview_escapes_row_text(owner):
    script = "<script>alert(1)</script>"
    dataset = stored(owner, jsonl({"question": f"Why {script}?", "answer": f"{script}"}))
    html = browser_for(owner).get(f"/datasets/{dataset.pk}/?template=plain").content.decode()
    assert "<script>alert(1)" not in html
    assert "Why &lt;script&gt;alert(1)&lt;/script&gt;?" in html
    assert "<pre>&lt;script&gt;alert(1)&lt;/script&gt;</pre>" in html


def test_preview_applies_the_chosen_template_and_row_count(owner):
    dataset = stored(owner, jsonl(*({"question": f"q{i}", "answer": str(i)} for i in range(8))))
    client = browser_for(owner)
    page = client.get(f"/datasets/{dataset.pk}/").context
    assert (page["protocol"], page["template"], len(page["rows"])) == ("python_markdown", "", 5)
    assert [m["role"] for m in page["rows"][0]["messages"]] == ["system", "user"]
    page = client.get(f"/datasets/{dataset.pk}/?protocol=tool_call_json&template=plain&rows=2").context
    assert [row["messages"] for row in page["rows"]] == [
        [{"role": "user", "content": "q0"}],
        [{"role": "user", "content": "q1"}],
    ]
    assert [row["ground_truth"] for row in page["rows"]] == ["0", "1"]
    # Unknown choices fall back to the defaults instead of failing.
    page = client.get(f"/datasets/{dataset.pk}/?protocol=nope&template=nope&rows=x").context
    assert (page["protocol"], page["template"], len(page["rows"])) == ("python_markdown", "", 5)


def test_function_calling_ground_truth_is_shown_as_json(owner):
    row = {
        "question": "Weather in Paris?",
        "tools": [{"name": "get_weather", "parameters": {"type": "object"}}],
        "ground_truth": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    }
    dataset = stored(owner, jsonl(row))
    page = browser_for(owner).get(f"/datasets/{dataset.pk}/").context
    assert page["protocol"] == "tool_call_json"
    assert json.loads(page["rows"][0]["ground_truth"])[0]["arguments"] == {"city": "Paris"}
    assert "get_weather" in page["rows"][0]["messages"][0]["content"]  # ToolRL's system prompt lists the tools


# --- reward configs ------------------------------------------------------------------------


def try_form(reward: str, completion: str, ground_truth: str, **params) -> dict:
    data = {"reward": reward, "action": "try", "completion": completion, "ground_truth": ground_truth}
    return data | {f"params.{key}": value for key, value in params.items()}


def try_it(client, reward: str, completion: str, ground_truth: str, **params):
    return client.post("/rewards/", try_form(reward, completion, ground_truth, **params))


def test_try_it_scores_a_crlf_textarea_like_the_model_wrote_it(owner):
    completion = f"{FENCE}python\nprint(42)\n{FENCE}\n{FENCE}output\n42\n{FENCE}\n\\boxed{{42}}".replace("\n", "\r\n")
    response = try_it(browser_for(owner), "torl", completion, "42", exec_error_penalty="0.5")
    result = response.context["result"]
    assert (result.total, result.correct, result.details["tool_calls"]) == (1.0, True, 1)


def test_try_it_shows_a_parameter_error_at_its_field(owner):
    response = try_it(browser_for(owner), "otc_grpo", "\\boxed{1}", "1", c="0", alpha="one")
    assert response.status_code == 400
    fields = {field.name: field.errors for field in response.context["fields"]}
    assert fields["alpha"] == ["must be a number"]
    assert response.context["result"] is None
    response = try_it(browser_for(owner), "otc_grpo", "\\boxed{1}", "1", c="0")
    fields = {field.name: field.errors for field in response.context["fields"]}
    assert fields["c"] == ["Input should be greater than 0"]
    assert "params.c: Input should be greater than 0" in response.content.decode()


def test_try_it_scores_at_the_given_training_step(owner):
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    completion = f"<think>weather</think>\n<tool_call>\n{call}\n</tool_call>"
    truth = f"<tool_call>\n{call}\n</tool_call>"
    client = browser_for(owner)
    early = try_it(client, "toolrl", completion, truth, schedule="max1_step30_max3")
    late = client.post(
        "/rewards/", {**try_form("toolrl", completion, truth, schedule="max1_step30_max3"), "step": "30"}
    )
    assert late.context["result"].total > early.context["result"].total
    response = client.post("/rewards/", {**try_form("torl", "x", "1"), "step": "-1"})
    assert response.status_code == 400 and "whole number" in response.content.decode()


def test_try_it_reports_a_ground_truth_the_reward_cannot_read(owner):
    response = try_it(browser_for(owner), "tool_n1", "<think>x</think><tool_call>[]</tool_call>", "not json")
    assert response.status_code == 400
    assert any(error.startswith("Could not score: ") for error in response.context["errors"])


def test_weighted_terms_are_edited_as_json(owner):
    terms = [{"name": "torl", "weight": 2.0}]
    response = try_it(browser_for(owner), "weighted", "\\boxed{42}", "42", terms=json.dumps(terms))
    assert response.context["result"].total == 2.0
    response = try_it(browser_for(owner), "weighted", "\\boxed{42}", "42", terms='[{"name": "nope"}]')
    errors = {field.name: field.errors for field in response.context["fields"]}["terms"]
    assert errors and errors[0].startswith("0.name: ")
    response = try_it(browser_for(owner), "weighted", "\\boxed{42}", "42", terms="[{")
    assert {field.name: field.errors for field in response.context["fields"]}["terms"][0].startswith(
        "is not valid JSON: "
    )


def test_try_it_escapes_the_completion(owner):
    completion = '<img src=x onerror="alert(1)"> \\boxed{42}'
    html = try_it(browser_for(owner), "torl", completion, "42").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_save_stores_validated_params_with_the_owner(owner):
    data = {"reward": "toolrl", "action": "save", "name": "ToolRL scheduled", "params.schedule": "scheduled"}
    response = browser_for(owner).post("/rewards/", data)
    assert response.status_code == 302
    config = RewardConfig.objects.get(name="ToolRL scheduled")
    # Unchecked switches are stored as their defaults (off).
    assert (config.owner, config.reward, config.params["schedule"]) == (owner, "toolrl", "scheduled")
    assert not any(value for name, value in config.params.items() if name != "schedule")


def test_save_needs_a_name(owner):
    response = browser_for(owner).post("/rewards/", {"reward": "torl", "action": "save", "name": " "})
    assert response.status_code == 400 and "Give the reward config a name" in response.content.decode()
    assert not RewardConfig.objects.exists()


def test_reward_config_permissions(owner, stranger):
    builtin = {c.name: c for c in builtin_reward_configs_seed()}["torl"]
    mine = RewardConfig.objects.create(name="mine", owner=owner, reward="torl", params={"exec_error_penalty": 0.5})
    client = browser_for(stranger)
    assert "mine" not in [c.name for c in client.get("/rewards/").context["configs"]]
    assert client.post(f"/rewards/{mine.pk}/delete").status_code == 404
    assert client.post(f"/rewards/{builtin.pk}/delete").status_code == 403
    # Loading another user's config falls back to the defaults rather than showing its params.
    fields = client.get(f"/rewards/?config={mine.pk}").context["fields"]
    assert fields[0].value == "0.0"
    assert browser_for(owner).get(f"/rewards/?config={mine.pk}").context["fields"][0].value == "0.5"
    assert browser_for(owner).post(f"/rewards/{mine.pk}/delete").status_code == 302
    assert list(RewardConfig.objects.filter(owner=owner)) == []


def test_verl_parquet_rows_keep_their_own_system_prompt_under_the_default_template(owner):
    prompt = [{"role": "system", "content": "Use python."}, {"role": "user", "content": "What is 2+3?"}]
    buffer = io.BytesIO()
    pq.write_table(
        pa.table(
            {"prompt": [prompt], "reward_model": [{"ground_truth": "5", "style": "rule"}], "data_source": ["toy"]}
        ),
        buffer,
    )
    dataset = dataset_create_from_upload(
        user=owner, upload=SimpleUploadedFile("toy.parquet", buffer.getvalue()), name="toy"
    )
    client = browser_for(owner)
    assert client.get(f"/datasets/{dataset.pk}/").context["rows"][0]["messages"] == prompt
    torl = client.get(f"/datasets/{dataset.pk}/?template=torl-chat").context["rows"][0]["messages"]
    assert torl[0]["content"] != "Use python." and torl[1] == {"role": "user", "content": "What is 2+3?"}
    # ToRL's own template is raw text: the row's system message is dropped and no chat turns are shown.
    raw = client.get(f"/datasets/{dataset.pk}/?template=torl")
    row = raw.context["rows"][0]
    assert row["messages"] == [] and row["raw_text"].endswith("within \\boxed{}.\nWhat is 2+3?\nAssistant:\n")
    assert "raw text, no chat template" in raw.content.decode() and "Use python." not in raw.content.decode()
