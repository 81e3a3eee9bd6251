"""The run and compare pages as Django renders them: visibility, and everything readable without JavaScript."""

import json
from datetime import UTC, datetime

import pytest
from django.test import Client

from trainer.contract import ACTIVE_STATUSES, CALL_HEADLINE_METRICS, HEADLINE_METRICS
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import MetricStep, Run, RunStatus
from webapp.runs.transitions import run_log, run_transition

pytestmark = pytest.mark.django_db


def browser_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_another_users_run_is_not_found(make_run, stranger):
    run, _ = make_run(name="private")
    client = browser_for(stranger)
    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.post(f"/runs/{run.pk}/cancel").status_code == 404
    assert client.post(f"/runs/{run.pk}/fork", {"overrides": "{}"}).status_code == 404
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_staff_sees_any_run(make_run, staff):
    run, _ = make_run(name="shared")
    assert browser_for(staff).get(f"/runs/{run.pk}/").status_code == 200


def test_anonymous_is_sent_to_login(make_run):
    run, _ = make_run()
    response = Client().get(f"/runs/{run.pk}/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_config_logs_and_error_are_in_the_html(make_run, owner):
    run, _ = make_run(name="<b>bold</b> run", config={"rollout": {"group_size": 8}})
    run_log(run=run, message="<script>alert(1)</script> step 3 done")
    run_transition(run=run, status=RunStatus.STARTING)
    run_transition(run=run, status=RunStatus.FAILED, error="Ray job failed\n--- last lines ---\nTraceback: OOM")
    html = browser_for(owner).get(f"/runs/{run.pk}/").content.decode()
    assert "<code>rollout.group_size</code></th><td><code>8</code>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; step 3 done" in html
    assert "<script>alert(1)" not in html
    assert "&lt;b&gt;bold&lt;/b&gt; run" in html
    assert "Traceback: OOM" in html
    assert "status starting → failed" in html
    assert 'id="cancel-form"' not in html


def test_queued_run_shows_its_place_and_a_cancel_form(make_run, owner):
    run, _ = make_run(managed=True)
    html = browser_for(owner).get(f"/runs/{run.pk}/").content.decode()
    assert "#1 in the launch queue" in html
    assert 'id="cancel-form"' in html and 'name="csrfmiddlewaretoken"' in html


def page_data(html: str, element_id: str) -> dict:
    """The JSON a page hands its JavaScript (json_script)."""
    return json.loads(html.split(f'<script id="{element_id}" type="application/json">')[1].split("</script>")[0])


def test_the_run_pages_data_carries_the_contracts_headline_names_and_active_statuses(make_run, owner):
    run, _ = make_run()
    data = page_data(browser_for(owner).get(f"/runs/{run.pk}/").content.decode(), "run-page-data")
    assert data["headline"] == list(HEADLINE_METRICS)
    assert data["activeStatuses"] == list(ACTIVE_STATUSES)
    assert data["status"] == RunStatus.QUEUED


def test_a_function_calling_run_draws_its_call_metrics_first_and_compare_picks_them(make_run, owner):
    calls = {"tools": {"protocol": "tool_call_json"}}
    keys = [*CALL_HEADLINE_METRICS, "accuracy", "tool_call_ratio", "reward/mean"]
    first, _ = make_run(name="fc1", config=calls)
    second, _ = make_run(name="fc2", config=calls)
    Run.objects.filter(pk__in=[first.pk, second.pk]).update(metric_keys=keys)
    client = browser_for(owner)
    data = page_data(client.get(f"/runs/{first.pk}/").content.decode(), "run-page-data")
    assert data["headline"] == list(CALL_HEADLINE_METRICS)
    compared = page_data(client.get(f"/compare/?runs={first.pk},{second.pk}").content.decode(), "compare-page-data")
    assert compared["metrics"] == list(CALL_HEADLINE_METRICS)
    # Beside a code-tool run, both kinds' headline metrics that the runs have.
    code, _ = make_run(name="code", config={})
    Run.objects.filter(pk=code.pk).update(metric_keys=["accuracy", "tool_call_ratio"])
    compared = page_data(client.get(f"/compare/?runs={first.pk},{code.pk}").content.decode(), "compare-page-data")
    assert compared["metrics"] == ["accuracy", "tool_call_ratio", "response_length/mean", *CALL_HEADLINE_METRICS[:-1]]


def test_the_run_pages_data_names_the_metrics_logged_once(owner, run_and_token):
    run, token = run_and_token
    steps = [{"step": step, "time": 1_780_000_000.0 + step, "values": {"loss": 1.0 - step / 10}} for step in range(3)]
    steps.append({"step": 2, "time": 1_780_000_002.0, "values": {"train_runtime": 61.5}})
    ingest_batch(run_id=run.pk, token=token, payload={"metrics": steps})
    data = page_data(browser_for(owner).get(f"/runs/{run.pk}/").content.decode(), "run-page-data")
    assert data["singles"] == [{"key": "train_runtime", "step": 2, "value": 61.5}]
    assert data["metricKeys"] == ["loss", "train_runtime"]


def test_an_unmanaged_queued_run_says_it_waits_for_its_trainer(make_run, owner):
    run, _ = make_run(managed=False)
    html = browser_for(owner).get(f"/runs/{run.pk}/").content.decode()
    assert "waiting for its trainer's first report" in html and "launch queue" not in html


def test_latest_metric_values_are_listed_without_javascript(make_run, owner):
    run, _ = make_run()
    Run.objects.filter(pk=run.pk).update(summary={"accuracy": 0.625}, last_step=7, metric_keys=["accuracy"])
    MetricStep.objects.create(run=run, step=7, time=datetime(2026, 1, 1, tzinfo=UTC), values={"accuracy": 0.625})
    html = browser_for(owner).get(f"/runs/{run.pk}/").content.decode()
    assert "<th>accuracy</th><td>0.625</td>" in html


def test_cancel_without_javascript(make_run, owner):
    run, _ = make_run()
    response = browser_for(owner).post(f"/runs/{run.pk}/cancel", follow=True)
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED
    assert f"Run #{run.pk} cancelled." in response.content.decode()


def test_fork_with_overrides_creates_a_child(make_run, owner):
    run, _ = make_run(name="base")
    response = browser_for(owner).post(
        f"/runs/{run.pk}/fork", {"name": "smaller groups", "overrides": '{"rollout": {"group_size": 4}}'}
    )
    child = Run.objects.get(name="smaller groups")
    assert response.status_code == 302 and response["Location"] == f"/runs/{child.pk}/"
    assert child.parent_id == run.pk and child.config["rollout"]["group_size"] == 4


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ('{"rollout": {"group_size": "many"}}', "config.rollout.group_size", "integer"),
        ('{"rollout": ', "overrides", "not valid JSON"),
        ("[1, 2]", "overrides", "must be a JSON object"),
    ],
)
def test_fork_with_bad_overrides_shows_the_field_error(make_run, owner, overrides, field, message):
    run, _ = make_run(name="base")
    response = browser_for(owner).post(f"/runs/{run.pk}/fork", {"name": "bad", "overrides": overrides})
    assert response.status_code == 400
    html = response.content.decode()
    errors = html.split('id="fork-errors"', 1)[1].split("</ul>", 1)[0]
    assert f"<code>{field}</code>" in errors and message in errors
    assert not Run.objects.filter(name="bad").exists()


def test_resume_needs_a_checkpoint(make_run, owner):
    run, _ = make_run(name="done")
    run_transition(run=run, status=RunStatus.CANCELLED)
    client = browser_for(owner)
    assert 'id="resume-form"' not in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.post(f"/runs/{run.pk}/resume", follow=True)
    assert "has no checkpoint to resume from" in response.content.decode()
    Run.objects.filter(pk=run.pk).update(checkpoint_path="/tmp/ckpt/step-10")
    assert 'id="resume-form"' in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.post(f"/runs/{run.pk}/resume")
    resumed = Run.objects.get(parent=run, parent_relation="resume")
    assert response["Location"] == f"/runs/{resumed.pk}/" and resumed.resume_from == "/tmp/ckpt/step-10"


def test_compare_ignores_invisible_runs_and_diffs_configs(make_run, owner, stranger):
    first, _ = make_run(name="c1", config={"rollout": {"group_size": 16}})
    second, _ = make_run(name="c2", config={"rollout": {"group_size": 8}})
    foreign, _ = make_run(user=stranger, name="not yours")
    client = browser_for(owner)
    html = client.get(f"/compare/?runs={first.pk},{second.pk},{foreign.pk},99999&only_differences=1").content.decode()
    assert f"Runs #{foreign.pk}, #99999 are not visible to you or do not exist" in html
    assert "not yours" not in html
    assert 'class="differs"><th><code>rollout.group_size</code></th><td><code>16</code></td><td><code>8</code>' in html
    assert 'class="config-table diff-table only-differences"' in html
    assert 'class="same"><th><code>rollout.temperature</code>' in html


def test_compare_form_without_javascript_uses_repeated_params(make_run, owner):
    first, _ = make_run(name="c1")
    second, _ = make_run(name="c2")
    html = browser_for(owner).get(f"/compare/?run={first.pk}&run={second.pk}&smooth=abc").content.decode()
    assert f"#{first.pk} c1" in html and f"#{second.pk} c2" in html
    assert "Smoothing must be a number" in html
    assert "only-differences" not in html.split('id="diff-table"')[0].rsplit("<table", 1)[1]


def test_logs_api_after_returns_only_newer_lines(make_run, api):
    run, _ = make_run()
    first = run_log(run=run, message="first")
    run_log(run=run, message="second")
    body = api.get(f"/api/v1/runs/{run.pk}/logs/?after={first.pk}").json()
    assert [line["message"] for line in body["results"]] == ["second"]
    assert api.get(f"/api/v1/runs/{run.pk}/logs/?after=x").status_code == 400


def test_chart_controls_are_hidden_until_javascript_shows_them(make_run, owner):
    run, _ = make_run()
    html = browser_for(owner).get(f"/runs/{run.pk}/").content.decode()
    assert '<label class="js-only" hidden>Smoothing' in html


def duration_shown(client: Client, run: Run) -> str:
    html = client.get(f"/runs/{run.pk}/").content.decode()
    return html.split('<dd id="run-duration">', 1)[1].split("</dd>", 1)[0]


def test_duration_is_the_time_the_trainer_ran(make_run, owner):
    run, _ = make_run()
    run_transition(run=run, status=RunStatus.STARTING)
    run_transition(run=run, status=RunStatus.RUNNING)
    run_transition(run=run, status=RunStatus.SUCCEEDED)
    started = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    Run.objects.filter(pk=run.pk).update(started_at=started, finished_at=started.replace(hour=13, minute=2, second=5))
    assert duration_shown(browser_for(owner), run) == "1 h 02 min 05 s"


@pytest.mark.parametrize(
    "path",
    [
        [RunStatus.CANCELLED],  # cancelled while queued
        [RunStatus.FAILED],  # Ray refused the job
        [RunStatus.STARTING, RunStatus.LOST],  # submitted; its trainer never reported
        [RunStatus.STARTING, RunStatus.CANCELLED],
    ],
)
def test_a_run_that_finished_without_running_says_it_never_started(make_run, owner, path):
    run, _ = make_run()
    for status in path:
        run_transition(run=run, status=status)
    assert duration_shown(browser_for(owner), run) == "never started"


def test_a_run_still_waiting_has_not_started_yet(make_run, owner):
    run, _ = make_run()
    client = browser_for(owner)
    assert duration_shown(client, run) == "not started yet"
    run_transition(run=run, status=RunStatus.STARTING)
    assert duration_shown(client, run) == "not started yet"


def test_a_finished_run_without_metrics_does_not_promise_any(make_run, owner):
    run, _ = make_run()
    client = browser_for(owner)
    assert "No metrics reported yet." in client.get(f"/runs/{run.pk}/").content.decode()
    run_transition(run=run, status=RunStatus.CANCELLED)
    assert "This run reported no metrics." in client.get(f"/runs/{run.pk}/").content.decode()


def test_compare_with_no_runs_at_all_points_to_a_new_run(owner):
    html = browser_for(owner).get("/compare/").content.decode()
    assert "You have no runs to compare yet" in html and "tick some below" not in html
