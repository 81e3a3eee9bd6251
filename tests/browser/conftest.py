import os
import shutil
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
    yield page
    context.close()


@pytest.fixture
def researcher(django_user_model):
    """The user the browser tests log in as (tests.browser._helpers.log_in)."""
    return django_user_model.objects.create_user(username=USERNAME, password=PASSWORD)
