"""The life of a managed run: launched as a Ray job when capacity allows, supervised, stopped, resumed.

- `launch_queued()` starts the oldest queued runs while fewer than MAX_CONCURRENT_RUNS are starting
  or running: it mints the run's ingest token, writes the config snapshot to the run's folder,
  submits `python -m trainer run` as a Ray job under an id recorded on the run, and moves the run to
  `starting` — all in one transaction, under a lock that makes concurrent launchers take turns. An
  evaluation run (webapp.runs.evaluations) is submitted alike, as `python -m trainer evaluate`.
- `reconcile()` (Celery beat, every RECONCILE_EVERY_S) compares every starting or running run with
  its Ray job and its last heartbeat: an ended job ends the run (failed with the job's log tail), a
  vanished job or a silent trainer makes it `lost`; then it launches what capacity allows. It keeps
  no state of its own, so a restarted worker or web process loses nothing.
- `stop_job(run)` asks Ray to stop a cancelled run's trainer.

Trainers themselves move their run to `running` (first heartbeat) and to `succeeded` (final report)
through the ingest endpoint.
"""

import json
import logging
import secrets
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from trainer.config import RunConfig
from webapp.core.tokens import hash_secret, new_secret
from webapp.runs import ray_jobs, verl_runs
from webapp.runs.models import RUN_TOKEN_PREFIX, Run, RunStatus
from webapp.runs.transitions import IllegalTransition, run_log, run_transition
from webapp.runs.verl_runs import is_verl_run

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key: one launcher at a time fills the free slots.
_LAUNCH_LOCK = 7_270_001
# A run that became `starting` this recently may not be listed by Ray yet.
_SUBMIT_GRACE_S = 30
# Cancelled runs whose job is checked (and stopped) again, in case the stop request was lost.
_RECENTLY_FINISHED = timedelta(minutes=10)


def run_dir(run: Run) -> Path:
    return settings.RUNS_DIR / str(run.pk)


def launch_queued() -> list[int]:
    """Launch the oldest queued runs while capacity allows; the ids launched."""
    launched: list[int] = []
    while True:
        try:
            run = _launch_next()
        except ray_jobs.RayUnavailable as exc:
            log.warning("cannot launch queued runs now: %s", exc)
            break
        if run is None:
            break
        launched.append(run.pk)
    return launched


def _launch_next() -> Run | None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LAUNCH_LOCK])
        active = Run.objects.filter(managed=True, status__in=(RunStatus.STARTING, RunStatus.RUNNING)).count()
        if active >= settings.MAX_CONCURRENT_RUNS:
            return None
        run = (
            Run.objects.select_for_update(skip_locked=True)
            .filter(managed=True, status=RunStatus.QUEUED)
            .order_by("created_at", "pk")
            .first()
        )
        if run is None:
            return None
        token = new_secret(RUN_TOKEN_PREFIX)
        job_id = f"tirlab-run-{run.pk}-{secrets.token_hex(4)}"
        folder = run_dir(run)
        folder.mkdir(parents=True, exist_ok=True)
        config_path = folder / "run-config.json"
        config_path.write_text(json.dumps(run.config, indent=2), encoding="utf-8")
        run.token_hash = hash_secret(token)
        run.ray_job_id = job_id
        run.submitted_at = timezone.now()
        run.save(update_fields=["token_hash", "ray_job_id", "submitted_at"])
        report_url = f"{settings.PUBLIC_URL}/api/v1/runs/{run.pk}/ingest"
        env = {"TIRLAB_RUN_TOKEN": token, "TIRLAB_MODEL_CACHE": str(settings.MODEL_CACHE)}
        if is_verl_run(run):
            # The cluster may have changed since the run was created: refused now, nothing is submitted.
            shortfall = _verl_shortfall(run)
            if shortfall:
                run_transition(run=run, status=RunStatus.FAILED, error=f"not submitted: this run {shortfall}")
                return run
            entrypoint = verl_runs.job_entrypoint(
                config_path=str(config_path),
                out_dir=str(folder),
                name=run.name,
                report_url=report_url,
                resume=run.resume_from,
            )
            env |= verl_runs.job_env(run, token)
        elif run.is_evaluation:
            entrypoint = ray_jobs.evaluation_entrypoint(
                config_path=str(config_path),
                out_dir=str(folder),
                report_url=report_url,
                checkpoint=run.evaluated_checkpoint,
                step=run.evaluated_step or 0,
            )
        else:
            entrypoint = ray_jobs.trainer_entrypoint(
                config_path=str(config_path), out_dir=str(folder), report_url=report_url, resume=run.resume_from
            )
        try:
            # Inside the transaction: if Ray is unreachable nothing changes and the run stays queued.
            ray_jobs.submit(job_id=job_id, entrypoint=entrypoint, env=env, metadata={"tirlab_run": str(run.pk)})
        except ray_jobs.SubmissionRefused as exc:
            run_transition(run=run, status=RunStatus.FAILED, error=f"Ray refused the job: {exc}")
            return run
        run_transition(run=run, status=RunStatus.STARTING, reason=f"submitted as Ray job {job_id}")
        return run


def _verl_shortfall(run: Run) -> str:
    try:
        return verl_runs.gpu_shortfall(RunConfig.model_validate(run.config), verl_runs.cluster_gpus())
    except verl_runs.ClusterUnreachable as exc:
        raise ray_jobs.RayUnavailable(str(exc)) from exc


def stop_job(run: Run) -> None:
    """Stop the run's Ray job, if it has one that still runs."""
    if run.ray_job_id and ray_jobs.stop(run.ray_job_id):
        run_log(run=run, message=f"asked Ray to stop job {run.ray_job_id}")


def _end(run: Run, status: str, reason: str, error: str = "") -> None:
    try:
        run_transition(run=run, status=status, reason=reason, error=error)
    except IllegalTransition:
        pass  # it ended meanwhile (its trainer's final report won the race): that state stands


def reconcile() -> dict[str, int]:
    """Bring every active managed run in line with its Ray job and heartbeat, then fill capacity."""
    counts = {"checked": 0, "ended": 0, "lost": 0, "stopped": 0, "launched": 0}
    active = list(
        Run.objects.filter(managed=True, status__in=(RunStatus.STARTING, RunStatus.RUNNING)).exclude(ray_job_id="")
    )
    recent = list(
        Run.objects.filter(
            managed=True,
            status__in=(RunStatus.CANCELLED, RunStatus.LOST),
            finished_at__gte=timezone.now() - _RECENTLY_FINISHED,
        ).exclude(ray_job_id="")
    )
    if active or recent or Run.objects.filter(managed=True, status=RunStatus.QUEUED).exists():
        try:
            jobs, orphans_stopped = _jobs_with_orphans_stopped()
        except ray_jobs.RayUnavailable as exc:
            log.warning("reconcile: %s", exc)
            return counts
        counts["stopped"] += orphans_stopped
        now = timezone.now()
        for run in active:
            counts["checked"] += 1
            outcome = _reconcile_one(run, jobs.get(run.ray_job_id), now)
            if outcome:
                counts[outcome] += 1
        for run in recent:
            job = jobs.get(run.ray_job_id)
            if job is not None and job.status in ray_jobs.ACTIVE_JOB_STATES:
                stop_job(run)
                counts["stopped"] += 1
    counts["launched"] = len(launch_queued())
    return counts


def _jobs_with_orphans_stopped() -> tuple[dict[str, "ray_jobs.JobState"], int]:
    """Ray's jobs, after stopping those of tirlab runs that no run records: their launcher died (a killed
    worker, a lost database connection) after submitting the job but before its transaction committed,
    so the run is still queued and will be launched again, and the job's trainer holds a token nobody
    knows. Returns the jobs and how many were stopped.

    Taken under the launch lock, so that no launch is half-done meanwhile: every job a committed launch
    made is recorded on its run by then. While a launch holds the lock, nothing is stopped this time."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_LAUNCH_LOCK])
            locked = cursor.fetchone()[0]
        jobs = ray_jobs.job_states()
        if not locked:
            return jobs, 0
        unrecorded = {
            job_id: job.run_id
            for job_id, job in jobs.items()
            if job.run_id is not None and job.status in ray_jobs.ACTIVE_JOB_STATES
        }
        recorded = dict(Run.objects.filter(pk__in=set(unrecorded.values())).values_list("pk", "ray_job_id"))
        stopped = 0
        for job_id, run_id in unrecorded.items():
            if recorded.get(run_id) == job_id or not ray_jobs.stop(job_id):
                continue
            stopped += 1
            log.warning("stopped Ray job %s of run %s: no run records it (its launch did not complete)", job_id, run_id)
            if (run := Run.objects.filter(pk=run_id).first()) is not None:
                run_log(run=run, message=f"stopped Ray job {job_id}: its launch did not complete")
        return jobs, stopped


def _reconcile_one(run: Run, job: "ray_jobs.JobState | None", now) -> str:  # noqa: ANN001
    since_submit = (now - run.submitted_at).total_seconds() if run.submitted_at else float("inf")
    if job is None:
        if since_submit < _SUBMIT_GRACE_S:
            return ""
        _end(run, RunStatus.LOST, f"its Ray job {run.ray_job_id} no longer exists")
        return "lost"
    if job.status in ray_jobs.ACTIVE_JOB_STATES:
        if run.heartbeat_at is None:
            # Not heard from yet: getting a Ray worker and importing torch may take a while on a
            # busy node, so the start has its own, longer limit.
            waited = since_submit if run.submitted_at else (now - run.created_at).total_seconds()
            if waited > settings.START_TIMEOUT_S:
                _end(run, RunStatus.LOST, f"its trainer did not report within {waited:.0f} s of the submission")
                ray_jobs.stop(run.ray_job_id)
                return "lost"
            return ""
        silent = (now - run.heartbeat_at).total_seconds()
        if silent > settings.HEARTBEAT_TIMEOUT_S:
            _end(run, RunStatus.LOST, f"no heartbeat from its trainer for {silent:.0f} s")
            ray_jobs.stop(run.ray_job_id)
            return "lost"
        return ""
    if job.status == ray_jobs.SUCCEEDED:
        # The trainer's final report normally got here first; it did not (the web was down at its end).
        _end(run, RunStatus.SUCCEEDED, f"its Ray job {run.ray_job_id} succeeded")
        return "ended"
    tail = ray_jobs.log_tail(run.ray_job_id)
    if job.status == ray_jobs.STOPPED:
        _end(run, RunStatus.FAILED, f"its Ray job was stopped outside tirlab: {job.message}", error=_error(job, tail))
    else:
        _end(run, RunStatus.FAILED, f"its Ray job failed: {job.message}", error=_error(job, tail))
    return "ended"


def _error(job: "ray_jobs.JobState", tail: str) -> str:
    text = f"Ray job {job.status.lower()}: {job.message}".strip()
    return f"{text}\n--- last lines of the job log ---\n{tail}" if tail else text
