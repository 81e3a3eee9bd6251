"""Fault drills: a trainer streams its reports while the web server is killed, PostgreSQL restarts or Redis
restarts, and every step, trajectory and log line arrives exactly once; live pushes and Celery come back by
themselves. Each drill runs against a PostgreSQL and a Redis of its own (tests/e2e/own_services.py), never
the machine's, and asserts on what was stored, not on timings it does not control.

The trainer is tirlab's own reporter (trainer.report.client.Reporter): batched, retried, spooled to disk while
the dashboard does not answer, as a real run reports.
"""

import asyncio
import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import websockets

from tests.e2e.lifecycle_stack import PY, REPO
from tests.e2e.own_services import WebStack, metrics_batch, wait_for
from trainer.contract import TrajectoryIn
from trainer.report.client import Reporter

pytestmark = pytest.mark.timeout(900)

STEPS = 300
GROUP = 4  # trajectories a step


@pytest.fixture(scope="module")
def stack() -> Iterator[WebStack]:
    s = WebStack(env={"TIRLAB_WEB_PROCESSES": "2", "TIRLAB_DB_POOL_TIMEOUT_S": "2"}, worker=True)
    try:
        yield s
    finally:
        s.close()


class Drill:
    """A fault running in a thread; `finish()` waits for it and raises what it raised."""

    def __init__(self, fault: Callable[[], None]) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fault,))
        self.thread.start()

    def _run(self, fault: Callable[[], None]) -> None:
        try:
            fault()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread by finish()
            self.error = exc

    def finish(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error


def stream(stack: WebStack, name: str, out: Path, faults: dict[int, Callable[[], None]]) -> tuple[int, int]:
    """A run whose trainer reports STEPS steps (metrics, a GRPO group of trajectories, a log line each);
    at the steps named in `faults` the fault starts in a thread while the trainer keeps reporting. A fault
    waits for the one before it to end (two restarts of one process at once would start it twice), and
    a fault that raised fails the test. Returns the run's id and how many times the reporter had to back
    off and retry."""
    run_id, token = stack.create_run(name)
    url = stack.url(f"/api/v1/runs/{run_id}/ingest")
    drills: list[Drill] = []
    # The web's listening socket outlives its processes (the stack holds it, as devstack does), so a request
    # sent while they are down waits in the socket's backlog: a short timeout makes the reporter give up on
    # it and send it again, so that a retried batch the server did get after all is part of the drill.
    reporter = Reporter(
        out, report_url=url, run_token=token, flush_interval_s=0.05, backoff_max_s=2, request_timeout_s=1.0
    )
    with reporter:
        reporter.set_status("running")
        for step in range(STEPS):
            if step in faults:
                if drills:
                    drills[-1].finish()
                drills.append(Drill(faults[step]))
            reporter.log_metrics(step, {"accuracy": step / STEPS, "reward/mean": 0.5})
            reporter.log_trajectories(
                TrajectoryIn(step=step, prompt_index=0, sample_index=i, prompt="2+2?", reward=1.0, correct=True)
                for i in range(GROUP)
            )
            reporter.log(f"step {step} done")
            time.sleep(0.02)
        for drill in drills:
            drill.finish()
        reporter.set_status("succeeded")
    assert reporter.close(), f"reports left undelivered in {out}\n{stack.logs()}"
    return run_id, reporter.retries


def assert_everything_arrived_once(stack: WebStack, run_id: int) -> None:
    steps = stack.query("SELECT count(*), count(DISTINCT step) FROM runs_metricstep WHERE run_id = %s", [run_id])
    assert steps == [(STEPS, STEPS)]
    trajectories = stack.query(
        "SELECT count(*), count(DISTINCT (step, prompt_index, sample_index)) FROM runs_trajectory WHERE run_id = %s",
        [run_id],
    )
    assert trajectories == [(STEPS * GROUP, STEPS * GROUP)]
    lines = stack.query(
        "SELECT count(*), count(DISTINCT message) FROM runs_runlogline"
        " WHERE run_id = %s AND source = 'trainer' AND message LIKE 'step %% done'",
        [run_id],
    )
    assert lines == [(STEPS, STEPS)]
    assert stack.query("SELECT status FROM runs_run WHERE id = %s", [run_id]) == [("succeeded",)]


def test_the_web_server_killed_twice_mid_stream_loses_and_doubles_nothing(stack: WebStack, tmp_path: Path) -> None:
    def kill_and_restart() -> None:
        stack.procs["web"].stop(signal.SIGKILL)
        time.sleep(3)
        stack.start_web()

    run_id, retries = stream(stack, "web killed", tmp_path, {100: kill_and_restart, 200: kill_and_restart})
    assert retries >= 2  # it did meet the outages
    assert_everything_arrived_once(stack, run_id)


def celery_answers_ping(stack: WebStack) -> bool:
    ping = subprocess.run(
        [PY, "-m", "celery", "-A", "webapp", "inspect", "ping", "--timeout", "3"],
        cwd=REPO,
        env=stack.env,
        capture_output=True,
        text=True,
    )
    return ping.returncode == 0 and "pong" in ping.stdout


def test_redis_restarted_ingest_goes_on_and_pushes_and_celery_come_back_by_themselves(stack: WebStack) -> None:
    wait_for(lambda: celery_answers_ping(stack), 60, "the Celery worker answering ping", stack.logs)
    run_id, token = stack.create_run("redis restarted")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    cookie = stack.session_cookie()

    def post(step: int) -> int:
        reply = httpx.post(
            stack.url(f"/api/v1/runs/{run_id}/ingest"), content=metrics_batch(step), headers=headers, trust_env=False
        )
        return reply.status_code

    async def drill() -> tuple[list[int], list[int], list[int]]:
        """One viewer's socket, open across the restart: the steps it is pushed before and after."""
        ws_headers = {"Cookie": cookie, "Origin": stack.url("")}
        url = f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/"
        async with websockets.connect(url, additional_headers=ws_headers) as ws:

            async def pushed_within(seconds: float) -> list[int]:
                steps: list[int] = []
                try:
                    async with asyncio.timeout(seconds):
                        while True:
                            event = json.loads(await ws.recv())
                            if event["event"] == "metrics":
                                steps.extend(row["step"] for row in event["data"]["steps"])
                except TimeoutError:
                    pass
                return steps

            assert json.loads(await ws.recv())["event"] == "snapshot"
            assert await asyncio.to_thread(post, 0) == 200
            before = await pushed_within(5)
            stack.redis.stop()
            during = [await asyncio.to_thread(post, step) for step in range(1, 4)]
            stack.redis.start()
            after: list[int] = []
            step = 4
            deadline = time.monotonic() + 60
            while not after and time.monotonic() < deadline:
                assert await asyncio.to_thread(post, step) == 200
                step += 1
                after = await pushed_within(1)
            return before, during, after

    before, during, after = asyncio.run(drill())
    assert before == [0]
    assert during == [200, 200, 200]  # stored; only their pushes are lost (a page polls while its socket is quiet)
    assert after and min(after) >= 4, after  # the same socket is pushed to again, with nothing to reconnect
    stored = stack.query("SELECT count(*), count(DISTINCT step) FROM runs_metricstep WHERE run_id = %s", [run_id])
    assert stored[0][0] == stored[0][1] >= 5
    wait_for(
        lambda: celery_answers_ping(stack), 60, "the Celery worker answering ping after Redis came back", stack.logs
    )


# Last in the module: for a few seconds after PostgreSQL is back, a web process whose pool is still
# between reconnection attempts answers 503 (as it should: clients retry), which a drill after it would meet.
def test_postgres_restarted_mid_stream_answers_503_meanwhile_and_loses_nothing(stack: WebStack, tmp_path: Path) -> None:
    probe_id, probe_token = stack.create_run("probe")
    answers: list[httpx.Response] = []

    def restart_postgres() -> None:
        stack.postgres.stop()
        answers.append(
            httpx.post(
                stack.url(f"/api/v1/runs/{probe_id}/ingest"),
                content=metrics_batch(0),
                headers={"Authorization": f"Bearer {probe_token}", "Content-Type": "application/json"},
                timeout=60,
                trust_env=False,
            )
        )
        time.sleep(2)
        stack.postgres.start()

    web_before = stack.procs["web"].proc.pid
    run_id, retries = stream(stack, "postgres restarted", tmp_path, {100: restart_postgres})
    assert retries >= 1
    assert_everything_arrived_once(stack, run_id)
    (down,) = answers
    assert down.status_code == 503 and int(down.headers["Retry-After"]) >= 1, down.text
    assert "nothing was written" in down.json()["detail"]
    assert stack.procs["web"].alive() and stack.procs["web"].proc.pid == web_before  # it rode it out
    assert stack.query("SELECT count(*) FROM runs_metricstep WHERE run_id = %s", [probe_id]) == [(0,)]
