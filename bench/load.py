"""Benchmark: tirlab under load — trainers reporting, browsers watching, readers polling, all at once.

Starts tirlab the way `make run` does (`python -m webapp.devstack run`: embedded PostgreSQL and Redis
under a temporary var dir unless DATABASE_URL / REDIS_URL are set, a local Ray head, the web
processes, the Celery worker and beat), then for each repetition:

* N trainers, each reporting to its own run (created with `launch: false`), one step (or
  `--steps-per-request` steps) per `POST /ingest` at `--rate` steps/s, 40 metric values a step.
  Like tirlab's reporter they retry 429, 503, other 5xx and dropped connections, waiting what
  `Retry-After` says, so a step is lost only if the server refused it for good or stored it wrongly;
* M websocket viewers on `/ws/runs/<id>/` (spread over the runs, or all on one with `--watch one`),
  in a process of their own, timing each pushed step against the moment its trainer sent it;
* K readers polling the runs list and a run's downsampled metrics, as open run pages do.

It prints ingest values/s, request latency p50/p99 (ingest and reads), live-push latency p50/p99,
5xx answers, 429/503 answers, steps lost, pushes missed, the peak number of PostgreSQL connections
held by each of tirlab's processes (sampled every 50 ms from pg_stat_activity) against the bound
devstack announced, each role's memory (PSS) after a warm-up and at the end, and the cores each kept busy.

    .venv/bin/python bench/load.py                   # 32 one-step trainers at 1 step/s, 200 viewers, 60 s
    .venv/bin/python bench/load.py --repeat 3        # the same three times: medians
    .venv/bin/python bench/load.py --rate 2          # two steps a second each
    .venv/bin/python bench/load.py --trainers 8 --steps-per-request 20
    .venv/bin/python bench/load.py --duration 600    # a 10-minute soak: is memory flat?
    .venv/bin/python bench/load.py --quick           # smoke check, about a minute

The bench's own clients share the machine's cores with the server; on a 2-core machine that is
part of what is measured. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psutil
import psycopg
import websockets
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ingest import METRIC_KEYS  # noqa: E402

PY = sys.executable
USER, PASSWORD = "bench", "bench-load-password-1"
GOALS = {"push_p99_ms": 250.0}
_START = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _START:6.1f}s] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# --- the stack, as make run starts it ----------------------------------------------------------


def _conninfo(url: str) -> str:
    return "postgresql://" + url.split("://", 1)[1] if url.startswith("postgres://") else url


@dataclass
class Stack:
    url: str
    var_dir: Path
    database: str  # a conninfo for psycopg
    budget: str  # devstack's line about the database connections it may open
    process: subprocess.Popen[bytes]
    output: Path


@contextmanager
def throwaway_database(server_url: str) -> Iterator[str]:
    name = f"tirlab_load_{os.getpid()}"
    with psycopg.connect(_conninfo(server_url), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(_conninfo(server_url), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def tirlab_stack(extra_env: dict[str, str]) -> Iterator[Stack]:
    var_dir = Path(tempfile.mkdtemp(prefix="tl-load-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIRLAB_")}
    env.update(
        TIRLAB_VAR_DIR=str(var_dir),
        TIRLAB_PORT="0",
        TIRLAB_ADMIN_USER=USER,
        TIRLAB_ADMIN_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
        **extra_env,
    )
    with _database(env) as database:
        output = var_dir / "devstack.out"
        log(f"starting `python -m webapp.devstack run` (var dir {var_dir}; output in {output})")
        with output.open("wb") as sink:
            process = subprocess.Popen(
                [PY, "-m", "webapp.devstack", "run"],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            url = _wait_for_line(process, output, r"tirlab is up at (\S+)", 300)
            budget = _find_line(output, r"(database connections: .*)") or "(devstack announced no bound)"
            log(f"tirlab is up at {url}")
            yield Stack(url, var_dir, database, budget, process, output)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@contextmanager
def _database(env: dict[str, str]) -> Iterator[str]:
    if server := env.get("DATABASE_URL"):
        with throwaway_database(server) as url:
            env["DATABASE_URL"] = url
            yield _conninfo(url)
    else:
        yield f"host={Path(env['TIRLAB_VAR_DIR']) / 'postgres'} user=postgres dbname=postgres"


def _find_line(output: Path, pattern: str) -> str | None:
    match = re.search(pattern, output.read_text(errors="replace"))
    return match[1] if match else None


def _wait_for_line(process: subprocess.Popen[bytes], output: Path, pattern: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := _find_line(output, pattern):
            return found
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"devstack did not come up:\n{output.read_text(errors='replace')[-4000:]}")


# --- what the server side holds: connections and memory ---------------------------------------


def role(proc: psutil.Process) -> str:
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return "gone"
    for name, marker in (
        ("web", "daphne"),
        ("worker", "celery -A webapp worker"),
        ("beat", "celery -A webapp beat"),
        ("postgres", "postgres"),
        ("redis", "redis-server"),
        ("ray", "ray"),
        ("devstack", "webapp.devstack"),
    ):
        if marker in cmd:
            return name
    return "other"


def memory_by_role(root: int, var_dir: Path) -> dict[str, float]:
    """PSS in MB of the stack's processes, summed by role (`web` is every web process). PSS shares each
    shared page among the processes that map it, so sums mean something (RSS would count PostgreSQL's
    shared buffers once per backend)."""
    totals: dict[str, float] = defaultdict(float)
    try:
        procs = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    except psutil.Error:
        return {}
    procs += _embedded_postgres(var_dir)
    for proc in procs:
        try:
            totals[role(proc)] += proc.memory_full_info().pss / 2**20
        except psutil.Error:
            continue
    return dict(totals)


def cpu_by_role(root: int, var_dir: Path) -> dict[str, float]:
    """CPU seconds (user + system) each role's processes have used so far."""
    totals: dict[str, float] = defaultdict(float)
    try:
        procs = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    except psutil.Error:
        return {}
    for proc in procs + _embedded_postgres(var_dir):
        try:
            times = proc.cpu_times()
            totals[role(proc)] += times.user + times.system
        except psutil.Error:
            continue
    return dict(totals)


def _embedded_postgres(var_dir: Path) -> list[psutil.Process]:
    """pg_ctl daemonizes the embedded PostgreSQL: its postmaster and backends are not under devstack."""
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "postgres" and str(var_dir) in " ".join(proc.info["cmdline"] or []):
            try:
                return [proc, *proc.children(recursive=True)]
            except psutil.Error:
                return []
    return []


class ConnectionSampler:
    """Counts the database's client connections by application_name every 50 ms, in a thread."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self.peak: dict[str, int] = {}
        self.peak_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        query = """
            SELECT coalesce(nullif(application_name, ''), '(unnamed)'), count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND backend_type = 'client backend'
              AND application_name NOT LIKE 'bench%'
            GROUP BY 1
        """
        with psycopg.connect(self.conninfo, autocommit=True, application_name="bench-sampler") as conn:
            while not self._stop.wait(0.05):
                counts = dict(conn.execute(query).fetchall())
                for name, count in counts.items():
                    self.peak[name] = max(self.peak.get(name, 0), count)
                self.peak_total = max(self.peak_total, sum(counts.values()))


class MemorySampler:
    """The stack's memory by role every 10 s, in a thread: for the soak's start, end and peak."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.monotonic(), memory_by_role(self.stack.process.pid, self.stack.var_dir)))

    def _run(self) -> None:
        while True:
            self.samples.append((time.monotonic(), memory_by_role(self.stack.process.pid, self.stack.var_dir)))
            if self._stop.wait(10.0):
                return

    def warm_and_end(self, warmup_s: float) -> tuple[dict[str, float], dict[str, float]]:
        """The first sample at least `warmup_s` into the load (caches filled, pools grown), and the last."""
        t0 = self.samples[0][0]
        warm = next((m for t, m in self.samples if t - t0 >= warmup_s), self.samples[-1][1])
        return warm, self.samples[-1][1]


# --- the clients --------------------------------------------------------------------------------


@dataclass
class Options:
    trainers: int
    viewers: int
    readers: int
    rate: float  # steps/s per trainer
    steps_per_request: int
    duration: float
    watch: str  # spread | one
    read_interval: float


@dataclass
class Result:
    wall_s: float = 0.0
    steps_sent: int = 0
    steps_acked: int = 0
    steps_refused: int = 0  # a 4xx other than 429: never retried, so lost
    statuses: Counter = field(default_factory=Counter)
    transport_errors: int = 0
    ingest_ms: list[float] = field(default_factory=list)
    read_ms: list[float] = field(default_factory=list)
    read_statuses: Counter = field(default_factory=Counter)
    push_ms: list[float] = field(default_factory=list)
    push_at: list[float] = field(default_factory=list)  # when each push arrived
    cpu_s: dict[str, float] = field(default_factory=dict)
    pushes_expected: int = 0
    pushes_missed: int = 0
    viewer_disconnects: int = 0
    steps_stored: int = 0


def login(base_url: str) -> tuple[str, str]:
    """A session cookie header and an API token of the bench's user."""
    with httpx.Client(base_url=base_url, trust_env=False, timeout=30) as client:
        page = client.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        client.post(
            "/accounts/login/",
            data={"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": csrf},
            headers={"Referer": base_url + "/accounts/login/"},
        )
        reply = client.post(
            "/api/v1/tokens/",
            json={"name": f"load-{time.time_ns()}"},
            headers={"X-CSRFToken": client.cookies["csrftoken"]},
        )
        reply.raise_for_status()
        cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
        return cookie, reply.json()["token"]


def create_runs(base_url: str, token: str, count: int, tag: str) -> list[tuple[int, str]]:
    runs = []
    with httpx.Client(base_url=base_url, trust_env=False, timeout=60) as client:
        for i in range(count):
            reply = client.post(
                "/api/v1/runs/",
                json={"name": f"load {tag} trainer {i}", "launch": False, "tags": ["load"]},
                headers={"Authorization": f"Bearer {token}"},
            )
            if reply.status_code == 429:
                time.sleep(float(reply.headers.get("Retry-After", "1")))
                return runs + create_runs(base_url, token, count - len(runs), tag)
            reply.raise_for_status()
            body = reply.json()
            runs.append((body["id"], body["ingest_token"]))
    return runs


def _retry_delay(reply: httpx.Response | None, attempt: int) -> float:
    if reply is not None and (after := reply.headers.get("Retry-After")):
        try:
            return float(after) * random.uniform(1.0, 1.2)
        except ValueError:
            pass
    return min(5.0, 0.1 * 2**attempt) * random.uniform(0.8, 1.0)


async def trainer(
    client: httpx.AsyncClient, run_id: int, token: str, opts: Options, start: float, result: Result
) -> list[int]:
    """Sends this run's steps on schedule; returns the steps the server acknowledged."""
    rng = random.Random(run_id)
    total = max(1, round(opts.duration * opts.rate))
    acked: list[int] = []
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = f"/api/v1/runs/{run_id}/ingest"
    phase = rng.uniform(0, 1 / opts.rate)
    for first in range(0, total, opts.steps_per_request):
        steps = list(range(first, min(total, first + opts.steps_per_request)))
        delay = start + phase + steps[-1] / opts.rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        result.steps_sent += len(steps)
        attempt = 0
        while True:
            sent = time.time()
            body = json.dumps(
                {
                    "metrics": [
                        {
                            "step": s,
                            "time": sent,
                            "values": {k: rng.random() * scale for k, scale in METRIC_KEYS.items()},
                        }
                        for s in steps
                    ]
                }
            )
            reply = None
            t0 = time.perf_counter()
            try:
                reply = await client.post(url, content=body, headers=headers)
            except httpx.TransportError:
                result.transport_errors += 1
            else:
                result.ingest_ms.append((time.perf_counter() - t0) * 1000)
                result.statuses[reply.status_code] += 1
                if reply.status_code == 200:
                    acked += steps
                    break
                if reply.status_code != 429 and reply.status_code < 500:
                    result.steps_refused += len(steps)
                    break
            attempt += 1
            await asyncio.sleep(_retry_delay(reply, attempt))
    result.steps_acked += len(acked)
    return acked


async def reader(
    client: httpx.AsyncClient, token: str, run_ids: list[int], opts: Options, stop: asyncio.Event, result: Result
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    rng = random.Random()
    while not stop.is_set():
        for path in (
            "/api/v1/runs/?page_size=50",
            f"/api/v1/runs/{rng.choice(run_ids)}/metrics?keys=accuracy,reward/mean&max_points=500",
        ):
            t0 = time.perf_counter()
            try:
                reply = await client.get(path, headers=headers)
            except httpx.TransportError:
                result.read_statuses["transport error"] += 1
                continue
            result.read_ms.append((time.perf_counter() - t0) * 1000)
            result.read_statuses[reply.status_code] += 1
        try:
            await asyncio.wait_for(stop.wait(), opts.read_interval)
        except TimeoutError:
            pass


# Viewers live in a process of their own, so that the trainers' work does not delay their clocks.


def viewer_process(ws_url: str, cookie: str, origin: str, run_ids: list[int], ready: Any, stop: Any, out: Any) -> None:
    async def main() -> list[dict[str, Any]]:
        stop_event = asyncio.Event()

        async def watch(run_id: int, connected: asyncio.Event) -> dict[str, Any]:
            seen: set[int] = set()
            latencies: list[float] = []
            disconnected = False
            headers = {"Cookie": cookie, "Origin": origin}
            async with websockets.connect(
                f"{ws_url}/ws/runs/{run_id}/", additional_headers=headers, max_queue=None, open_timeout=120
            ) as ws:
                while not stop_event.is_set():
                    try:
                        raw = await asyncio.wait_for(ws.recv(), 0.5)
                    except TimeoutError:
                        continue
                    except websockets.ConnectionClosed:
                        disconnected = True
                        break
                    now = time.time()
                    event = json.loads(raw)
                    if event["event"] == "snapshot":
                        connected.set()
                    elif event["event"] == "metrics":
                        for row in event["data"]["steps"]:
                            seen.add(row["step"])
                            latencies.append(((now - row["time"]) * 1000, now))
            return {"run_id": run_id, "seen": sorted(seen), "latencies": latencies, "disconnected": disconnected}

        events = [asyncio.Event() for _ in run_ids]
        tasks = [asyncio.create_task(watch(run_id, ev)) for run_id, ev in zip(run_ids, events, strict=True)]
        await asyncio.gather(*(ev.wait() for ev in events))
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.2)
        stop_event.set()
        return await asyncio.gather(*tasks)

    out.put(asyncio.run(main()))


def viewers_cpu(process: Any) -> tuple[float, float]:
    try:
        return tuple(psutil.Process(process.pid).cpu_times()[:2])
    except psutil.Error:
        return (0.0, 0.0)


def push_windows(result: Result, width_s: float = 10.0) -> str:
    """p99 push latency per window of the run, to see when the slow pushes happened."""
    if not result.push_at:
        return ""
    first = min(result.push_at)
    windows: dict[int, list[float]] = defaultdict(list)
    for ms, at in zip(result.push_ms, result.push_at, strict=True):
        windows[int((at - first) // width_s)].append(ms)
    return ", ".join(f"{k * width_s:g}s: {percentile(v, 99):.0f}" for k, v in sorted(windows.items()))


async def load(stack: Stack, opts: Options, tag: str) -> Result:
    result = Result()
    cookie, api_token = login(stack.url)
    runs = create_runs(stack.url, api_token, opts.trainers, tag)
    run_ids = [run_id for run_id, _ in runs]
    watched = [run_ids[i % len(run_ids)] if opts.watch == "spread" else run_ids[0] for i in range(opts.viewers)]
    ctx = multiprocessing.get_context("spawn")
    ready, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    ws_url = stack.url.replace("http://", "ws://")
    viewers = ctx.Process(target=viewer_process, args=(ws_url, cookie, stack.url, watched, ready, stop, out))
    viewers.start()
    if not await asyncio.to_thread(ready.wait, 180):
        raise RuntimeError("the viewers did not all connect within 180 s")
    log(f"{opts.viewers} viewers connected; {opts.trainers} trainers start")

    cpu_before = cpu_by_role(stack.process.pid, stack.var_dir)
    bench_before = sum(psutil.Process().cpu_times()[:2]) + sum(viewers_cpu(viewers))
    limits = httpx.Limits(
        max_connections=opts.trainers + opts.readers + 4, max_keepalive_connections=opts.trainers + opts.readers + 4
    )
    async with httpx.AsyncClient(base_url=stack.url, trust_env=False, timeout=60, limits=limits) as client:
        stop_readers = asyncio.Event()
        readers = [
            asyncio.create_task(reader(client, api_token, run_ids, opts, stop_readers, result))
            for _ in range(opts.readers)
        ]
        start = time.monotonic() + 0.5
        acked = await asyncio.gather(*(trainer(client, rid, tok, opts, start, result) for rid, tok in runs))
        result.wall_s = time.monotonic() - start
        cpu_after = cpu_by_role(stack.process.pid, stack.var_dir)
        result.cpu_s = {k: cpu_after.get(k, 0) - cpu_before.get(k, 0) for k in cpu_after}
        result.cpu_s["bench clients"] = sum(psutil.Process().cpu_times()[:2]) + sum(viewers_cpu(viewers)) - bench_before
        stop_readers.set()
        await asyncio.gather(*readers)
    await asyncio.sleep(2.0)  # pushes still on their way
    stop.set()
    views = await asyncio.to_thread(out.get, True, 120)
    viewers.join(30)

    acked_by_run = dict(zip(run_ids, acked, strict=True))
    for view in views:
        expected = set(acked_by_run[view["run_id"]])
        result.pushes_expected += len(expected)
        result.pushes_missed += len(expected - set(view["seen"]))
        result.push_ms += [ms for ms, _ in view["latencies"]]
        result.push_at += [at for _, at in view["latencies"]]
        result.viewer_disconnects += view["disconnected"]
    with psycopg.connect(stack.database, application_name="bench-check") as conn:
        result.steps_stored = conn.execute(
            "SELECT count(*) FROM runs_metricstep WHERE run_id = ANY(%s)", [run_ids]
        ).fetchone()[0]
    return result


# --- the report -----------------------------------------------------------------------------------


def summarize(result: Result) -> dict[str, float]:
    fivexx = sum(n for code, n in result.statuses.items() if code >= 500) + sum(
        n for code, n in result.read_statuses.items() if isinstance(code, int) and code >= 500
    )
    return {
        "values_per_s": result.steps_acked * len(METRIC_KEYS) / result.wall_s,
        "requests_per_s": sum(result.statuses.values()) / result.wall_s,
        "ingest_p50": percentile(result.ingest_ms, 50),
        "ingest_p99": percentile(result.ingest_ms, 99),
        "read_p50": percentile(result.read_ms, 50),
        "read_p99": percentile(result.read_ms, 99),
        "push_p50": percentile(result.push_ms, 50),
        "push_p99": percentile(result.push_ms, 99),
        "5xx": fivexx,
        "429": result.statuses.get(429, 0),
        "503": result.statuses.get(503, 0),
        "steps_lost": result.steps_sent - result.steps_stored,
        "pushes_missed": result.pushes_missed,
    }


def report(
    opts: Options,
    stack: Stack,
    results: list[Result],
    connections: ConnectionSampler,
    memory: tuple[dict[str, float], dict[str, float]],
    load_before: float,
) -> None:
    summaries = [summarize(r) for r in results]

    def med(key: str) -> float:
        return statistics.median(s[key] for s in summaries)

    def total(key: str) -> float:
        return sum(s[key] for s in summaries)

    def spread(key: str) -> str:
        values = [s[key] for s in summaries]
        return "" if len(values) < 2 else f"({len(values)} runs: {min(values):,.0f}..{max(values):,.0f})"

    def row(label: str, value: str, note: str = "") -> None:
        print(f"  {label:32}{value:>16}   {note}".rstrip())

    print(
        f"\nload: {opts.trainers} trainers ({opts.steps_per_request} step(s)/request, {opts.rate:g} steps/s each, "
        f"{opts.duration:g} s), {opts.viewers} viewers ({opts.watch}), {opts.readers} readers; {len(results)} "
        f"repetition(s), medians; load average {load_before:.1f} before"
    )
    row("ingest values/s", f"{med('values_per_s'):,.0f}", spread("values_per_s"))
    row("ingest requests/s", f"{med('requests_per_s'):,.1f}")
    row("ingest latency p50 / p99 ms", f"{med('ingest_p50'):,.0f} / {med('ingest_p99'):,.0f}", spread("ingest_p99"))
    row("read latency p50 / p99 ms", f"{med('read_p50'):,.0f} / {med('read_p99'):,.0f}", spread("read_p99"))
    goal = GOALS["push_p99_ms"]
    row(
        "push latency p50 / p99 ms",
        f"{med('push_p50'):,.0f} / {med('push_p99'):,.0f}",
        f"goal p99 <= {goal:g} {spread('push_p99')}",
    )
    row("5xx answers", f"{total('5xx'):,.0f}", "goal 0")
    row("429 / 503 answers (retried)", f"{total('429'):,.0f} / {total('503'):,.0f}")
    row("steps lost", f"{total('steps_lost'):,.0f}", f"of {sum(r.steps_sent for r in results):,}; goal 0")
    row("pushes missed", f"{total('pushes_missed'):,.0f}", f"of {sum(r.pushes_expected for r in results):,}; goal 0")
    if any(r.viewer_disconnects or r.transport_errors for r in results):
        row(
            "viewer drops / transport errors",
            f"{sum(r.viewer_disconnects for r in results)} / {sum(r.transport_errors for r in results)}",
        )
    by_name = ", ".join(f"{name} {count}" for name, count in sorted(connections.peak.items()))
    row("peak PostgreSQL connections", str(connections.peak_total), f"({by_name})")
    print(f"  {'':32}{'':>16}   bound: {stack.budget}")
    warm, end = memory
    for name in sorted(set(warm) | set(end)):
        before, after = warm.get(name, 0.0), end.get(name, 0.0)
        change = f"{(after / before - 1) * 100:+.1f}%" if before else ""
        row(f"memory PSS MB: {name}", f"{before:,.0f} -> {after:,.0f}", change)
    cpu = defaultdict(float)
    for r in results:
        for name, seconds in r.cpu_s.items():
            cpu[name] += seconds
    wall = sum(r.wall_s for r in results)
    print("  CPU cores busy: " + ", ".join(f"{name} {seconds / wall:.2f}" for name, seconds in sorted(cpu.items())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trainers", type=int, default=32)
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1.0, help="steps/s each trainer reports (default 1)")
    parser.add_argument("--steps-per-request", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of reporting per repetition")
    parser.add_argument("--watch", choices=("spread", "one"), default="spread")
    parser.add_argument("--read-interval", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="8 trainers, 20 viewers, 15 s")
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for devstack"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.trainers, args.viewers, args.duration = 8, 20, 15.0
    opts = Options(
        args.trainers,
        args.viewers,
        args.readers,
        args.rate,
        args.steps_per_request,
        args.duration,
        args.watch,
        args.read_interval,
    )
    extra_env = dict(item.split("=", 1) for item in args.env)
    load_before = os.getloadavg()[0]
    with tirlab_stack(extra_env) as stack:
        results: list[Result] = []
        with ConnectionSampler(stack.database) as connections, MemorySampler(stack) as memory:
            for rep in range(args.repeat):
                log(f"repetition {rep + 1} of {args.repeat}")
                results.append(asyncio.run(load(stack, opts, f"r{rep}")))
                log(f"repetition {rep + 1}: {summarize(results[-1])}")
                log(f"push p99 ms by 10 s window: {push_windows(results[-1])}")
        report(opts, stack, results, connections, memory.warm_and_end(min(60.0, opts.duration / 2)), load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
