"""The launch and reconcile decisions of webapp.runs.lifecycle, with Ray's answers scripted.

tests/e2e/test_run_lifecycle.py runs the same code against a real Ray head; here each decision
(capacity, order, Ray down, refused submission, every job state, a silent trainer) is pinned down.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.core.tokens import hash_secret
from webapp.runs import lifecycle, ray_jobs
from webapp.runs.models import Run
from webapp.runs.services import run_cancel
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db


class FakeRay:
    """Ray's job API as the lifecycle sees it: what was submitted and stopped, and scripted states."""

    def __init__(self, monkeypatch) -> None:
        self.submitted: list[dict] = []
        self.stopped: list[str] = []
        self.states: dict[str, ray_jobs.JobState] = {}
        self.down = False
        self.refuse = False
        monkeypatch.setattr(ray_jobs, "submit", self.submit)
        monkeypatch.setattr(ray_jobs, "job_states", self.job_states)
        monkeypatch.setattr(ray_jobs, "stop", self.stop)
        monkeypatch.setattr(ray_jobs, "log_tail", lambda job_id, lines=40: "Traceback ...\nValueError: boom")

    def submit(self, *, job_id, entrypoint, env, metadata) -> None:
        if self.down:
            raise ray_jobs.RayUnavailable("connection refused")
        if self.refuse:
            raise ray_jobs.SubmissionRefused("bad runtime_env")
        self.submitted.append({"job_id": job_id, "entrypoint": entrypoint, "env": env})
        self.states[job_id] = ray_jobs.JobState("RUNNING", "", int(metadata["tirlab_run"]))

    def job_states(self):
        if self.down:
            raise ray_jobs.RayUnavailable("connection refused")
        return dict(self.states)

    def stop(self, job_id: str) -> bool:
        self.stopped.append(job_id)
        if (job := self.states.get(job_id)) is not None:
            self.states[job_id] = ray_jobs.JobState("STOPPED", "stopped", job.run_id)
        return True


@pytest.fixture
def ray(monkeypatch, settings, tmp_path) -> FakeRay:
    settings.MAX_CONCURRENT_RUNS = 1
    settings.RUNS_DIR = tmp_path / "runs"
    settings.HEARTBEAT_TIMEOUT_S = 60
    return FakeRay(monkeypatch)


def managed(make_run, name: str) -> Run:
    return make_run(name=name, managed=True)[0]


def test_the_oldest_queued_run_launches_while_capacity_allows(ray, make_run):
    first, second = managed(make_run, "first"), managed(make_run, "second")
    assert lifecycle.launch_queued() == [first.pk]
    first.refresh_from_db()
    assert first.status == "starting" and first.ray_job_id == ray.submitted[0]["job_id"]
    # The token the trainer gets is the one whose hash the run keeps; it is not on the command line.
    token = ray.submitted[0]["env"]["TIRLAB_RUN_TOKEN"]
    assert first.token_hash == hash_secret(token) and token not in ray.submitted[0]["entrypoint"]
    assert (lifecycle.run_dir(first) / "run-config.json").exists()
    assert lifecycle.launch_queued() == []  # capacity 1 is taken
    run_transition(run=first, status="running")
    run_transition(run=first, status="succeeded")
    assert lifecycle.launch_queued() == [second.pk]


def test_a_cancelled_queued_run_never_starts(ray, make_run):
    run = managed(make_run, "cancelled early")
    run_cancel(run=run)
    assert lifecycle.launch_queued() == [] and ray.submitted == []


def test_runs_you_start_yourself_are_not_launched(ray, make_run):
    make_run(name="external", managed=False)
    assert lifecycle.launch_queued() == []


def test_ray_down_leaves_the_run_queued_and_a_refusal_fails_it(ray, make_run):
    run = managed(make_run, "waits")
    ray.down = True
    assert lifecycle.launch_queued() == []
    run.refresh_from_db()
    assert (run.status, run.ray_job_id, run.token_hash) == ("queued", "", "")
    ray.down, ray.refuse = False, True
    lifecycle.launch_queued()
    run.refresh_from_db()
    assert run.status == "failed" and "bad runtime_env" in run.error


def launched(ray, make_run, name="r") -> Run:
    run = managed(make_run, name)
    lifecycle.launch_queued()
    run.refresh_from_db()
    return run


@pytest.mark.parametrize(
    ("job_status", "expected", "in_error"),
    [("SUCCEEDED", "succeeded", ""), ("FAILED", "failed", "ValueError: boom"), ("STOPPED", "failed", "stopped")],
)
def test_an_ended_job_ends_the_run(ray, make_run, job_status, expected, in_error):
    run = launched(ray, make_run)
    run_transition(run=run, status="running")
    ray.states[run.ray_job_id] = ray_jobs.JobState(job_status, "stopped" if job_status == "STOPPED" else "exit 1")
    lifecycle.reconcile()
    run.refresh_from_db()
    assert run.status == expected and in_error in run.error


def test_a_vanished_job_makes_the_run_lost_once_past_the_submit_grace(ray, make_run):
    run = launched(ray, make_run)
    ray.states.clear()
    lifecycle.reconcile()
    run.refresh_from_db()
    assert run.status == "starting"  # just submitted: Ray may not list it yet
    Run.objects.filter(pk=run.pk).update(submitted_at=timezone.now() - timedelta(minutes=5))
    lifecycle.reconcile()
    run.refresh_from_db()
    assert run.status == "lost"
    assert "no longer exists" in run.log_lines.order_by("-time", "-id").first().message


def test_a_silent_trainer_is_lost_and_its_job_stopped_then_the_next_run_starts(ray, make_run):
    run = launched(ray, make_run, "silent")
    waiting = managed(make_run, "next")
    long_ago = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(status="running", heartbeat_at=long_ago, submitted_at=long_ago)
    counts = lifecycle.reconcile()
    run.refresh_from_db()
    waiting.refresh_from_db()
    assert run.status == "lost" and ray.stopped == [run.ray_job_id]
    assert counts["lost"] == 1 and counts["launched"] == 1 and waiting.status == "starting"


def test_a_slow_start_is_judged_by_the_start_limit_not_the_heartbeat_timeout(ray, make_run, settings):
    settings.HEARTBEAT_TIMEOUT_S, settings.START_TIMEOUT_S = 20, 600
    run = launched(ray, make_run)
    Run.objects.filter(pk=run.pk).update(submitted_at=timezone.now() - timedelta(seconds=90))
    lifecycle.reconcile()
    run.refresh_from_db()
    assert run.status == "starting"  # 90 s importing torch on a busy node is not a lost run
    Run.objects.filter(pk=run.pk).update(submitted_at=timezone.now() - timedelta(seconds=700))
    lifecycle.reconcile()
    run.refresh_from_db()
    assert run.status == "lost" and ray.stopped == [run.ray_job_id]


def test_a_running_job_with_a_fresh_heartbeat_is_left_alone(ray, make_run):
    run = launched(ray, make_run)
    Run.objects.filter(pk=run.pk).update(status="running", heartbeat_at=timezone.now())
    assert lifecycle.reconcile()["checked"] == 1
    run.refresh_from_db()
    assert run.status == "running" and ray.stopped == []


def test_reconcile_stops_the_job_of_a_recently_cancelled_run_if_it_still_runs(ray, make_run):
    run = launched(ray, make_run)
    run_cancel(run=run)
    lifecycle.reconcile()
    assert ray.stopped == [run.ray_job_id]


def test_ray_down_during_reconcile_changes_nothing(ray, make_run):
    run = launched(ray, make_run)
    ray.down = True
    lifecycle.reconcile()
    run.refresh_from_db()
    assert run.status == "starting"


def test_a_job_whose_launch_never_committed_is_stopped_and_the_run_launched_again(ray, make_run):
    """The worker died between submitting the job and committing: Ray runs a job no run records."""
    run = managed(make_run, "interrupted launch")
    orphan = f"tirlab-run-{run.pk}-deadbeef"
    ray.states[orphan] = ray_jobs.JobState("RUNNING", "", run.pk)
    counts = lifecycle.reconcile()
    run.refresh_from_db()
    assert ray.stopped == [orphan] and counts["stopped"] == 1
    assert run.status == "starting" and run.ray_job_id not in ("", orphan)  # launched again, under a new job
    assert any("its launch did not complete" in line.message for line in run.log_lines.all())
    lifecycle.reconcile()
    assert ray.stopped == [orphan]  # the job the run records is left alone


def test_no_job_is_stopped_while_a_launch_holds_the_lock(ray, make_run, django_db_blocker):
    import psycopg
    from django.db import connection

    run = managed(make_run, "launch under way")
    ray.states[f"tirlab-run-{run.pk}-inflight"] = ray_jobs.JobState("RUNNING", "", run.pk)
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(
        **{k: v for k, v in params.items() if k in ("dbname", "user", "host", "port", "password")}
    ) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", [lifecycle._LAUNCH_LOCK])
        jobs, stopped = lifecycle._jobs_with_orphans_stopped()
    assert stopped == 0 and ray.stopped == [] and jobs
