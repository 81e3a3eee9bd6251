"""Benchmark: open the run page of a 100,000-step, 40-metric run in Chromium.

Seeds a throwaway PostgreSQL database (dropped at the end) with one run of `--steps` steps × 40
metrics (bulk-inserted server-side, as bench/ingest.py does), serves it with daphne and opens
/runs/<id>/ in Debian's Chromium through Playwright. Figures, medians of `--reps` page loads after
a warm-up load:

* headline charts: performance.now() (ms since navigation start) when all five headline charts
  (accuracy, tool_call_ratio, code_in_correct, response_length/mean, tool_productivity) have
  been drawn — Plotly's afterplot, i.e. its react() promise resolving — from the metrics API;
* all series loaded: when the other 35 metrics' series have arrived too (drawn as scrolled to);
* the metrics API alone: the headline request, and one request for all 40 keys.

The baseline is the issue's target: the run page opens in under a second.

    .venv/bin/python bench/run_page.py            # 100,000 steps, 5 page loads
    .venv/bin/python bench/run_page.py --steps 1000000
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ingest import (  # noqa: E402
    DEFAULT_REDIS_URL,
    DEFAULT_SERVER_URL,
    METRIC_KEYS,
    daphne_server,
    load_series,
    log,
    throwaway_database,
)
from trainer.contract import HEADLINE_METRICS  # noqa: E402

TARGET_MS = 1000.0
CHROMIUM = "/usr/bin/chromium"
PASSWORD = "bench-password-123"


def seed(db_url: str, steps: int) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from webapp.runs.metric_store import rebuild_rollups
    from webapp.runs.models import Run, RunStatus
    from webapp.runs.services import run_create
    from webapp.runs.transitions import run_log, run_transition

    user = get_user_model().objects.create_user(username="bench", password=PASSWORD)
    run, _ = run_create(user=user, name="100k steps", config={}, managed=False)
    run_transition(run=run, status=RunStatus.STARTING)
    run_transition(run=run, status=RunStatus.RUNNING)
    log(f"loading {steps:,} steps x {len(METRIC_KEYS)} keys into run {run.pk}")
    load_series(db_url, run.pk, steps)
    for i in range(300):
        run_log(run=run, message=f"step {i} done")
    Run.objects.filter(pk=run.pk).update(metric_keys=sorted(METRIC_KEYS), last_step=steps - 1)
    # The steps were bulk-loaded around the metric store: roll them up, as the store does for what it writes.
    rebuild_rollups(Run.objects.get(pk=run.pk))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE runs_metricstep")
    return run.pk


def api_ms(base_url: str, cookies: dict[str, str], run_id: int, keys: list[str], reps: int) -> list[float]:
    url = f"{base_url}/api/v1/runs/{run_id}/metrics/"
    params = {"x": "step", "max_points": "500", "keys": ",".join(keys)}
    samples = []
    with httpx.Client(cookies=cookies, timeout=120) as client:
        client.get(url, params=params).raise_for_status()  # warm-up
        for _ in range(reps):
            start = time.perf_counter()
            client.get(url, params=params).raise_for_status()
            samples.append((time.perf_counter() - start) * 1000)
    return samples


def measure(base_url: str, run_id: int, reps: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    figures: dict[str, list[float]] = {"headline": [], "all": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{base_url}/accounts/login/")
        page.fill("input[name=username]", "bench")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        cookies = {c["name"]: c["value"] for c in context.cookies()}
        for rep in range(reps + 1):
            page.goto(f"{base_url}/runs/{run_id}/")
            page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.allLoadedMs")
            timings = page.evaluate("window.tirlabRunPage")
            phases = page.evaluate(
                """() => { const nav = performance.getEntriesByType("navigation")[0];
                const res = performance.getEntriesByType("resource");
                const find = part => res.find(r => r.name.includes(part));
                const plotly = find("plotly.min.js"), metrics = find("/metrics/");
                return { html: nav.responseEnd, plotly: plotly.responseEnd,
                         metricsStart: metrics.startTime, metricsEnd: metrics.responseEnd,
                         domReady: nav.domContentLoadedEventEnd }; }"""
            )
            log("  phases (ms): " + ", ".join(f"{name} {value:.0f}" for name, value in phases.items()))
            if rep == 0:
                log(f"warm-up load: headline {timings['headlineRenderedMs']:.0f} ms")
                continue
            figures["headline"].append(timings["headlineRenderedMs"])
            figures["all"].append(timings["allLoadedMs"])
            log(f"load {rep}: headline {timings['headlineRenderedMs']:.0f} ms, all {timings['allLoadedMs']:.0f} ms")
        browser.close()
    figures["api_headline"] = api_ms(base_url, cookies, run_id, list(HEADLINE_METRICS), reps)
    figures["api_all"] = api_ms(base_url, cookies, run_id, sorted(METRIC_KEYS), reps)
    return figures


def report(figures: dict[str, list[float]], steps: int) -> None:
    rows = [
        ("run page: 5 headline charts drawn (ms from navigation)", figures["headline"]),
        ("run page: all 40 series loaded (ms from navigation)", figures["all"]),
        ("metrics API, 5 headline keys (ms)", figures["api_headline"]),
        ("metrics API, all 40 keys (ms)", figures["api_all"]),
    ]
    print(f"\nrun of {steps:,} steps x {len(METRIC_KEYS)} metrics; baseline = the {TARGET_MS:.0f} ms target")
    print(f"{'figure':<58} {'median':>8} {'/target':>8}  spread")
    for label, samples in rows:
        median = statistics.median(samples)
        spread = f"{len(samples)} runs: {min(samples):.0f}..{max(samples):.0f}"
        print(f"{label:<58} {median:>8.0f} {'×' + format(median / TARGET_MS, '.2f'):>8}  {spread}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
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
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        }
        os.environ.update(env)
        import django

        django.setup()
        logging.getLogger("httpx").setLevel(logging.WARNING)
        from django.core.management import call_command
        from django.db import connections

        try:
            call_command("migrate", verbosity=0)
            run_id = seed(db_url, args.steps)
            connections.close_all()
            with daphne_server(env) as base_url:
                figures = measure(base_url, run_id, args.reps)
        finally:
            connections.close_all()
    report(figures, args.steps)


if __name__ == "__main__":
    main()
