"""Runs launched for real: the REST API queues a run, Celery submits `python -m trainer run` as a Ray
job on a local Ray head, the trainer (the tiny CPU model) reports to the web process, and beat's
reconcile supervises — with PostgreSQL, Redis, daphne, a Celery worker and beat as real processes.

The stack starts once the quickstart's cold start is in the suite's model cache (the
`tiny_model_cache` fixture). The measured latencies are printed (`-s`).
"""

import contextlib
import os
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.lifecycle_stack import Stack

pytestmark = pytest.mark.timeout(1500)

STEPS = 3
# Small steps (16 trajectories) keep each run to seconds once the model is cached.
FAST = {"rollout": {"prompts_per_step": 4, "group_size": 4}, "schedule": {"max_steps": STEPS, "checkpoint_every": 1}}
# A run whose trainer has not been heard from for this long is lost: longer than a web outage below
# lasts, even when a loaded machine takes many seconds per step.
HEARTBEAT_TIMEOUT_S = 120
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def stack(tiny_model_cache: Path) -> Iterator[Stack]:
    database = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"
    s = Stack(
        database,
        tiny_model_cache,
        {"TIRLAB_MAX_CONCURRENT_RUNS": "1", "TIRLAB_HEARTBEAT_TIMEOUT_S": str(HEARTBEAT_TIMEOUT_S)},
    )
    try:
        yield s
    finally:
        s.close()


def status_events(events: list[dict]) -> list[str]:
    return [e["data"]["status"] for e in events if e["event"] == "status"]


@contextlib.contextmanager
def chromium_page() -> Iterator[Any]:
    """A page of Debian's Chromium (the test is skipped without it), closed afterwards."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.skip("Debian's chromium is not installed (make browser-deps installs it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        try:
            yield page
        finally:
            browser.close()


def log_in(stack: Stack, page: Any, path: str) -> None:
    """Log in as the stack's user through the login form, which then opens `path`."""
    page.goto(stack.url(f"/accounts/login/?next={quote(path)}"))
    page.fill("input[name=username]", "e2e")
    page.fill("input[name=password]", stack.password)
    page.click("button[type=submit]")


def test_a_run_goes_from_queued_to_succeeded_with_its_data_stored_and_pushed_live(stack: Stack) -> None:
    created = time.monotonic()
    run = stack.create_run("lifecycle", FAST)
    assert run["status"] == "queued" and run["managed"] is True
    first_metric: list[float] = []

    def until(events: list[dict]) -> bool:
        if not first_metric and any(e["event"] == "metrics" for e in events):
            first_metric.append(time.monotonic() - created)
        return "succeeded" in status_events(events)

    events = stack.listen(run["id"], until, RUN_TIMEOUT_S)
    assert status_events(events) == ["starting", "running", "succeeded"] or status_events(events)[-2:] == [
        "running",
        "succeeded",
    ], status_events(events)
    pushed_steps = sorted({s["step"] for e in events if e["event"] == "metrics" for s in e["data"]["steps"]})
    assert pushed_steps == list(range(STEPS))
    assert any(e["event"] == "trajectories" and e["data"]["trajectories"] for e in events)
    assert any(e["event"] == "logs" for e in events)

    done = stack.run(run["id"])
    assert done["status"] == "succeeded" and done["ray_job_id"].startswith(f"tirlab-run-{run['id']}-")
    assert done["checkpoint_path"].endswith(f"step-{STEPS}")
    assert stack.steps(run["id"]) == list(range(STEPS))
    trajectories = stack.api("GET", f"/api/v1/runs/{run['id']}/trajectories/").json()["results"]
    assert trajectories and {t["step"] for t in trajectories} <= set(range(STEPS))
    print(f"\nlaunch -> first metric: {first_metric[0]:.1f} s; whole run: {time.monotonic() - created:.1f} s")
    stack.wait_for(lambda: not stack.trainer_processes(run["id"]), 30, "the trainer process exiting")


def test_a_resumed_run_continues_the_series_from_its_checkpoint(stack: Stack) -> None:
    parent = next(r for r in stack.api("GET", "/api/v1/runs/").json()["results"] if r["status"] == "succeeded")
    response = stack.api("POST", f"/api/v1/runs/{parent['id']}/resume/", json={"max_steps": STEPS + 2})
    assert response.status_code == 201, response.text
    child = response.json()
    assert (child["parent"], child["parent_relation"], child["resume_from"]) == (
        parent["id"],
        "resume",
        parent["checkpoint_path"],
    )
    stack.wait_status(child["id"], {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
    assert stack.run(child["id"])["status"] == "succeeded", stack.run(child["id"])["error"]
    assert stack.steps(parent["id"]) + stack.steps(child["id"]) == list(range(STEPS + 2))


def mixed_test_file(path: Path) -> bytes:
    """A verl parquet of arithmetic problems in three data sources, as ToRL's test parquet mixes its benchmarks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trainer.data.arithmetic import arithmetic_examples

    rows = [
        {"data_source": source, "prompt": example.prompt, "ability": "math",
         "reward_model": {"style": "rule", "ground_truth": example.ground_truth}}
        for source, difficulty in (("sums", "easy"), ("products", "hard"), ("chains", "chain"))
        for example in arithmetic_examples(20, seed=5, difficulty=difficulty, split="test")
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path.read_bytes()


def test_the_base_model_and_two_checkpoints_evaluated_make_three_rows_of_the_results_table(
    stack: Stack, tmp_path: Path
) -> None:
    """The table a paper reports, from a run: its base model and two of its checkpoints evaluated on a file of three
    benchmarks, each as an evaluation run on Ray at its step, then the results page in Chromium, both themes."""
    from tests.browser._helpers import assert_readable_in_both_themes, screenshot, toggle_theme

    trained = next(
        r for r in stack.api("GET", "/api/v1/runs/").json()["results"]
        if r["name"] == "lifecycle" and r["status"] == "succeeded"
    )  # fmt: skip
    checkpoints = stack.api("GET", f"/api/v1/runs/{trained['id']}/checkpoints/").json()
    assert [c["step"] for c in checkpoints] == list(range(1, STEPS + 1))
    upload = stack.api(
        "POST",
        "/api/v1/datasets/",
        files={"file": ("three.parquet", mixed_test_file(tmp_path / "three.parquet"))},
        data={"name": "three benchmarks"},
    )
    assert upload.status_code == 201, upload.text
    assert upload.json()["data_sources"] == {"sums": 20, "products": 20, "chains": 20}
    dataset = f"dataset:{upload.json()['id']}"
    evaluations = []
    for step in (None, 1, STEPS):
        response = stack.api(
            "POST", f"/api/v1/runs/{trained['id']}/evaluate/", json={"step": step, "datasets": [dataset]}
        )
        assert response.status_code == 201, response.text
        evaluations.append(response.json()["id"])
    for run_id, step in zip(evaluations, (0, 1, STEPS), strict=True):
        done = stack.wait_status(run_id, {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
        assert done["status"] == "succeeded", done["error"]
        assert stack.steps(run_id) == [step]
        assert {f"bench/{s}/accuracy" for s in ("sums", "products", "chains")} <= set(done["metric_keys"])
        trajectories = stack.api("GET", f"/api/v1/runs/{run_id}/trajectories/", params={"data_source": "chains"})
        assert {t["data_source"] for t in trajectories.json()["results"]} == {"chains"}
    ids = ",".join(map(str, evaluations))
    table = stack.api("GET", "/api/v1/results/", params={"runs": ids}).json()
    assert [row["step"] for row in table["rows"]] == [0, 1, STEPS]
    assert sorted(table["columns"]) == ["chains", "products", "sums"]
    markdown = stack.api("GET", "/api/v1/results/", params={"runs": ids, "format": "markdown"}).text
    assert [line.split(" | ")[0] for line in markdown.splitlines()[2:]] == [
        "| lifecycle · base model", "| lifecycle · step 1", f"| lifecycle · step {STEPS}"
    ]  # fmt: skip

    with chromium_page() as page:
        log_in(stack, page, f"/results/?runs={ids}")
        page.wait_for_selector("#results-table")
        page.wait_for_load_state("load")
        names = page.eval_on_selector_all("#results-table tbody tr th", "cells => cells.map(c => c.innerText.trim())")
        assert names == ["lifecycle · base model", "lifecycle · step 1", f"lifecycle · step {STEPS}"]
        assert_readable_in_both_themes(
            page, "#results-table caption", "#results-table tbody tr:nth-child(3) td:nth-child(3)"
        )
        screenshot(page, "results.png")
        toggle_theme(page)
        screenshot(page, "results_dark.png")


def test_with_capacity_one_the_second_run_waits_its_turn(stack: Stack) -> None:
    first = stack.create_run("first", FAST)
    second = stack.create_run("second", FAST)
    stack.wait_status(first["id"], {"running"}, RUN_TIMEOUT_S)
    waiting = stack.run(second["id"])
    assert (waiting["status"], waiting["queue_position"]) == ("queued", 1)
    first_done = stack.wait_status(first["id"], {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
    second_done = stack.wait_status(second["id"], {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
    assert (first_done["status"], second_done["status"]) == ("succeeded", "succeeded")
    assert second_done["submitted_at"] >= first_done["finished_at"]


def test_cancel_stops_the_ray_job_and_leaves_no_process(stack: Stack) -> None:
    run = stack.create_run("to cancel", {**FAST, "schedule": {"max_steps": 50, "checkpoint_every": 1}})
    stack.wait_for(lambda: stack.steps(run["id"]), RUN_TIMEOUT_S, "a first metric step")
    asked = time.monotonic()
    response = stack.api("POST", f"/api/v1/runs/{run['id']}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    stack.wait_for(lambda: not stack.trainer_processes(run["id"]), 60, "the trainer process exiting")
    gone = time.monotonic() - asked
    from ray.job_submission import JobSubmissionClient

    def job_status() -> str:
        job = JobSubmissionClient(stack.ray_address).get_job_status(stack.run(run["id"])["ray_job_id"])
        return str(getattr(job, "value", job))

    # Ray's job supervisor records STOPPED a moment after the process it stopped has exited.
    stack.wait_for(lambda: job_status() == "STOPPED", 30, "the Ray job recorded as STOPPED")
    assert stack.run(run["id"])["status"] == "cancelled"
    assert stack.steps(run["id"]) and stack.steps(run["id"])[-1] < 49
    print(f"\ncancel -> trainer gone: {gone:.1f} s")


def test_a_worker_killed_mid_run_is_replaced_and_the_run_finishes(stack: Stack) -> None:
    run = stack.create_run("worker dies", {**FAST, "schedule": {"max_steps": 6, "checkpoint_every": 0}})
    stack.wait_status(run["id"], {"running"}, RUN_TIMEOUT_S)
    stack.procs["worker"].stop(signal.SIGKILL, timeout=5)
    time.sleep(3)
    stack.start("worker")
    done = stack.wait_status(run["id"], {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
    assert done["status"] == "succeeded", done["error"]
    assert stack.steps(run["id"]) == list(range(6))


def test_a_worker_killed_during_a_launch_leaves_no_run_starting_and_no_stray_trainer(stack: Stack) -> None:
    """Wherever the kill lands — before the job is submitted, between submitting and committing (a job no run
    records: reconcile stops it), or after — the run is launched once for good and nothing is left behind."""
    run = stack.create_run("worker dies in launch", FAST)
    time.sleep(0.3)  # the worker has taken the launch task by now and talks to Ray
    stack.procs["worker"].stop(signal.SIGKILL, timeout=5)
    time.sleep(2)
    stack.start("worker")
    done = stack.wait_status(run["id"], {"succeeded", "failed", "lost", "cancelled"}, RUN_TIMEOUT_S)
    assert done["status"] == "succeeded", done["error"]
    assert stack.steps(run["id"]) == list(range(STEPS))
    stack.wait_for(lambda: not stack.trainer_processes(run["id"]), 60, "every trainer of the run gone")
    from ray.job_submission import JobStatus, JobSubmissionClient

    def jobs() -> dict[str, JobStatus]:
        listed = JobSubmissionClient(stack.ray_address).list_jobs()
        return {j.submission_id: j.status for j in listed if j.metadata.get("tirlab_run") == str(run["id"])}

    # Ray's job supervisor records how a job ended a moment after its process has exited.
    stack.wait_for(
        lambda: all(status.is_terminal() for status in jobs().values()), 30, "the run's Ray jobs recorded as ended"
    )
    assert jobs()[done["ray_job_id"]] == JobStatus.SUCCEEDED


def test_a_killed_trainer_ends_the_run_with_a_reason(stack: Stack) -> None:
    run = stack.create_run("trainer dies", {**FAST, "schedule": {"max_steps": 50, "checkpoint_every": 0}})
    stack.wait_for(lambda: stack.steps(run["id"]), RUN_TIMEOUT_S, "a first metric step")
    killed = time.monotonic()
    for proc in stack.trainer_processes(run["id"]):
        proc.kill()
    done = stack.wait_status(run["id"], {"failed", "lost"}, HEARTBEAT_TIMEOUT_S + 30)
    assert done["error"] or "heartbeat" in str(done)
    logs = stack.api("GET", f"/api/v1/runs/{run['id']}/logs/").json()["results"]
    assert any(line["message"].startswith("status running → " + done["status"]) for line in logs)
    print(f"\ntrainer killed -> run {done['status']}: {time.monotonic() - killed:.1f} s")


def test_reports_survive_the_web_server_being_down_without_gaps_or_duplicates(stack: Stack) -> None:
    steps = 8
    run = stack.create_run("web down", {**FAST, "schedule": {"max_steps": steps, "checkpoint_every": 0}})
    stack.wait_for(lambda: stack.steps(run["id"]), RUN_TIMEOUT_S, "a first metric step")
    stack.procs["web"].stop()
    # The trainer keeps training meanwhile, and its reports wait: in the web's listening socket, which the
    # stack holds as devstack does, or in the reporter's spool once a request timed out. The web comes back
    # after 5 s, well within the reporter's 30 s to deliver at its end (it used to come back only once the
    # spool held something, which takes a 30 s request timeout: a race with that deadline).
    time.sleep(5)
    stack.start("web")
    done = stack.wait_status(run["id"], {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
    assert done["status"] == "succeeded", done["error"]
    assert stack.steps(run["id"]) == list(range(steps))
    trajectories = []
    page = f"/api/v1/runs/{run['id']}/trajectories/?page_size=500"
    while page:
        body = stack.api("GET", page.replace(stack.url(""), "")).json()
        trajectories += body["results"]
        page = body.get("next")
    keys = [(t["step"], t["prompt_index"], t["sample_index"]) for t in trajectories]
    assert len(keys) == len(set(keys)) and {k[0] for k in keys} == set(range(steps))


def test_launch_from_the_form_and_watch_the_charts_gain_points_live(stack: Stack) -> None:
    """The browser path end to end: the new-run form, a Ray job, and the run page fed by the websocket."""
    with chromium_page() as page:
        # What the page's own websocket received: the evidence that points arrive live, not by polling.
        frames: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
        log_in(stack, page, "/runs/new/?preset=quickstart")
        page.wait_for_selector("#launch")
        page.fill("#f-name", "launched from the browser")
        page.fill("[name='config.schedule.max_steps']", "6")
        page.fill("[name='config.rollout.prompts_per_step']", "4")
        page.fill("[name='config.rollout.group_size']", "4")
        page.click("#launch")
        page.wait_for_url(re.compile(r".*/runs/\d+/$"))
        run_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
        points = (
            "(() => { const d = document.querySelector(\".chart[data-key='accuracy']\");"
            " return d && d.data ? d.data[2].customdata.length : 0; })()"
        )
        page.wait_for_function(f"{points} >= 1", timeout=RUN_TIMEOUT_S * 1000)
        first = page.evaluate(points)
        page.wait_for_function(f"{points} > {first}", timeout=RUN_TIMEOUT_S * 1000)
        # The points came over the page's websocket. (Its "live" label is no evidence: a run that finishes
        # before the label is read is rightly not called live.)
        assert any('"event": "metrics"' in frame or '"event":"metrics"' in frame for frame in frames), frames[:5]
        shots = os.environ.get("TIRLAB_SCREENSHOT_DIR")
        stack.wait_status(run_id, {"succeeded", "failed", "lost"}, RUN_TIMEOUT_S)
        page.wait_for_function(f"{points} === 6", timeout=30_000)
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(Path(shots) / "run_page_live.png"))
    assert stack.run(run_id)["status"] == "succeeded"


def test_a_verl_run_on_a_head_without_gpus_is_refused_from_the_form_before_anything_is_submitted(stack: Stack) -> None:
    """Engine 'verl' with the torl preset on 1 x 8 GPUs, launched from the form: the local head has no GPU,
    so the form comes back with the cluster's answer, and no run, Ray job or process is left behind."""
    from ray.job_submission import JobSubmissionClient

    runs_before = stack.api("GET", "/api/v1/runs/").json()["count"]
    jobs_before = len(JobSubmissionClient(stack.ray_address).list_jobs())
    with chromium_page() as page:
        log_in(stack, page, "/runs/new/?preset=torl")
        page.wait_for_selector("#launch")
        page.select_option("[name='config.engine']", "verl")
        page.fill("[name='config.cluster.gpus_per_node']", "8")
        with page.expect_navigation():
            page.click("#launch")
        assert page.locator("#form-errors").is_visible()
        message = page.locator(".field[data-path='cluster.gpus_per_node'] .field-error").inner_text()
    assert f"needs 8 GPUs (1 node x 8 GPU); the cluster at {stack.ray_address} has 0" in message, message
    assert stack.api("GET", "/api/v1/runs/").json()["count"] == runs_before
    assert len(JobSubmissionClient(stack.ray_address).list_jobs()) == jobs_before
    assert not stack.trainer_processes()
