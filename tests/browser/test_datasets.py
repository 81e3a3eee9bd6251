"""Datasets in a real browser: a malformed upload is refused with its line, a good one is listed
and its rows preview as the model will see them, a mixed evaluation file benchmark by benchmark."""

import json
from pathlib import Path

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from tests.torl_data import torl_test_parquet_bytes
from webapp.datasets.models import Dataset
from webapp.datasets.services import builtin_datasets_seed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(page, live_server, filename: str, content: bytes, name: str = "") -> None:
    page.goto(f"{live_server.url}/datasets/")
    page.set_input_files("input[name=file]", {"name": filename, "mimeType": "application/jsonl", "buffer": content})
    if name:
        page.fill("input[name=name]", name)
    page.click("#upload button[type=submit]")


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


GOOD = jsonl(
    {"question": "What is 6 * 7?", "answer": "42"},
    {"question": 'Is <img src=x onerror="document.title=1"> text?', "answer": "1"},
    {"question": "What is 2 + 3?", "answer": 5},
)
TWO_GOOD_LINES = jsonl({"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": "4"})
BAD_JSON = TWO_GOOD_LINES + b'{"question": "3+3?", "answer": \n'
NO_ANSWER = TWO_GOOD_LINES + jsonl({"question": "3+3?"})


@pytest.mark.parametrize(
    ("content", "expected"),
    [(BAD_JSON, "line 3: "), (NO_ANSWER, "line 3: field 'answer' is missing")],
    ids=["bad-json", "missing-answer"],
)
def test_malformed_upload_shows_the_error_and_stores_nothing(
    page, live_server, researcher, media_root, content, expected
):
    log_in(page, live_server, "/datasets/")
    upload(page, live_server, "broken.jsonl", content)
    error = page.locator("#upload-error")
    assert error.is_visible()
    assert "broken.jsonl: " + expected in error.inner_text()
    assert Dataset.objects.count() == 0
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]
    screenshot(page, "datasets-upload-error.png")


def test_good_upload_is_listed_and_previews_the_rendered_prompt(page, live_server, researcher):
    in_thread(builtin_datasets_seed)
    log_in(page, live_server, "/datasets/")
    upload(page, live_server, "toy.jsonl", GOOD, name="toy arithmetic")
    page.wait_for_url(f"{live_server.url}/datasets/*/")
    assert "Uploaded toy arithmetic: 3 rows" in page.inner_text("main")

    # The protocol's default template for python_markdown is ToRL's: its system prompt, then the question.
    first = page.locator(".row-preview").first
    assert first.locator(".chat-message.system").count() == 1
    assert first.locator(".chat-message.user pre").inner_text() == "What is 6 * 7?"
    assert first.locator(".ground-truth pre").inner_text() == "42"
    # Untrusted row text shows as text.
    assert '<img src=x onerror="document.title=1">' in page.locator(".row-preview").nth(1).inner_text()
    assert page.locator(".row-preview img").count() == 0

    page.select_option("select[name=protocol]", "retool")
    page.select_option("select[name=template]", "retool")
    page.fill("input[name=rows]", "2")
    page.click("#preview-form button[type=submit]")
    page.wait_for_url("**template=retool**")
    assert page.locator(".row-preview").count() == 2
    user = page.locator(".row-preview").first.locator(".chat-message.user pre").inner_text()
    assert "<interpreter>output_str</interpreter>" in user and "What is 6 * 7?" in user
    assert page.locator(".row-preview").first.locator(".chat-message.system").count() == 0
    screenshot(page, "dataset-detail.png")

    page.click("text=← Datasets")
    page.wait_for_url(f"{live_server.url}/datasets/")
    row = page.locator("table.datasets tr", has_text="toy arithmetic")
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[1:3] == ["JSONL question/answer", "3"]
    assert "uploaded by ada" in row.inner_text()
    assert "built-in" in page.locator("table.datasets tr", has_text="gsm8k-test").inner_text()
    screenshot(page, "datasets.png")


def test_preview_rows_are_numbered_from_one_in_every_format(page, live_server, researcher):
    """Rows were headed by the example's id, which defaults to the JSONL line (from 1) but to the
    parquet row index (from 0): gsm8k-test started at 1, toolrl-test at 0. Now each row is numbered by
    its place in the file, from 1, with its id beside it."""
    in_thread(builtin_datasets_seed)
    log_in(page, live_server, "/datasets/")
    for name in ("gsm8k-test", "toolrl-test"):
        page.goto(f"{live_server.url}/datasets/")
        page.locator("table.datasets tr", has_text=name).locator("a").first.click()
        page.wait_for_url("**/datasets/*/")
        headings = page.locator(".row-preview h3").all_inner_texts()
        assert [h.split(" id ")[0] for h in headings] == ["Row 1", "Row 2", "Row 3", "Row 4", "Row 5"], name
    # The id is still shown: the parquet's first row is id 0.
    assert page.locator(".row-preview .row-id").first.inner_text() == "id 0"
    screenshot(page, "dataset-detail-parquet.png")


def test_a_mixed_test_parquet_shows_one_benchmarks_rows_at_a_click(page, live_server, researcher):
    """ToRL's test parquet mixes aime24, math500 and aime25 (tests/torl_data.py); its page lists them and a click
    shows one benchmark's rows alone."""
    log_in(page, live_server, "/datasets/")
    counts = {"aime24": 6, "math500": 7, "aime25": 4}
    upload(page, live_server, "test.parquet", torl_test_parquet_bytes(counts), name="ToRL test")
    page.wait_for_url(f"{live_server.url}/datasets/*/")
    assert page.locator(".benchmarks a").all_inner_texts() == ["all 17", "aime24 6", "math500 7", "aime25 4"]
    assert page.locator(".row-source").all_inner_texts() == ["· aime24"] * 5

    page.click(".benchmarks a[data-source=math500]")
    page.wait_for_url("**?source=math500")
    assert page.locator(".row-source").all_inner_texts() == ["· math500"] * 5
    assert [h.split(" id ")[0] for h in page.locator(".row-preview h3").all_inner_texts()] == [
        f"Row {n}" for n in range(7, 12)
    ]
    assert page.locator(".benchmarks a[aria-current]").inner_text() == "math500 7"
    # Showing more rows stays on the benchmark: the form carries it.
    page.fill("input[name=rows]", "10")
    page.click("#preview-form button[type=submit]")
    page.wait_for_url("**rows=10**")
    assert page.locator(".row-source").all_inner_texts() == ["· math500"] * 7
    assert_readable_in_both_themes(page, ".benchmarks a[aria-current]", ".benchmarks a[data-source=aime25]")
    page.fill("input[name=rows]", "2")
    page.click("#preview-form button[type=submit]")
    page.wait_for_url("**rows=2**")
    screenshot(page, "dataset-detail-benchmarks.png")
    toggle_theme(page)
    screenshot(page, "dataset-detail-benchmarks_dark.png")
    toggle_theme(page)
