"""Benchmark: Launch → first GRPO metric on a fresh install, as a researcher meets it.

Each repetition starts tirlab the way `make run` does (bench.load.tirlab_stack: `python -m
webapp.devstack run` in a new var dir, so an empty model cache, its own Redis and a new local Ray
head), logs in, creates a run from the `quickstart` preset through the REST API (the config the
new-run form sends for it), listens to the run's websocket, and cancels the run once its first
metric has arrived. Times, in seconds after the launch request, all on this machine's clock:

| point | from |
|---|---|
| created | the run's `created_at` (the API wrote the row) |
| submitted | its `submitted_at`: the Celery worker took the launch task and is submitting the Ray job |
| starting | tirlab's "status queued → starting" log line: Ray accepted the job |
| trainer process | the trainer's process start (psutil), found by its out dir on its command line |
| running | the run's `started_at`: the trainer's first report reached the dashboard |
| loading / sft / rl | the first phase event of each name (its `at`, when the dashboard received it) |
| first metric | the websocket's first "metrics" event: step 0 is in the database |

So the breakdown reads: Celery pick-up (created → submitted), the Ray submission call, Ray's job
start (starting → trainer process), Python imports and CLI setup (trainer process → running), model
load (loading → sft, or → rl without a cold start), the SFT cold start (sft → rl), and the first
GRPO step (rl → first metric). Medians over `--repeats`; every repetition is printed too.

    .venv/bin/python bench/first_metric.py                  # one fresh install
    .venv/bin/python bench/first_metric.py --repeats 3
    .venv/bin/python bench/first_metric.py --runs-per-stack 2   # also a second launch on the warm stack

`DATABASE_URL` set: a throwaway database on that server (else devstack's embedded PostgreSQL). Redis
and Ray are always the stack's own, as on a fresh install. The target is ≤ 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import psutil
import websockets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.load import PY, log, login, tirlab_stack  # noqa: E402
from trainer.presets import preset_config  # noqa: E402

TARGET_S = 60.0
PRESET = "quickstart"
# Points of the timeline, in order, and what happens in the stretch that ends at each. The reporter
# sends only the latest phase, so a phase shorter than its flush interval (a cached model's loading)
# may never show: a stretch then starts at the last point that did.
POINTS = ("created", "submitted", "starting", "trainer process", "running", "loading", "sft", "rl", "first metric")
STRETCH_ENDING_AT = {
    "submitted": "Celery pick-up",
    "starting": "Ray job submission (a worker's first imports ray)",
    "trainer process": "Ray job start",
    "running": "Python imports, CLI setup, first report",
    "loading": "first phase report",
    "sft": "model load",
    "rl": "model load or SFT cold start, data, engine",
    "first metric": "first GRPO step, its metrics stored",
}


def _unix(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso).timestamp() if iso else None


@contextmanager
def own_services() -> Iterator[None]:
    """The stack starts its own Redis and Ray head, as a fresh install does: a shared Redis would let
    another stack's worker take this one's launch task."""
    saved = {key: os.environ.pop(key) for key in ("REDIS_URL", "RAY_ADDRESS") if key in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


class TrainerWatch(threading.Thread):
    """Finds the run's trainer process as soon as it exists and keeps its start time."""

    def __init__(self, marker: str) -> None:
        super().__init__(daemon=True)
        self.marker, self.started_at = marker, None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and self.started_at is None:
            for proc in psutil.process_iter(["cmdline", "create_time"]):
                cmdline = " ".join(proc.info["cmdline"] or ())
                if "trainer" in cmdline and " run " in cmdline and self.marker in cmdline:
                    self.started_at = proc.info["create_time"]
                    break
            time.sleep(0.1)


def launch_and_watch(base_url: str, var_dir: Path, cookie: str, token: str, timeout_s: float) -> dict[str, float]:
    """One launch of the quickstart: the timeline's points, in seconds after the launch request."""
    auth = {"Authorization": f"Bearer {token}"}
    config = preset_config(PRESET).model_dump(mode="json")
    with httpx.Client(base_url=base_url, trust_env=False, timeout=60, headers=auth) as client:
        launched = time.time()
        reply = client.post("/api/v1/runs/", json={"name": "first metric", "preset": PRESET, "config": config})
        reply.raise_for_status()
        run_id = reply.json()["id"]
        watch = TrainerWatch(f"{var_dir}/runs/{run_id} ")
        watch.start()
        events = asyncio.run(_events_until_first_metric(base_url, run_id, cookie, timeout_s))
        watch.done.set()
        run = client.get(f"/api/v1/runs/{run_id}/").json()
        logs = client.get(f"/api/v1/runs/{run_id}/logs/", params={"page_size": 500}).json()["results"]
        client.post(f"/api/v1/runs/{run_id}/cancel/").raise_for_status()
        _wait_finished(client, run_id)

    times: dict[str, float | None] = {
        "created": _unix(run["created_at"]),
        "submitted": _unix(run["submitted_at"]),
        "starting": next((_unix(line["time"]) for line in logs if "→ starting" in line["message"]), None),
        "trainer process": watch.started_at,
        "running": _unix(run["started_at"]),
    }
    for name, when in events.items():
        times[name] = when
    missing = [point for point in ("created", "running", "first metric") if times.get(point) is None]
    if missing:
        raise RuntimeError(f"run {run_id}: no {', '.join(missing)} seen; run: {json.dumps(run)[:2000]}")
    return {point: when - launched for point, when in times.items() if when is not None}


async def _events_until_first_metric(base_url: str, run_id: int, cookie: str, timeout_s: float) -> dict[str, float]:
    """The first phase event of each name (when the dashboard received it) and the first metrics event
    (when it arrived here)."""
    seen: dict[str, float] = {}
    url = base_url.replace("http://", "ws://") + f"/ws/runs/{run_id}/"
    async with websockets.connect(url, additional_headers={"Cookie": cookie, "Origin": base_url}) as socket:
        async with asyncio.timeout(timeout_s):
            while "first metric" not in seen:
                message = json.loads(await socket.recv())
                event, data = message["event"], message.get("data") or {}
                if event == "phase" and data["name"] not in seen:
                    seen[data["name"]] = _unix(data["at"])
                    log(f"run {run_id}: phase {data['name']} ({data['done']} of {data['total']})")
                elif event == "metrics" and data.get("steps"):
                    seen["first metric"] = time.time()
                elif event == "status" and data["status"] in ("failed", "cancelled", "lost"):
                    raise RuntimeError(f"run {run_id} {data['status']}: {data.get('error', '')[-2000:]}")
    return seen


def _wait_finished(client: httpx.Client, run_id: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.get(f"/api/v1/runs/{run_id}/").json()["finished_at"]:
            return
        time.sleep(0.5)
    log(f"run {run_id} did not finish within 120 s of its cancel")


def import_time_s() -> float:
    """What a trainer's process spends importing the training loop and its libraries (torch,
    transformers), measured in a fresh interpreter."""
    code = (
        "import time; t = time.perf_counter(); import trainer.cli, trainer.loop.train; "
        "print(time.perf_counter() - t)"
    )
    result = subprocess.run([PY, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def repetition(runs_per_stack: int, timeout_s: float) -> list[dict[str, float]]:
    """A fresh install: the stack started, then `runs_per_stack` launches one after the other."""
    started = time.perf_counter()
    timelines = []
    with own_services(), tirlab_stack({}) as stack:
        up_s = time.perf_counter() - started
        cookie, token = login(stack.url)
        for index in range(runs_per_stack):
            log(f"launch {index + 1} of {runs_per_stack} (stack up in {up_s:.0f} s)")
            timeline = launch_and_watch(stack.url, stack.var_dir, cookie, token, timeout_s)
            timeline["stack up"] = up_s
            timelines.append(timeline)
            log(f"first metric {timeline['first metric']:.1f} s after launch")
    return timelines


def _row(label: str, values: list[float | None]) -> str:
    found = [value for value in values if value is not None]
    if not found:
        return ""
    each = "  ".join("     —" if value is None else f"{value:6.1f}" for value in values)
    return f"{label:80} {statistics.median(found):7.1f}   {each}"


def report(title: str, timelines: list[dict[str, float]]) -> None:
    print(f"\n{title} ({len(timelines)} launch{'es' if len(timelines) > 1 else ''}; seconds; median, then each)")
    print("\ntimeline (after the launch request)")
    for point in POINTS:
        if row := _row(f"  {point}", [t.get(point) for t in timelines]):
            print(row)
    print("\nbreakdown (each stretch from the point before it that was seen)")
    for point, label in STRETCH_ENDING_AT.items():
        values, before = [], None
        for timeline in timelines:
            earlier = [p for p in POINTS[: POINTS.index(point)] if p in timeline]
            values.append(timeline[point] - timeline[earlier[-1]] if point in timeline and earlier else None)
            before = before or (earlier[-1] if earlier and point in timeline else None)
        if row := _row(f"  {before} → {point}: {label}", values):
            print(row)
    first = statistics.median(t["first metric"] for t in timelines)
    print(f"\nlaunch → first GRPO metric: {first:.1f} s (target ≤ {TARGET_S:.0f} s: ×{first / TARGET_S:.2f} of it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="fresh installs to time (default 1)")
    parser.add_argument(
        "--runs-per-stack", type=int, default=1, help="launches on each stack, one after the other (default 1)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for a first metric")
    args = parser.parse_args()
    if args.repeats < 1 or args.runs_per_stack < 1:
        parser.error("--repeats and --runs-per-stack must be at least 1")

    load_before = os.getloadavg()
    imports = import_time_s()
    by_launch: list[list[dict[str, float]]] = [[] for _ in range(args.runs_per_stack)]
    for rep in range(args.repeats):
        log(f"repetition {rep + 1} of {args.repeats}: a fresh install")
        for index, timeline in enumerate(repetition(args.runs_per_stack, args.timeout)):
            by_launch[index].append(timeline)

    print(f"machine: {os.cpu_count()} cores; load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print(
        f"stack start (`make run` until 'tirlab is up'): {statistics.median(t['stack up'] for t in by_launch[0]):.1f} s"
    )
    print(f"importing trainer.cli and trainer.loop.train in a fresh interpreter: {imports:.1f} s")
    report("first launch on a fresh install", by_launch[0])
    for index, timelines in enumerate(by_launch[1:], start=2):
        report(f"launch {index} on the same stack (Ray and the model cache warm)", timelines)


if __name__ == "__main__":
    main()
