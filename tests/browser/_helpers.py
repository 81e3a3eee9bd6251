"""Helpers the browser tests share (the browser, page and researcher fixtures are in conftest.py)."""

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

USERNAME, PASSWORD = "ada", "tool-use-2026"


def in_thread(fn, **kwargs):
    """Write rows off the main thread: Playwright's event loop runs there, and publishing run
    events after the commit uses async_to_sync, which refuses a thread with a running loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, **kwargs).result()


def log_in(page, live_server, path: str = "/", *, lands_on: str | None = None, wait_for: str | None = None) -> None:
    """Open `path` as an anonymous visitor (sent to the login form), log in as the researcher, and
    wait to land on `lands_on` (default: `path`) or, given `wait_for`, for that selector."""
    page.goto(f"{live_server.url}{path}")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    if wait_for:
        page.wait_for_selector(wait_for)
    else:
        page.wait_for_url(f"{live_server.url}{lands_on or path}")


def screenshot(page, name: str) -> None:
    """Save a full-page screenshot into $TIRLAB_SCREENSHOT_DIR when it is set (make screenshot)."""
    shots = os.environ.get("TIRLAB_SCREENSHOT_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / name), full_page=True)
