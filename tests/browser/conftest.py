import os
import shutil
import time
from collections.abc import Iterator

import pytest

from tests.browser._helpers import PASSWORD, USERNAME

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Chromium for one test module. Playwright's sync API runs an event loop on the main thread
    while it is open, so it must be closed before the suite's asyncio tests run."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make browser-deps installs it)")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        # The tests' own ORM calls run on the main thread beside Playwright's loop; that is safe
        # here (the loop only drives the browser), and Django refuses it unless told.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    in_flight: set = set()
    context.on("request", lambda request: in_flight.add(request))
    context.on("requestfinished", lambda request: in_flight.discard(request))
    context.on("requestfailed", lambda request: in_flight.discard(request))
    yield page
    # A page that polls keeps asking the live server after its test; a request the server is still serving when
    # the test's database is flushed deadlocks the flush's TRUNCATE (CI: "Database test_test_gw2 couldn't be
    # flushed", DeadlockDetected). So nothing new leaves the page, and what was asked is answered, first.
    context.route("**/*", lambda route: route.abort())
    deadline = time.monotonic() + 10
    while in_flight and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    context.close()


@pytest.fixture
def researcher(django_user_model):
    """The user the browser tests log in as (tests.browser._helpers.log_in)."""
    return django_user_model.objects.create_user(username=USERNAME, password=PASSWORD)
