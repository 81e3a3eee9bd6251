"""SFT traces in a real browser: uploaded on the datasets page, previewed with the model's text and the
masked tool outputs told apart, and offered by the new-run form's sft.dataset field, in both themes."""

import json

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from webapp.datasets.models import Dataset
from webapp.datasets.services import builtin_datasets_seed

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = {
    "messages": [
        {"role": "user", "content": "What is 47 * 83?"},
        {"role": "assistant", "content": "<code>\nprint(47 * 83)\n</code>"},
        {"role": "tool", "content": "3901"},
        {"role": "assistant", "content": "<answer>\\boxed{3901}</answer>"},
    ]
}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_uploaded_traces_preview_and_are_offered_for_sft_dataset(page, live_server, researcher):
    in_thread(builtin_datasets_seed)
    log_in(page, live_server, "/datasets/")
    content = (json.dumps(TRACE) + "\n").encode()
    page.set_input_files(
        "input[name=file]", {"name": "retool.jsonl", "mimeType": "application/jsonl", "buffer": content}
    )
    page.fill("input[name=name]", "my retool traces")
    page.click("#upload button[type=submit]")
    page.wait_for_url(f"{live_server.url}/datasets/*/")
    assert "Uploaded my retool traces: 1 rows, sft_traces." in page.inner_text("main")

    row = page.locator(".row-preview").first
    assert "What is 47 * 83?" in row.locator(".chat-message.user pre").inner_text()
    assert row.locator(".chat-message.tool-output pre").inner_text().strip() == "<interpreter>\n3901\n</interpreter>"
    assert row.locator(".chat-message.response").count() == 2
    assert_readable_in_both_themes(page, ".tool-output .role", ".chat-message.response >> nth=0 >> .role")
    screenshot(page, "dataset-traces.png")
    toggle_theme(page)
    screenshot(page, "dataset-traces-other-theme.png")
    toggle_theme(page)

    page.goto(f"{live_server.url}/runs/new/?preset=retool-mini")
    field = page.locator("#f-sft-dataset")
    assert field.get_attribute("list") == "trace-choices"
    pk = Dataset.objects.get(builtin=False).pk
    labels = page.locator("#trace-choices option").evaluate_all("options => options.map(o => o.label)")
    assert labels == [
        "tiny-cold-start · python_markdown · built-in",
        "retool-mini-sft · retool · built-in",
        "artist-mini-sft · artist · built-in",
        "fc-mini-sft · tool_call_json · built-in",
        "toolrl-mini-sft · tool_call_json · built-in",
        "tool-n1-mini-sft · tool_call_json · built-in",
        "artist-fc-mini-sft · artist_fc · built-in",
        "swe-mini-sft · codeact_mini · built-in",
        "search-mini-copy · search_r1 · built-in",
        "search-mini-read · search_r1 · built-in",
        "search-mini-sft · search_r1 · built-in",
        "my retool traces · retool · 1 traces (uploaded)",
    ]
    values = page.locator("#dataset-choices option").evaluate_all("options => options.map(o => o.value)")
    assert "gsm8k-test" in values and f"dataset:{pk}" not in values
    field.fill(f"dataset:{pk}")
    screenshot(page, "new-run-sft-dataset.png")
