"""Ray's Job Submission API as tirlab uses it: submit a trainer, stop it, read job states and logs.

Everything Ray-specific of the run lifecycle is here; webapp/runs/lifecycle.py decides what to do.
The client talks HTTP to the job API of RAY_ADDRESS (the local head `make run` starts, or a
cluster's dashboard address).
"""

import shlex
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings

# Job states, as Ray names them.
PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED = "PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED"
ACTIVE_JOB_STATES = (PENDING, RUNNING)
LOG_TAIL_LINES = 40

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


class RayUnavailable(Exception):
    """Ray cannot be reached now; a later attempt may succeed."""


class SubmissionRefused(Exception):
    """Ray answered, and refused the job; retrying the same submission cannot help."""


@dataclass(frozen=True)
class JobState:
    status: str
    message: str
    run_id: int | None = None  # the tirlab run it was submitted for (its metadata)


def _client() -> Any:
    address = settings.RAY_ADDRESS
    if not address:
        raise RayUnavailable(
            "RAY_ADDRESS is not set: `make run` starts a local Ray head and sets it, or point it at the job "
            "API of a Ray cluster (http://head:8265)"
        )
    with _clients_lock:
        if address not in _clients:
            from ray.job_submission import JobSubmissionClient

            try:
                _clients[address] = JobSubmissionClient(address)
            except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, requests' errors alike
                raise RayUnavailable(f"cannot reach Ray at {address}: {exc}") from exc
        return _clients[address]


def _forget_client() -> None:
    with _clients_lock:
        _clients.pop(settings.RAY_ADDRESS, None)


def trainer_entrypoint(*, config_path: str, out_dir: str, report_url: str, resume: str = "") -> str:
    """The job's command line. The run token goes in the job's environment, not here: command lines
    are visible to every user of the node (`ps`)."""
    argv = [settings.RAY_PYTHON, "-m", "trainer", "run", "--config", config_path, "--out", out_dir]
    argv += ["--report-url", report_url]
    if resume:
        argv += ["--resume", resume]
    return shlex.join(argv)


def evaluation_entrypoint(*, config_path: str, out_dir: str, report_url: str, checkpoint: str, step: int) -> str:
    """An evaluation run's command line: a checkpoint (or, with none, the config's model) evaluated, its
    results reported at `step`."""
    argv = [settings.RAY_PYTHON, "-m", "trainer", "evaluate", "--config", config_path, "--out", out_dir]
    argv += ["--report-url", report_url, "--step", str(step)]
    if checkpoint:
        argv += ["--checkpoint", checkpoint]
    return shlex.join(argv)


def submit(*, job_id: str, entrypoint: str, env: dict[str, str], metadata: dict[str, str]) -> None:
    """Submit a job under our own id (so a retried submission of the same run cannot start it twice)."""
    client = _client()
    runtime_env = {
        # The project is importable from the job's working directory, whatever it is.
        "env_vars": {"PYTHONPATH": str(settings.BASE_DIR), "PYTHONUNBUFFERED": "1", **env},
    }
    try:
        client.submit_job(entrypoint=entrypoint, submission_id=job_id, runtime_env=runtime_env, metadata=metadata)
    except RuntimeError as exc:
        # The SDK raises RuntimeError for an HTTP error answer: Ray is up and said no.
        raise SubmissionRefused(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - connection errors: Ray went away
        _forget_client()
        raise RayUnavailable(f"cannot submit to Ray at {settings.RAY_ADDRESS}: {exc}") from exc


def job_states() -> dict[str, JobState]:
    """Every job Ray knows, by submission id."""
    client = _client()
    try:
        jobs = client.list_jobs()
    except Exception as exc:  # noqa: BLE001
        _forget_client()
        raise RayUnavailable(f"cannot list Ray jobs at {settings.RAY_ADDRESS}: {exc}") from exc
    return {
        job.submission_id: JobState(
            str(getattr(job.status, "value", job.status)), job.message or "", _run_id(job.metadata or {})
        )
        for job in jobs
        if job.submission_id
    }


def _run_id(metadata: dict[str, str]) -> int | None:
    value = metadata.get("tirlab_run", "")
    return int(value) if value.isdigit() else None


def stop(job_id: str) -> bool:
    """Ask Ray to stop the job (SIGTERM to the trainer, SIGKILL after Ray's grace); False if it had ended."""
    client = _client()
    try:
        return bool(client.stop_job(job_id))
    except RuntimeError:
        return False  # no such job (never submitted, or deleted)
    except Exception as exc:  # noqa: BLE001
        _forget_client()
        raise RayUnavailable(f"cannot stop Ray job {job_id}: {exc}") from exc


def log_tail(job_id: str, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of the job's own log (the trainer's stdout and stderr), or '' if unavailable."""
    try:
        text = _client().get_job_logs(job_id)
    except Exception:  # noqa: BLE001 - a log tail is a courtesy on an already failed run
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])
