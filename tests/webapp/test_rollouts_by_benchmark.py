"""Trajectories by benchmark (their row's data source, as an evaluation reports them): shown on the rollouts
page, and filtered there and in the API with ?data_source=."""

import pytest
from django.test import Client

from tests.webapp.test_ui_rollouts import trajectory
from webapp.runs.ingest import ingest_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(run_and_token):
    """An evaluation's report at step 6: prompts 0 and 1 of aime24, prompt 2 of math500, two samples each (the
    first correct)."""
    run, token = run_and_token
    sources = ["aime24", "aime24", "math500"]
    items = [
        trajectory(6, p, i, correct=i == 0, data_source=source) for p, source in enumerate(sources) for i in range(2)
    ]
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": items})
    return run


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def test_each_group_shows_its_benchmark_and_the_filter_offers_the_steps(browser, run):
    html = browser.get(f"/runs/{run.pk}/rollouts/").content.decode()
    group = html[html.index('id="g-2"') :]
    assert '<span class="badge benchmark"' in group[: group.index("</header>")] and "math500" in group
    menu = html[html.index('id="benchmark-filter"') :]
    menu = menu[: menu.index("</select>")]
    assert '<option value="aime24">aime24</option><option value="math500">math500</option>' in menu


def test_the_page_filters_by_benchmark_and_keeps_the_filter_in_its_links(browser, run):
    html = browser.get(f"/runs/{run.pk}/rollouts/?data_source=aime24").content.decode()
    assert 'id="g-0"' in html and 'id="g-1"' in html and 'id="g-2"' not in html
    assert '<option value="aime24" selected>' in html
    assert "data_source=aime24" in html[html.index('class="best-vs-worst"') :]


def test_a_benchmark_no_trajectory_has_shows_none_without_an_error(browser, run):
    response = browser.get(f"/runs/{run.pk}/rollouts/?data_source=gpqa")
    assert response.status_code == 200
    html = response.content.decode()
    assert "No rollouts match these filters." in html and 'class="group"' not in html
    assert '<option value="gpqa" selected>' in html  # the filter shows what it is set to, to change it


def test_the_api_filters_trajectories_by_benchmark(api, run):
    url = f"/api/v1/runs/{run.pk}/trajectories"
    body = api.get(f"{url}?data_source=math500").json()
    assert [(t["prompt_index"], t["data_source"]) for t in body["results"]] == [(2, "math500"), (2, "math500")]
    assert len(api.get(url).json()["results"]) == 6


def test_the_api_answers_a_benchmark_no_trajectory_has_with_an_empty_list(api, run):
    response = api.get(f"/api/v1/runs/{run.pk}/trajectories?data_source=gpqa")
    assert response.status_code == 200 and response.json()["results"] == []
