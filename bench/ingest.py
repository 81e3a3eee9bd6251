"""Benchmark: trainer metric ingest through HTTP, and the downsampled metric series query.

Measures, against a throwaway PostgreSQL database created for the run (dropped at the end):

* metric values ingested per second through `POST /api/v1/runs/<id>/ingest` on a real daphne
  server, with the trainer's ~40 keys per step, for a few batch sizes and client counts, rollups
  included (webapp.runs.metric_store); beside each, measured in the same run, the same on a second
  daphne whose ingest writes the steps alone, as before the rollups ("today's write"); the
  baseline of both is a plain per-step ORM `update_or_create` loop;
* the downsampled series query of a 1,000,000-step series (`run_metric_series`, and
  `GET /api/v1/runs/<id>/metrics`): one key and the run page's 40 keys, on the step and the time
  axis, from the rollups and, in the same run, by today's pass over the steps
  (`run_metric_series_scan`); the baseline of both is fetching the whole series to Python.

Machines are shared and noisy: every figure is a median of repetitions, and ratios are taken
against baselines measured in the same process. See bench/README.md.

    .venv/bin/python bench/ingest.py            # full run (about 10 minutes)
    .venv/bin/python bench/ingest.py --quick    # smoke check (a few minutes)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SERVER_URL = "postgres://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"

# The trainer's metric keys (40) and the scale of their values.
METRIC_KEYS: dict[str, float] = {
    "accuracy": 1.0,
    "tool_call_ratio": 1.0,
    "code_in_correct": 1.0,
    "response_length/mean": 2000.0,
    "response_length/max": 4096.0,
    "response_length/min": 100.0,
    "response_length/clip_ratio": 1.0,
    "prompt_length/mean": 300.0,
    "prompt_length/max": 600.0,
    "tool_productivity": 1.0,
    "tool_calls/mean": 4.0,
    "tool_calls/max": 8.0,
    "tool_exec/error_ratio": 1.0,
    "tool_exec/timeout_ratio": 1.0,
    "tool_exec/duration_ms/mean": 500.0,
    "reward/mean": 1.0,
    "reward/std": 1.0,
    "reward/max": 1.0,
    "reward/min": 1.0,
    "critic/score/mean": 1.0,
    "critic/advantages/mean": 1.0,
    "critic/advantages/max": 3.0,
    "critic/advantages/min": -3.0,
    "timing_s/gen": 100.0,
    "timing_s/tool": 10.0,
    "timing_s/ref": 20.0,
    "timing_s/old_log_prob": 20.0,
    "timing_s/train": 50.0,
    "timing_s/step": 200.0,
    "perf/tokens_per_s": 20000.0,
    "perf/max_memory_allocated_gb": 80.0,
    "actor/lr": 1e-6,
    "actor/grad_norm": 1.0,
    "actor/kl": 0.01,
    "actor/ppo_kl": 0.01,
    "actor/pg_loss": 1.0,
    "actor/entropy": 1.0,
    "actor/clip_ratio/low": 0.01,
    "actor/clip_ratio/high": 0.01,
    "actor/lr_warmup_frac": 1.0,
}
assert len(METRIC_KEYS) == 40
SERIES_KEY = "accuracy"
MAX_POINTS = 2000  # the API's default
PAGE_POINTS = 500  # what the run page asks for, for each of its charts
STEP_SECONDS = 30.0


@dataclass(frozen=True)
class Sizes:
    reps: int
    requests_1step: int  # per client, 1 step per request
    requests_100step: int  # per client, 100 steps per request
    baseline_steps: int
    series_steps: int
    series_reps: int
    scan_reps: int  # today's pass over the steps: seconds a call at 1,000,000 steps


FULL = Sizes(
    reps=3,
    requests_1step=200,
    requests_100step=40,
    baseline_steps=1000,
    series_steps=1_000_000,
    series_reps=5,
    scan_reps=3,
)
QUICK = Sizes(
    reps=3, requests_1step=40, requests_100step=4, baseline_steps=200, series_steps=100_000, series_reps=3, scan_reps=2
)


@dataclass
class Figure:
    label: str
    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


_START = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _START:6.1f}s] {message}", file=sys.stderr, flush=True)


# --- throwaway database -----------------------------------------------------------------------


def _with_dbname(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def _admin_conninfo(url: str) -> str:
    # psycopg does not read the "postgres://" spelling of dj-database-url's "postgresql://".
    return "postgresql://" + url.split("://", 1)[1] if url.startswith("postgres://") else url


@contextmanager
def throwaway_database(server_url: str, *, keep: bool) -> Iterator[str]:
    name = f"tirlab_bench_{os.getpid()}"
    with psycopg.connect(_admin_conninfo(server_url), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    log(f"created database {name}")
    try:
        yield _with_dbname(server_url, name)
    finally:
        if keep:
            log(f"kept database {name} (--keep)")
        else:
            with psycopg.connect(_admin_conninfo(server_url), autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            log(f"dropped database {name}")


# --- daphne -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def daphne_server(env: dict[str, str], application: str = "webapp.asgi:application") -> Iterator[str]:
    port = _free_port()
    daphne = Path(sys.executable).parent / "daphne"
    command = [str(daphne), "-b", "127.0.0.1", "-p", str(port), application]
    with tempfile.TemporaryFile(mode="w+") as output:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    output.seek(0)
                    raise RuntimeError(f"daphne exited with {process.returncode}:\n{output.read()[-4000:]}")
                try:
                    httpx.get(f"{base_url}/api/v1/runs/", timeout=5)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("daphne did not start listening within 60 s") from None
                    time.sleep(0.2)
            log(f"daphne listening on {base_url} (pid {process.pid})")
            yield base_url
        except BaseException:
            output.seek(0)
            print(f"--- daphne output (tail) ---\n{output.read()[-4000:]}", file=sys.stderr)
            raise
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log("daphne stopped")


# --- today's write: the steps alone -------------------------------------------------------------

# What ingest wrote before the rollups (webapp.runs.ingest._write_metrics until then): the "today"
# of the ingest rows, served by a second daphne that loads bench.ingest:legacy_application.
_LEGACY_UPSERT = """
INSERT INTO runs_metricstep (run_id, step, time, "values")
SELECT %s, x.step, to_timestamp(x.time), x.values
FROM jsonb_to_recordset(%s::jsonb) AS x(step integer, time double precision, values jsonb)
ON CONFLICT (run_id, step) DO UPDATE
SET "values" = runs_metricstep."values" || EXCLUDED."values", time = EXCLUDED.time
"""


def legacy_write_metric_steps(run: Any, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """webapp.runs.metric_store.write_metric_steps as it was before the rollups: the steps upserted."""
    from django.db import connection

    by_step: dict[int, dict[str, Any]] = {}
    for item in steps:
        entry = by_step.setdefault(item["step"], {"step": item["step"], "values": {}})
        entry["time"] = item["time"]
        entry["values"].update(item["values"])
    rows = [by_step[step] for step in sorted(by_step)]
    with connection.cursor() as cursor:
        cursor.execute(_LEGACY_UPSERT, [run.pk, json.dumps(rows)])
    return rows


@contextmanager
def legacy_ingest() -> Iterator[None]:
    """In this process, ingest writes as it did before the rollups."""
    from webapp.runs import ingest

    ingest.write_metric_steps = legacy_write_metric_steps
    try:
        yield
    finally:
        from webapp.runs.metric_store import write_metric_steps

        ingest.write_metric_steps = write_metric_steps


def __getattr__(name: str) -> Any:
    """`legacy_application`: the ASGI application with today's write, for daphne (module attribute,
    made when daphne asks for it, after Django's settings are in its environment)."""
    if name != "legacy_application":
        raise AttributeError(name)
    from webapp.asgi import application
    from webapp.runs import ingest

    ingest.write_metric_steps = legacy_write_metric_steps
    return application


# --- payloads ---------------------------------------------------------------------------------


def metric_steps(first: int, count: int, rng: random.Random, t0: float) -> list[dict[str, Any]]:
    """`count` steps as a trainer reports them: step, unix time and 40 float values."""
    return [
        {
            "step": step,
            "time": t0 + step * STEP_SECONDS,
            "values": {key: rng.random() * scale for key, scale in METRIC_KEYS.items()},
        }
        for step in range(first, first + count)
    ]


def new_run(user: Any, name: str) -> tuple[Any, str]:
    """A run as a trainer finds it when it starts reporting: created, then starting."""
    from webapp.runs.services import run_create
    from webapp.runs.transitions import run_transition

    run, token = run_create(user=user, name=name, config={}, managed=False)  # the bench plays the trainer
    run_transition(run=run, status="starting")
    return run, token


# --- ingest through HTTP ----------------------------------------------------------------------


def _client_worker(
    base_url: str, run_id: int, token: str, bodies: list[bytes], barrier: threading.Barrier, errors: list[str]
) -> None:
    url = f"/api/v1/runs/{run_id}/ingest"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=120) as client:
        # A heartbeat-only batch opens the keep-alive connection and moves the run to running.
        try:
            warm = client.post(url, content=b'{"heartbeat": true}')
            if warm.status_code != 200:
                errors.append(f"warm-up: {warm.status_code} {warm.text[:300]}")
        except httpx.HTTPError as exc:
            errors.append(f"warm-up: {exc!r}")
        finally:
            barrier.wait()
        try:
            for body in bodies:
                response = client.post(url, content=body)
                if response.status_code != 200:
                    errors.append(f"{response.status_code} {response.text[:300]}")
                    return
        except httpx.HTTPError as exc:
            errors.append(repr(exc))


def ingest_http(base_url: str, user: Any, *, steps_per_request: int, requests: int, clients: int, rep: int) -> float:
    """Values/s for `clients` threads, each posting `requests` batches to its own fresh run."""
    from webapp.runs.models import MetricStep

    rng = random.Random(rep)
    t0 = time.time() - 86400
    runs = [new_run(user, f"http {steps_per_request}x{clients} rep{rep} c{c}") for c in range(clients)]
    work = []
    for run, token in runs:
        bodies = [
            json.dumps({"metrics": metric_steps(i * steps_per_request, steps_per_request, rng, t0)}).encode()
            for i in range(requests)
        ]
        work.append((run.pk, token, bodies))
    barrier = threading.Barrier(clients + 1, timeout=300)
    errors: list[str] = []
    threads = [
        threading.Thread(target=_client_worker, args=(base_url, run_id, token, bodies, barrier, errors))
        for run_id, token, bodies in work
    ]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"ingest failed: {errors[0]}")
    steps = steps_per_request * requests * clients
    stored = MetricStep.objects.filter(run_id__in=[run.pk for run, _ in runs]).count()
    if stored != steps:
        raise RuntimeError(f"expected {steps} metric steps stored, found {stored}")
    return steps * len(METRIC_KEYS) / elapsed


def ingest_in_process(user: Any, *, steps_per_call: int, calls: int, rep: int) -> float:
    """Values/s for the ingest service itself (validation, upsert, summary, events), without HTTP."""
    from webapp.runs.ingest import ingest_batch

    rng = random.Random(100 + rep)
    run, token = new_run(user, f"in-process rep{rep}")
    t0 = time.time() - 86400
    payloads = [{"metrics": metric_steps(i * steps_per_call, steps_per_call, rng, t0)} for i in range(calls)]
    ingest_batch(run_id=run.pk, token=token, payload={"heartbeat": True})
    start = time.perf_counter()
    for payload in payloads:
        ingest_batch(run_id=run.pk, token=token, payload=payload)
    return steps_per_call * calls * len(METRIC_KEYS) / (time.perf_counter() - start)


def baseline_orm(user: Any, *, steps: int, rep: int) -> float:
    """Values/s for the straightforward implementation: one ORM update_or_create per step."""
    from webapp.runs.models import MetricStep

    rng = random.Random(200 + rep)
    run, _ = new_run(user, f"orm baseline rep{rep}")
    t0 = time.time() - 86400
    rows = [
        (item["step"], datetime.fromtimestamp(item["time"], tz=UTC), item["values"])
        for item in metric_steps(0, steps, rng, t0)
    ]
    start = time.perf_counter()
    for step, when, values in rows:
        MetricStep.objects.update_or_create(run=run, step=step, defaults={"time": when, "values": values})
    return steps * len(METRIC_KEYS) / (time.perf_counter() - start)


# --- the 1,000,000-step series ----------------------------------------------------------------


def load_series(db_url: str, run_id: int, steps: int) -> None:
    """Bulk-load `steps` steps of 40 random values into one run, server-side (it is not what we time)."""
    values = sql.SQL("jsonb_build_object({})").format(
        sql.SQL(", ").join(
            sql.SQL("{}, random() * {}").format(sql.Literal(key), sql.Literal(scale))
            for key, scale in METRIC_KEYS.items()
        )
    )
    insert = sql.SQL(
        'INSERT INTO runs_metricstep (run_id, step, time, "values") '
        "SELECT {run}, g, to_timestamp({t0} + g * {dt}), {values} FROM generate_series({lo}::int, {hi}::int) AS g"
    )
    t0 = time.time() - steps * STEP_SECONDS
    chunk = 50_000
    ranges = [(lo, min(lo + chunk, steps) - 1) for lo in range(0, steps, chunk)]

    def load(lo_hi: tuple[int, int]) -> None:
        lo, hi = lo_hi
        query = insert.format(
            run=sql.Literal(run_id),
            t0=sql.Literal(t0),
            dt=sql.Literal(STEP_SECONDS),
            values=values,
            lo=sql.Literal(lo),
            hi=sql.Literal(hi),
        )
        with psycopg.connect(_admin_conninfo(db_url), autocommit=True) as conn:
            conn.execute(query)

    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        list(pool.map(load, ranges))
    with psycopg.connect(_admin_conninfo(db_url), autocommit=True) as conn:
        # Settle hint bits and statistics now, so neither the first query nor autovacuum does it mid-timing.
        conn.execute("VACUUM (ANALYZE) runs_metricstep")


def timed(fn: Callable[[], Any], reps: int) -> tuple[list[float], Any]:
    """One warm-up call, then `reps` timed calls; (seconds of each, the last result)."""
    result = fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return samples, result


def full_fetch(run_id: int) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute('SELECT step, "values"->>%s FROM runs_metricstep WHERE run_id = %s', [SERIES_KEY, run_id])
        return len(cursor.fetchall())


# --- main -------------------------------------------------------------------------------------


def _ratio(value: float, width: int = 9) -> str:
    return f"{'×' + format(value, '.3f' if value < 0.1 else '.2f'):>{width}}"


def _spread(samples: list[float], fmt: str) -> str:
    return f"{len(samples)} runs: {format(min(samples), fmt)}..{format(max(samples), fmt)}"


def run_benchmark(args: argparse.Namespace, sizes: Sizes) -> None:
    server_url = os.environ.get("DATABASE_URL") or DEFAULT_SERVER_URL
    with throwaway_database(server_url, keep=args.keep) as db_url:
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL,
            "TIRLAB_REDIS_PREFIX": "bench",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "tirlab-bench-not-secret",
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DEBUG": "false",
            # What is measured is throughput: a one-step client posts faster than the per-token
            # limits that stop a runaway trainer (20 requests/s after a burst of 100; 429s otherwise).
            "TIRLAB_INGEST_RATE": "0",
            "TIRLAB_API_RATE": "0",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        }
        os.environ.update(env)
        sys.path.insert(0, str(REPO))
        import django

        django.setup()
        # Django's logging config shows httpx's per-request INFO lines; they would drown the progress.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        from django.core.management import call_command
        from django.db import connections

        try:
            call_command("migrate", verbosity=0)
            log("migrated")
            with (
                daphne_server(env) as base_url,
                daphne_server(env, "bench.ingest:legacy_application") as legacy_url,
            ):
                figures = measure(base_url, legacy_url, db_url, sizes)
        finally:
            connections.close_all()
    report(figures, sizes)


def measure(base_url: str, legacy_url: str, db_url: str, sizes: Sizes) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username="bench", password="bench-password-123")
    figures = measure_ingest(base_url, legacy_url, user, sizes)
    figures["series"] = measure_series(base_url, db_url, user, sizes)
    return figures


def measure_ingest(base_url: str, legacy_url: str, user: Any, sizes: Sizes) -> dict[str, Any]:
    """Each configuration on both servers, alternating within every repetition, so that the
    machine's drift falls on both alike."""
    # Warm both servers (imports, URL resolver, connections) before anything is timed.
    for url in (base_url, legacy_url):
        ingest_http(url, user, steps_per_request=10, requests=5, clients=1, rep=-1)

    configs = [
        ("1 step/request, 1 client", 1, sizes.requests_1step, 1),
        ("1 step/request, 4 clients", 1, sizes.requests_1step // 4, 4),
        ("100 steps/request, 1 client", 100, sizes.requests_100step, 1),
        ("100 steps/request, 4 clients", 100, max(1, sizes.requests_100step // 4), 4),
    ]
    ingest: list[tuple[Figure, Figure]] = []
    for label, per_request, requests, clients in configs:
        rollups, today = Figure(label), Figure(label)
        for rep in range(sizes.reps):
            for figure, url in ((rollups, base_url), (today, legacy_url)):
                figure.samples.append(
                    ingest_http(url, user, steps_per_request=per_request, requests=requests, clients=clients, rep=rep)
                )
        log(f"{label}: {rollups.median:,.0f} values/s with rollups, {today.median:,.0f} today")
        ingest.append((rollups, today))

    in_process = (Figure("ingest_batch() in-process, 100 steps"), Figure("in-process"))
    for rep in range(sizes.reps):
        in_process[0].samples.append(ingest_in_process(user, steps_per_call=100, calls=sizes.requests_100step, rep=rep))
        with legacy_ingest():
            in_process[1].samples.append(
                ingest_in_process(user, steps_per_call=100, calls=sizes.requests_100step, rep=rep)
            )
    log(f"in-process: {in_process[0].median:,.0f} values/s with rollups, {in_process[1].median:,.0f} today")

    baseline = Figure("baseline: ORM update_or_create per step")
    for rep in range(sizes.reps):
        baseline.samples.append(baseline_orm(user, steps=sizes.baseline_steps, rep=rep))
    log(f"{baseline.label}: {baseline.median:,.0f} values/s")
    return {"ingest": ingest, "in_process": in_process, "baseline": baseline}


def _table_bytes(db_url: str) -> dict[str, int]:
    """Bytes of the steps and of the rollups (all partitions), indexes and TOAST included."""
    query = """
        SELECT coalesce(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname = 'runs_metricstep'), 0),
            coalesce(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname LIKE 'runs_metricrollup_%'), 0)
        FROM pg_class AS c WHERE c.relkind = 'r'
    """
    with psycopg.connect(_admin_conninfo(db_url)) as conn:
        steps, rollups = conn.execute(query).fetchone()
    return {"steps": steps, "rollups": rollups}


def _checked(series: dict[str, dict[str, list]], max_points: int, steps: int) -> int:
    """Points per key; raises unless every key has at most max_points and counts every step."""
    for key, one in series.items():
        if len(one["x"]) > max_points or sum(one["count"]) != steps:
            raise RuntimeError(f"{key}: {len(one['x'])} points counting {sum(one['count'])} steps")
    return max(len(one["x"]) for one in series.values())


def measure_series(base_url: str, db_url: str, user: Any, sizes: Sizes) -> dict[str, Any]:
    from django.db import transaction

    from webapp.accounts.services import api_token_create
    from webapp.runs.metric_store import rebuild_rollups, run_metric_series, run_metric_series_scan
    from webapp.runs.models import Run

    run, _ = new_run(user, "series")
    log(f"loading {sizes.series_steps:,} steps x {len(METRIC_KEYS)} keys into run {run.pk}")
    load_series(db_url, run.pk, sizes.series_steps)
    Run.objects.filter(pk=run.pk).update(
        metric_keys=sorted(METRIC_KEYS), last_step=sizes.series_steps - 1, status="running"
    )
    log("loaded and vacuumed; rolling up")
    start = time.perf_counter()
    with transaction.atomic():
        rebuild_rollups(Run.objects.select_for_update().get(pk=run.pk))
    rebuild_s = time.perf_counter() - start
    with psycopg.connect(_admin_conninfo(db_url), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) runs_metricrollup")
    log(f"rebuild_rollups: {rebuild_s:,.0f} s")

    keys = sorted(METRIC_KEYS)
    cases = [
        (f"1 key, x=step → ≤{MAX_POINTS}", [SERIES_KEY], MAX_POINTS, "step"),
        (f"1 key, x=time → ≤{MAX_POINTS}", [SERIES_KEY], MAX_POINTS, "time"),
        (f"{len(keys)} keys, x=step → ≤{PAGE_POINTS} each", keys, PAGE_POINTS, "step"),
        (f"{len(keys)} keys, x=time → ≤{PAGE_POINTS} each", keys, PAGE_POINTS, "time"),
    ]
    rows = []
    for label, names, max_points, x in cases:
        query = {"run": run, "keys": names, "max_points": max_points, "x": x}
        rollups, series = timed(lambda query=query: run_metric_series(**query), sizes.series_reps)
        points = _checked(series, max_points, sizes.series_steps)
        today, series = timed(lambda query=query: run_metric_series_scan(**query), sizes.scan_reps)
        _checked(series, max_points, sizes.series_steps)
        log(f"{label}: {statistics.median(rollups) * 1000:,.0f} ms, today {statistics.median(today) * 1000:,.0f} ms")
        rows.append({"label": label, "rollups": rollups, "today": today, "points": points})

    _, secret = api_token_create(user=user, name="bench")
    http = []
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=120) as client:
        for label, names, max_points in (
            (f"GET /metrics 1 key, x=step → ≤{MAX_POINTS}", [SERIES_KEY], MAX_POINTS),
            (f"GET /metrics {len(keys)} keys, x=step → ≤{PAGE_POINTS} each", keys, PAGE_POINTS),
        ):

            def get(names=names, max_points=max_points) -> httpx.Response:
                params = {"keys": ",".join(names), "max_points": max_points}
                response = client.get(f"/api/v1/runs/{run.pk}/metrics", params=params)
                response.raise_for_status()
                return response

            samples, response = timed(get, sizes.series_reps)
            points = _checked(response.json()["series"], max_points, sizes.series_steps)
            log(f"{label}: {statistics.median(samples) * 1000:,.0f} ms")
            http.append({"label": label, "samples": samples, "points": points, "bytes": len(response.content)})

    full_samples, full_rows = timed(lambda: full_fetch(run.pk), sizes.series_reps)
    log(f"full fetch: {statistics.median(full_samples) * 1000:,.0f} ms")
    if full_rows != sizes.series_steps:
        raise RuntimeError(f"full fetch returned {full_rows} rows, expected {sizes.series_steps}")
    return {"rows": rows, "http": http, "full": full_samples, "rebuild_s": rebuild_s, "bytes": _table_bytes(db_url)}


def report(figures: dict[str, Any], sizes: Sizes) -> None:
    width = 46
    baseline: Figure = figures["baseline"]
    ingest: list[tuple[Figure, Figure]] = figures["ingest"]
    best = max((pair[0] for pair in ingest), key=lambda figure: figure.median)
    lines = [
        "",
        f"tirlab ingest benchmark: {len(METRIC_KEYS)} metric keys per step; medians; ratios to baselines of this run",
        "",
        f"{'ingest, metric values/s (higher is better)':<{width}}  {'rollups':>11}  {'today':>11}  {'/today':>7}  "
        f"{'/ORM':>7}  spread (rollups; today)",
    ]
    for rollups, today in [*ingest, figures["in_process"]]:
        lines.append(
            f"  {rollups.label:<{width - 2}}  {rollups.median:>9,.0f}/s  {today.median:>9,.0f}/s  "
            f"{_ratio(rollups.median / today.median, 7)}  {_ratio(rollups.median / baseline.median, 7)}  "
            f"{_spread(rollups.samples, ',.0f')}; {_spread(today.samples, ',.0f')}"
        )
    lines.append(
        f"  {baseline.label:<{width - 2}}  {baseline.median:>9,.0f}/s  {'':>11}  {'':>7}  {'':>7}  "
        f"{_spread(baseline.samples, ',.0f')}"
    )
    lines.append(f"  best HTTP with rollups / baseline: ×{best.median / baseline.median:.2f} ({best.label})")

    series = figures["series"]
    n = f"{sizes.series_steps:,}"
    full_ms = statistics.median(series["full"]) * 1000
    lines += [
        "",
        f"{f'series of {n} steps, ms (lower is better)':<{width}}  {'rollups':>11}  {'today':>11}  {'/today':>7}  "
        f"{'/fetch':>7}  spread (rollups; today)",
    ]
    for row in series["rows"]:
        rollups, today = (statistics.median(row[name]) * 1000 for name in ("rollups", "today"))
        lines.append(
            f"  {row['label']:<{width - 2}}  {rollups:>9,.0f}ms  {today:>9,.0f}ms  {_ratio(rollups / today, 7)}  "
            f"{_ratio(rollups / full_ms, 7)}  {_spread([s * 1000 for s in row['rollups']], ',.0f')}; "
            f"{_spread([s * 1000 for s in row['today']], ',.0f')}; {row['points']} points"
        )
    for row in series["http"]:
        median = statistics.median(row["samples"]) * 1000
        lines.append(
            f"  {row['label']:<{width - 2}}  {median:>9,.0f}ms  {'':>11}  {'':>7}  {_ratio(median / full_ms, 7)}  "
            f"{_spread([s * 1000 for s in row['samples']], ',.0f')}; {row['points']} points, {row['bytes']:,} bytes"
        )
    size = series["bytes"]
    lines += [
        f"  {f'baseline: full fetch, {n} rows':<{width - 2}}  {full_ms:>9,.0f}ms  {'':>11}  {'':>7}  {'':>7}  "
        f"{_spread([s * 1000 for s in series['full']], ',.0f')}",
        f"  rollups built by rebuild_rollups in {series['rebuild_s']:,.0f} s: {size['rollups'] / 2**20:,.0f} MB "
        f"beside {size['steps'] / 2**20:,.0f} MB of steps",
    ]
    page = series["rows"][2]
    page_ms = statistics.median(page["rollups"]) * 1000
    step_ms = statistics.median(series["rows"][0]["rollups"]) * 1000
    lines += [
        "",
        f"closing note: HTTP ingest with rollups reaches {best.median:,.0f} metric values/s ({best.label}; "
        f"×{best.median / baseline.median:.1f} the per-step ORM baseline); the downsampled query of a "
        f"{n}-step series to ≤{MAX_POINTS} points takes {step_ms:,.0f} ms (×"
        f"{step_ms / (statistics.median(series['rows'][0]['today']) * 1000):.3f} today's), the run page's "
        f"{page['label'].split(',')[0]} {page_ms:,.0f} ms.",
    ]
    print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (100k-step series); a smoke check")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database")
    parser.add_argument("--series-steps", type=int, help="length of the long series (default 1,000,000; 100,000 quick)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.series_steps:
        sizes = dataclasses.replace(sizes, series_steps=args.series_steps)
    # A plain `kill` should still stop daphne and drop the database.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    run_benchmark(args, sizes)


if __name__ == "__main__":
    main()
