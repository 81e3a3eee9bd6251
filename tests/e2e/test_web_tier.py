"""The web tier under many trainers, and across processes.

Many trainers at once: with the production database settings, clients that report one metric step per
request, as fast as the server answers, get no 5xx and lose nothing, and the web tier holds no more
PostgreSQL connections than its bound — on a server whose max_connections leaves no room for more. The
server here is the test's own PostgreSQL (30 connections, 27 for ordinary clients): two web processes
with pools of 8 fit in it; a web tier holding one connection per request in flight, each kept until
its thread is collected, does not.

Across processes: a browser watching a run through one web process sees what the run's trainer posted
to another, as with several web nodes behind a load balancer (the Redis channel layer carries it).
"""

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
import websockets

from tests.e2e.own_services import WebStack, metrics_batch

pytestmark = pytest.mark.timeout(600)

CLIENTS = 24
STEPS = 40
WEB_PROCESSES, POOL_SIZE = 2, 8


@pytest.fixture(scope="module")
def stack() -> Iterator[WebStack]:
    s = WebStack(
        max_connections=30, env={"TIRLAB_WEB_PROCESSES": str(WEB_PROCESSES), "TIRLAB_DB_POOL_SIZE": str(POOL_SIZE)}
    )
    try:
        yield s
    finally:
        s.close()


class PeakConnections:
    """The most client connections to tirlab's database seen at once, sampled every 20 ms."""

    def __init__(self, stack: WebStack) -> None:
        self.stack = stack
        self.peak: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakConnections":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            now = self.stack.postgres.connections_by_application(self.stack.database)
            for name, count in now.items():
                self.peak[name] = max(self.peak[name], count)
            self.peak["(all)"] = max(self.peak["(all)"], sum(now.values()))


def report_steps(stack: WebStack, run_id: int, token: str, statuses: Counter[int]) -> None:
    """A trainer reporting every step, each once it has been answered; 429 and 503 are retried as asked."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=stack.url(""), headers=headers, timeout=60, trust_env=False) as client:
        for step in range(STEPS):
            while True:
                reply = client.post(f"/api/v1/runs/{run_id}/ingest", content=metrics_batch(step))
                statuses[reply.status_code] += 1
                if reply.status_code not in (429, 503):
                    break
                time.sleep(float(reply.headers["Retry-After"]))


def test_many_one_step_trainers_get_no_5xx_lose_nothing_and_stay_within_the_connection_bound(stack: WebStack):
    runs = [stack.create_run(f"trainer {i}") for i in range(CLIENTS)]
    statuses: Counter[int] = Counter()
    with PeakConnections(stack) as connections:
        threads = [
            threading.Thread(target=report_steps, args=(stack, run_id, token, statuses)) for run_id, token in runs
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    print(f"\n{CLIENTS} one-step trainers x {STEPS} steps: {dict(statuses)}; peak connections {dict(connections.peak)}")
    assert not {code for code in statuses if code >= 500}, (statuses, stack.logs())
    assert statuses[200] == CLIENTS * STEPS, statuses
    run_ids = [run_id for run_id, _ in runs]
    stored = stack.query(
        "SELECT run_id, count(*), count(DISTINCT step), min(step), max(step) FROM runs_metricstep"
        " WHERE run_id = ANY(%s) GROUP BY run_id",
        [run_ids],
    )
    assert sorted(stored) == sorted((run_id, STEPS, STEPS, 0, STEPS - 1) for run_id in run_ids)
    assert connections.peak["tirlab-web"] <= WEB_PROCESSES * POOL_SIZE, connections.peak
    assert connections.peak["(all)"] <= 27, connections.peak


def test_a_viewer_on_one_web_process_sees_what_a_trainer_posted_to_another(stack: WebStack) -> None:
    other = stack.another_web("web-b")
    run_id, token = stack.create_run("two web nodes")
    cookie = stack.session_cookie()

    async def watch_while_posting() -> list[int]:
        headers = {"Cookie": cookie, "Origin": stack.url("")}
        async with websockets.connect(
            f"ws://127.0.0.1:{stack.port}/ws/runs/{run_id}/", additional_headers=headers
        ) as ws:
            assert json.loads(await ws.recv())["event"] == "snapshot"
            reply = await asyncio.to_thread(
                httpx.post,
                stack.url(f"/api/v1/runs/{run_id}/ingest", port=other),
                content=metrics_batch(7),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                trust_env=False,
            )
            assert reply.status_code == 200, reply.text
            async with asyncio.timeout(30):
                while (event := json.loads(await ws.recv()))["event"] != "metrics":
                    pass
            return [row["step"] for row in event["data"]["steps"]]

    assert asyncio.run(watch_while_posting()) == [7]
