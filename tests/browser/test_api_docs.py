"""The API docs (Swagger UI, /api/docs/) in a real browser: a bar above them leads back to the dashboard."""

import pytest

from tests.browser._helpers import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_api_docs_lead_back_to_the_dashboard(page, live_server, researcher):
    log_in(page, live_server, "/", lands_on="/runs/")
    page.click("nav >> text=API docs")
    page.wait_for_url("**/api/docs/")
    page.wait_for_selector("#swagger-ui .opblock")  # Swagger UI itself still renders below the bar
    page.click("#back-to-dashboard")
    page.wait_for_url(f"{live_server.url}/runs/")
    page.go_back()
    page.click(".tirlab-bar >> text=API tokens")
    page.wait_for_url("**/tokens/")
