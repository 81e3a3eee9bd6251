"""The runs page (/runs/) as the server renders it, its bulk actions, and the archived filter of the API."""

import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.runs.models import Experiment, MetricStep, Run, RunStatus
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db


def run_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr data-run-id="(\d+)"', html)]


def many_runs(owner, count: int, **fields) -> list[Run]:
    now = timezone.now()
    runs = [
        Run(
            name=f"sweep {i:04d}",
            owner=owner,
            config={"model": {"name_or_path": "tirlab/tiny-char"}, "schedule": {"max_steps": 100}},
            status=RunStatus.RUNNING,
            started_at=now - timedelta(minutes=10),
            last_step=i % 100,
            summary={"accuracy": (i % 10) / 10, "tool_call_ratio": 0.5},
            tags=["sweep", f"lr{i % 3}"],
            managed=False,
            **fields,
        )
        for i in range(count)
    ]
    created = Run.objects.bulk_create(runs)
    for offset, run in enumerate(created):  # distinct creation times, oldest first
        run.created_at = now - timedelta(seconds=count - offset)
    Run.objects.bulk_update(created, ["created_at"])
    return created


def test_home_redirects_to_the_runs_page(client, owner):
    client.force_login(owner)
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/runs/"


def test_runs_page_needs_a_login(client):
    response = client.get("/runs/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_queued_runs_show_their_place_in_line(client, owner, make_run):
    make_run(name="first", managed=True)
    make_run(name="second", managed=True)
    make_run(name="mine to run", managed=False)  # a trainer you start yourself is not in the launch queue
    client.force_login(owner)
    page = client.get("/runs/").content.decode()
    assert page.count("in line") == 2
    assert "#1 in line" in page and "#2 in line" in page


def test_pages_of_fifty_newest_first_keep_the_filters_in_their_links(client, owner):
    runs = many_runs(owner, 120)
    client.force_login(owner)
    first = client.get("/runs/?tag=sweep").content.decode()
    assert run_ids(first) == [run.pk for run in reversed(runs)][:50]
    assert "Page 1 of 3 · 120 runs" in first
    assert 'href="?tag=sweep&amp;page=2"' in first
    last = client.get("/runs/?tag=sweep&page=3").content.decode()
    assert run_ids(last) == [run.pk for run in reversed(runs)][100:]
    # A page past the end shows the last one rather than an error.
    assert run_ids(client.get("/runs/?page=99").content.decode()) == run_ids(last)


def test_search_status_experiment_and_tag_filters(client, owner, make_run, experiment):
    torl, _ = make_run(name="ToRL C=1", tags=["math"], experiment=experiment)
    retool, _ = make_run(name="ReTool cold start", tags=["sft"])
    run_transition(run=retool, status=RunStatus.STARTING)
    client.force_login(owner)

    def listed(query: str) -> list[int]:
        response = client.get(f"/runs/?{query}")
        assert response.status_code == 200
        return run_ids(response.content.decode())

    assert listed("q=torl") == [torl.pk]
    assert listed("q=cold") == [retool.pk]
    assert listed(f"q=%23{retool.pk}") == [retool.pk]
    assert listed("status=starting") == [retool.pk]
    assert listed("status=queued") == [torl.pk]
    assert listed(f"experiment={experiment.pk}") == [torl.pk]
    assert listed("tag=sft") == [retool.pk]
    assert listed("sort=name") == [retool.pk, torl.pk]
    assert listed("sort=-name") == [torl.pk, retool.pk]


def test_bad_filter_values_are_reported_not_crashing(client, owner, make_run):
    make_run()
    client.force_login(owner)
    page = client.get("/runs/?status=sleeping&experiment=abc&sort=colour").content.decode()
    assert "Unknown status &#x27;sleeping&#x27;" in page
    assert "Experiment must be an experiment id" in page
    assert "Cannot sort by &#x27;colour&#x27;" in page
    assert len(run_ids(page)) == 1


def eta_seconds(page: str) -> int:
    """The first ETA on the page ("ETA 5m 02s"), in seconds."""
    minutes, seconds = re.search(r"ETA (\d+)m (\d\d)s", page).groups()
    return 60 * int(minutes) + int(seconds)


def test_the_page_shows_progress_eta_metrics_and_only_the_users_runs(client, owner, stranger, make_run):
    run, _ = make_run(
        name="mine", config={"schedule": {"max_steps": 40}, "model": {"name_or_path": "tirlab/tiny-char"}}
    )
    make_run(user=stranger, name="not mine")
    client.force_login(owner)
    before = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING,
        started_at=before - timedelta(seconds=100),
        last_step=9,
        summary={"accuracy": 0.8125, "tool_call_ratio": 0.25},
    )
    page = client.get("/runs/").content.decode()
    waited = (timezone.now() - before).total_seconds()
    assert "not mine" not in page
    assert "10 / 40" in page and 'value="25"' in page
    # 10 steps in 100 s (plus however long the request took): 30 steps left take about 300 s.
    assert 300 <= eta_seconds(page) <= 3 * (100 + waited) + 1
    assert "0.813" in page and "0.250" in page and "tirlab/tiny-char" in page


def test_a_resumed_runs_eta_counts_only_the_steps_it_trained(client, owner, make_run):
    parent, _ = make_run(name="parent")
    run, _ = make_run(name="resumed", parent=parent, parent_relation="resume", config={"schedule": {"max_steps": 100}})
    client.force_login(owner)
    before = timezone.now()
    started = before - timedelta(seconds=100)
    # It resumed at step 50 and trained steps 50..59 in 100 s: 40 steps left take about 400 s.
    MetricStep.objects.bulk_create(
        MetricStep(run=run, step=step, time=started, values={"accuracy": 0.5}) for step in range(50, 60)
    )
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=started, last_step=59)
    page = client.get("/runs/").content.decode()
    waited = (timezone.now() - before).total_seconds()
    assert "60 / 100" in page
    assert 400 <= eta_seconds(page) <= 4 * (100 + waited) + 1, re.findall(r"ETA [^<]*", page)


def test_fragment_is_the_table_alone(client, owner, make_run):
    make_run(name="fragment run")
    client.force_login(owner)
    fragment = client.get("/runs/?fragment=1&sort=name").content.decode()
    assert "fragment run" in fragment and "<html" not in fragment
    assert "fragment=1" not in fragment  # its links are for the page, not the fragment


def test_bulk_archive_hides_runs_until_show_archived(client, owner, make_run):
    keep, _ = make_run(name="keep")
    old, _ = make_run(name="old")
    client.force_login(owner)
    response = client.post("/runs/bulk", {"action": "archive", "runs": [old.pk], "next": "/runs/?sort=name"})
    assert response.status_code == 302 and response["Location"] == "/runs/?sort=name"
    assert Run.objects.get(pk=old.pk).archived
    assert run_ids(client.get("/runs/").content.decode()) == [keep.pk]
    assert set(run_ids(client.get("/runs/?archived=1").content.decode())) == {keep.pk, old.pk}
    client.post("/runs/bulk", {"action": "unarchive", "runs": [old.pk]})
    assert not Run.objects.get(pk=old.pk).archived


def test_bulk_cancel_cancels_active_runs_and_reports_finished_ones(client, owner, make_run):
    queued, _ = make_run(name="queued")
    done, _ = make_run(name="done")
    run_transition(run=done, status=RunStatus.CANCELLED)
    client.force_login(owner)
    response = client.post("/runs/bulk", {"action": "cancel", "runs": [queued.pk, done.pk]}, follow=True)
    assert Run.objects.get(pk=queued.pk).status == RunStatus.CANCELLED
    page = response.content.decode()
    assert "Cancelled 1 run." in page and f"#{done.pk} is cancelled" in page


def test_bulk_actions_touch_only_the_users_runs(client, owner, stranger, make_run):
    theirs, _ = make_run(user=stranger, name="theirs")
    client.force_login(owner)
    client.post("/runs/bulk", {"action": "archive", "runs": [theirs.pk]})
    assert not Run.objects.get(pk=theirs.pk).archived


def test_bulk_compare_without_javascript_redirects_to_the_compare_page(client, owner, make_run):
    a, _ = make_run()
    b, _ = make_run()
    client.force_login(owner)
    response = client.post("/runs/bulk", {"action": "compare", "runs": [b.pk, a.pk]})
    assert response["Location"] == f"/compare/?runs={a.pk},{b.pk}"
    one = client.post("/runs/bulk", {"action": "compare", "runs": [a.pk]}, follow=True)
    assert "Select at least two runs to compare." in one.content.decode()


def test_archived_is_a_patchable_field_and_hides_the_run_from_the_api_list_too(api, make_run):
    live, _ = make_run(name="live")
    old, _ = make_run(name="old")
    response = api.patch(f"/api/v1/runs/{old.pk}/", {"archived": True}, format="json")
    assert response.status_code == 200, response.json()
    assert api.get(f"/api/v1/runs/{old.pk}/").json()["archived"] is True
    assert [r["id"] for r in api.get("/api/v1/runs/").json()["results"]] == [live.pk]
    assert [r["id"] for r in api.get("/api/v1/runs/?archived=false").json()["results"]] == [live.pk]
    assert [r["id"] for r in api.get("/api/v1/runs/?archived=true").json()["results"]] == [old.pk, live.pk]


@pytest.mark.slow  # a measurement: 1,000 runs, 16 page loads
def test_a_thousand_runs_page_server_time(client, owner):
    experiment = Experiment.objects.create(name="big sweep", owner=owner)
    many_runs(owner, 1000, experiment=experiment)
    client.force_login(owner)
    client.get("/runs/")  # warm up templates and connections
    timings = {}
    for label, query in [
        ("default", ""),
        ("search", "?q=sweep%2009"),
        ("sort by accuracy, page 10", "?sort=-accuracy&page=10"),
        ("tag + status", "?tag=lr1&status=running"),
        ("fragment", "?fragment=1"),
    ]:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            response = client.get(f"/runs/{query}")
            best = min(best, time.perf_counter() - start)
            assert response.status_code == 200
        timings[label] = best
    print("\n/runs/ with 1,000 runs, server time (best of 3):")
    for label, seconds in timings.items():
        print(f"  {label:28s} {seconds * 1000:7.1f} ms")
