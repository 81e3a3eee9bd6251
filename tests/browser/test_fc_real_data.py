"""ToolRL's and Tool-N1's parquet files uploaded in a real browser: each row's preview lists the tools it
offers, by name and signature, readably in both themes.

ToolRL's file is its rlla_4k test split as shipped (data/toolrl/test.parquet); Tool-N1's is its
training parquet as tests/tool_n1_data.py builds it in that paper's exact format.
"""

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, log_in, screenshot
from tests.tool_n1_data import tool_n1_parquet_bytes
from trainer.data.datasets import BUILTIN_FILES

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload_parquet(page, live_server, filename: str, content: bytes) -> None:
    page.goto(f"{live_server.url}/datasets/")
    page.set_input_files(
        "input[name=file]", {"name": filename, "mimeType": "application/vnd.apache.parquet", "buffer": content}
    )
    page.click("#upload button[type=submit]")
    page.wait_for_url(f"{live_server.url}/datasets/*/")


def test_toolrl_upload_lists_each_rows_tools(page, live_server, researcher):
    log_in(page, live_server, "/datasets/")
    upload_parquet(page, live_server, "rlla_4k_test.parquet", BUILTIN_FILES["toolrl-test"].path.read_bytes())
    assert "Uploaded rlla_4k_test: 80 rows, verl_parquet." in page.inner_text("main")
    assert page.locator("select[name=protocol]").input_value() == "tool_call_json"

    tools = page.locator(".row-preview").first.locator(".tools-offered")
    assert tools.locator(".role").inner_text() == "TOOLS OFFERED · 4"
    assert tools.locator(".tool-signature").all_inner_texts() == [
        "GetPowerBINews(page: int)",
        "SingleOffer(singleav: string)",
        "Domain WHOIS Lookup API(domain_name: string)",
        "GetNews(page: int)",
    ]
    assert tools.locator("li").nth(3).inner_text() == "GetNews(page: int) Retrieve Azure news articles"
    assert_readable_in_both_themes(page, ".row-preview >> nth=0 >> .tool-signature >> nth=0")
    assert_readable_in_both_themes(page, ".row-preview >> nth=0 >> .tool-description >> nth=0")
    screenshot(page, "dataset-toolrl-tools.png")


def test_tool_n1_upload_lists_each_rows_tools(page, live_server, researcher):
    log_in(page, live_server, "/datasets/")
    upload_parquet(page, live_server, "tool_n1_train.parquet", tool_n1_parquet_bytes())
    assert "Uploaded tool_n1_train: 5 rows, verl_parquet." in page.inner_text("main")

    rows = page.locator(".row-preview")
    assert rows.nth(0).locator(".tool-signature").all_inner_texts() == [
        "get_weather(city: str, unit: str, optional)",
        "convert_currency(amount: float, to_currency: str)",
    ]
    # ToolACE's JSON schema names the required parameters: the others show as optional.
    assert rows.nth(3).locator(".tool-signature").first.inner_text() == (
        "book_table(restaurant: string, party_size: integer, time?: string)"
    )
    assert rows.nth(3).locator(".ground-truth pre").inner_text().startswith('[\n  {\n    "name": "book_table"')
    screenshot(page, "dataset-tool-n1-tools.png")
