"""The reporting client against a real HTTP server in this process that can fail, vanish or refuse."""

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from trainer.contract import (
    MAX_CHECKPOINT,
    MAX_LOG_MESSAGE,
    MAX_METRIC_VALUES,
    MAX_STATUS_ERROR,
    IngestBatch,
    RunStatus,
    TrajectoryIn,
)
from trainer.report.client import (
    LOG_FILE,
    METRICS_FILE,
    PHASE_FILE,
    SPOOL_FILE,
    STATUS_FILE,
    TRAJECTORIES_FILE,
    Reporter,
)

TOKEN = "tlr_test-token"
# Fast enough that the whole file runs in a few seconds on two cores.
FAST = {"flush_interval_s": 0.05, "heartbeat_s": 60.0, "backoff_initial_s": 0.02, "backoff_max_s": 0.2}


class Dashboard:
    """An ingest endpoint that records every request; `answer` decides each response's status code
    for the batches that the contract's schema accepts, as the real dashboard's does."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # every request, with its answer
        self.invalid: list[str] = []  # why the contract refused a batch: a reporter bug
        self.lock = threading.Lock()
        self.answer: Callable[[dict[str, Any]], int] = lambda batch: 200
        self.say_stop = False  # answer 200 with "stop": true, as for a run cancelled moments ago
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1/runs/7/ingest"

    def start(self) -> None:
        dashboard = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                batch = json.loads(body)
                with dashboard.lock:
                    try:
                        IngestBatch.model_validate(batch)
                    except ValidationError as exc:
                        dashboard.invalid.append(str(exc))
                        code = 400
                    else:
                        code = dashboard.answer(batch)
                    dashboard.requests.append(
                        {
                            "batch": batch,
                            "code": code,
                            "bytes": len(body),
                            "auth": self.headers["Authorization"],
                            "time": time.monotonic(),
                        }
                    )
                ok = {"written": {}, "stop": dashboard.say_stop}
                reply = json.dumps(ok if code == 200 else {"detail": f"answered {code}"}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def stop(self) -> None:
        """Gone: connections to the port are refused until start() again."""
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()
        self.server = None

    def accepted(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r["batch"] for r in self.requests if r["code"] == 200]

    def accepted_metrics(self) -> list[dict[str, Any]]:
        return [m for batch in self.accepted() for m in batch.get("metrics", [])]

    def data_requests(self) -> list[dict[str, Any]]:
        """Requests that carried something other than a heartbeat."""
        with self.lock:
            return [r for r in self.requests if set(r["batch"]) != {"heartbeat"}]


@pytest.fixture
def dashboard() -> Iterator[Dashboard]:
    server = Dashboard()
    yield server
    if server.server is not None:
        server.stop()
    assert server.invalid == []  # everything the reporter sent met the contract


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def reporter(out: Path, dashboard: Dashboard, **overrides: Any) -> Reporter:
    return Reporter(out, report_url=dashboard.url, run_token=TOKEN, **{**FAST, **overrides})


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def trajectory(step: int, sample: int, reward: float = 1.0) -> TrajectoryIn:
    return TrajectoryIn(
        step=step,
        prompt_index=0,
        sample_index=sample,
        prompt="What is 2 + 3?",
        turns=[{"kind": "model", "text": "\\boxed{5}"}],
        final_answer="5",
        ground_truth="5",
        reward=reward,
        reward_components={"correct": 1.0},
        correct=True,
        tool_call_count=0,
    )


def test_reports_are_batched_and_carry_the_run_token(tmp_path, dashboard):
    with reporter(tmp_path, dashboard, flush_interval_s=0.3) as rep:
        for step in range(40):
            rep.log_metrics(step, {"accuracy": step / 40})
        rep.log_trajectories([trajectory(3, 0), trajectory(3, 1)])
        rep.log("hello")
    steps = [m["step"] for m in dashboard.accepted_metrics()]
    assert steps == list(range(40))
    assert len(dashboard.data_requests()) <= 3  # 42 reports, not 42 requests
    assert {r["auth"] for r in dashboard.requests} == {f"Bearer {TOKEN}"}
    trajectories = [t for batch in dashboard.accepted() for t in batch.get("trajectories", [])]
    assert [(t["step"], t["sample_index"]) for t in trajectories] == [(3, 0), (3, 1)]
    assert [line["message"] for b in dashboard.accepted() for line in b.get("logs", [])] == ["hello"]


def test_non_finite_metrics_become_null_on_the_wire_and_on_disk(tmp_path, dashboard):
    values = {"loss": math.nan, "kl": math.inf, "grad_norm": -math.inf, "accuracy": 0.5, "steps": 3, "flag": True}
    with reporter(tmp_path, dashboard) as rep:
        rep.log_metrics(1, values)
        rep.log_metrics(2, {"bad key!": 1.0, "text": "high", "fine": 2.0})
    expected = {"loss": None, "kl": None, "grad_norm": None, "accuracy": 0.5, "steps": 3, "flag": 1.0}
    sent = dashboard.accepted_metrics()
    assert [m["values"] for m in sent] == [expected, {"fine": 2.0}]
    assert [m["values"] for m in read_jsonl(tmp_path / METRICS_FILE)] == [expected, {"fine": 2.0}]
    assert "bad key!, text" in (tmp_path / LOG_FILE).read_text()  # left out, and said so


def test_a_metric_key_the_dashboard_refuses_is_left_out_rather_than_sinking_the_batch(tmp_path, dashboard):
    with reporter(tmp_path, dashboard) as rep:
        rep.log_metrics(1, {"accuracy\n": 1.0, "reward@2": 0.5, "fine": 2.0})
    assert [m["values"] for m in dashboard.accepted_metrics()] == [{"reward@2": 0.5, "fine": 2.0}]


def test_values_over_the_contracts_limit_per_step_are_left_out(tmp_path, dashboard):
    values = {f"m/{index:05d}": float(index) for index in range(MAX_METRIC_VALUES + 1)}
    with reporter(tmp_path, dashboard) as rep:
        rep.log_metrics(1, values)
    (sent,) = dashboard.accepted_metrics()
    assert len(sent["values"]) == MAX_METRIC_VALUES
    assert f"m/{MAX_METRIC_VALUES:05d}" in (tmp_path / LOG_FILE).read_text()


def test_long_texts_are_cut_to_the_contracts_limits(tmp_path, dashboard):
    with reporter(tmp_path, dashboard) as rep:
        rep.log("x" * (MAX_LOG_MESSAGE + 10))
        rep.set_status(RunStatus.SUCCEEDED, error="e" * (MAX_STATUS_ERROR + 10), checkpoint="c" * (MAX_CHECKPOINT + 10))
    (line,) = [line for batch in dashboard.accepted() for line in batch.get("logs", [])]
    status = dashboard.accepted()[-1]["status"]
    assert (len(line["message"]), len(status["error"]), len(status["checkpoint"])) == (
        MAX_LOG_MESSAGE,
        MAX_STATUS_ERROR,
        MAX_CHECKPOINT,
    )


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.STARTING, RunStatus.LOST, "done"])
def test_a_status_only_the_dashboard_sets_is_refused(tmp_path, status):
    with Reporter(tmp_path) as rep, pytest.raises(ValueError):
        rep.set_status(status)


def test_a_big_batch_is_split_under_the_byte_limit(tmp_path, dashboard):
    limit = 2_000
    with reporter(tmp_path, dashboard, max_batch_bytes=limit, flush_interval_s=0.5) as rep:
        for step in range(60):
            rep.log_metrics(step, {"accuracy": 0.5, "reward/mean": 0.25})
    assert [m["step"] for m in dashboard.accepted_metrics()] == list(range(60))
    data = dashboard.data_requests()
    assert len(data) >= 3
    assert max(r["bytes"] for r in data) <= limit + 100  # the batch envelope on top of its records


def test_5xx_is_retried_with_growing_backoff_and_nothing_is_lost_or_doubled(tmp_path, dashboard):
    failures = iter([503, 503, 503])
    dashboard.answer = lambda batch: next(failures, 200) if "metrics" in batch else 200
    with reporter(tmp_path, dashboard, backoff_initial_s=0.05, backoff_max_s=1.0) as rep:
        for step in range(5):
            rep.log_metrics(step, {"accuracy": 0.1 * step})
        wait_for(lambda: len(dashboard.accepted_metrics()) == 5)
        rep.log_metrics(5, {"accuracy": 0.6})
    assert [m["step"] for m in dashboard.accepted_metrics()] == list(range(6))
    assert rep.retries == 3
    attempts = [r["time"] for r in dashboard.data_requests()][:4]
    gaps = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
    assert gaps[0] < gaps[1] < gaps[2]  # 0.05, 0.1, 0.2 s less up to 20% jitter


def test_an_outage_spools_to_disk_and_replays_in_order(tmp_path, dashboard):
    rep = reporter(tmp_path, dashboard)
    rep.log_metrics(0, {"accuracy": 0.0})
    wait_for(lambda: len(dashboard.accepted_metrics()) == 1)
    dashboard.stop()
    for step in range(1, 30):
        rep.log_metrics(step, {"accuracy": step / 30})
        rep.log(f"step {step}")
    spool = tmp_path / SPOOL_FILE
    wait_for(lambda: spool.exists() and spool.read_bytes().count(b"\n") >= 58)  # the outage is on disk
    dashboard.start()
    wait_for(lambda: len(dashboard.accepted_metrics()) == 30)
    assert rep.close(5.0) is True
    assert [m["step"] for m in dashboard.accepted_metrics()] == list(range(30))
    messages = [line["message"] for batch in dashboard.accepted() for line in batch.get("logs", [])]
    assert messages == [f"step {step}" for step in range(1, 30)]
    seqs = [line["seq"] for batch in dashboard.accepted() for line in batch.get("logs", [])]
    assert seqs == sorted(set(seqs))
    assert spool.read_bytes() == b""  # delivered: the spool starts afresh


def heartbeats_too_soon(dashboard: Dashboard, heartbeat_s: float) -> list[float]:
    """Gaps shorter than `heartbeat_s` between a heartbeat and the request before it (the dashboard
    runs in this process: one clock)."""
    with dashboard.lock:
        requests = list(dashboard.requests)
    return [
        now["time"] - before["time"]
        for before, now in zip(requests, requests[1:], strict=False)
        if now["batch"] == {"heartbeat": True} and now["time"] - before["time"] < heartbeat_s
    ]


def test_heartbeats_keep_an_idle_run_alive(tmp_path, dashboard):
    with reporter(tmp_path, dashboard, heartbeat_s=0.1):
        wait_for(lambda: sum(r["batch"] == {"heartbeat": True} for r in dashboard.requests) >= 3)
    assert heartbeats_too_soon(dashboard, 0.1) == []


def test_heartbeats_pause_while_batches_flow(tmp_path, dashboard):
    # A loaded machine may stall the loop below past heartbeat_s, and then a heartbeat is due: what
    # never happens is one sooner than heartbeat_s after a batch.
    with reporter(tmp_path, dashboard, heartbeat_s=0.3) as rep:
        for step in range(10):
            rep.log_metrics(step, {"accuracy": 0.5})
            time.sleep(0.05)
    assert [m["step"] for m in dashboard.accepted_metrics()] == list(range(10))
    assert heartbeats_too_soon(dashboard, 0.3) == []


def test_409_stops_reporting_and_tells_the_training_loop(tmp_path, dashboard):
    dashboard.answer = lambda batch: 409 if "metrics" in batch else 200
    rep = reporter(tmp_path, dashboard)
    rep.log_metrics(0, {"accuracy": 0.1})
    wait_for(lambda: rep.stopped_by_dashboard)
    seen = len(dashboard.requests)
    rep.log_metrics(1, {"accuracy": 0.2})
    rep.set_status("succeeded")
    assert rep.close(1.0) is False
    assert len(dashboard.requests) == seen  # nothing after the 409
    assert [m["step"] for m in read_jsonl(tmp_path / METRICS_FILE)] == [0, 1]  # the local record goes on
    assert "409" in rep.stop_reason and "reporting stopped" in (tmp_path / LOG_FILE).read_text()


def test_a_stop_answer_tells_the_training_loop_and_the_final_flush_still_goes_out(tmp_path, dashboard):
    rep = reporter(tmp_path, dashboard)
    rep.log_metrics(0, {"accuracy": 0.1})
    wait_for(lambda: len(dashboard.accepted_metrics()) == 1)
    assert not rep.stopped_by_dashboard
    dashboard.say_stop = True
    rep.log_metrics(1, {"accuracy": 0.2})
    wait_for(lambda: rep.stopped_by_dashboard)
    rep.log_metrics(2, {"accuracy": 0.3})
    rep.set_status("cancelled", checkpoint="/ckpt/step-3")
    assert rep.close(2.0) is True
    assert [m["step"] for m in dashboard.accepted_metrics()] == [0, 1, 2]
    assert dashboard.accepted()[-1]["status"]["checkpoint"] == "/ckpt/step-3"


@pytest.mark.parametrize("code", [401, 403])
def test_a_refused_token_stops_reporting(tmp_path, dashboard, code):
    dashboard.answer = lambda batch: code
    rep = reporter(tmp_path, dashboard)
    wait_for(lambda: rep.stop_reason != "")
    assert not rep.stopped_by_dashboard and str(code) in rep.stop_reason
    rep.close(1.0)
    assert len(dashboard.requests) == 1


def test_a_400_drops_that_batch_logs_why_and_goes_on(tmp_path, dashboard):
    def answer(batch: dict[str, Any]) -> int:
        steps = [m["step"] for m in batch.get("metrics", [])]
        return 400 if 1 in steps else 200

    dashboard.answer = answer
    with reporter(tmp_path, dashboard) as rep:
        rep.log_metrics(0, {"accuracy": 0.0})
        wait_for(lambda: len(dashboard.accepted_metrics()) == 1)
        rep.log_metrics(1, {"accuracy": 0.1})
        wait_for(lambda: rep.dropped_batches == 1)
        rep.log_metrics(2, {"accuracy": 0.2})
    assert [m["step"] for m in dashboard.accepted_metrics()] == [0, 2]
    assert [r["code"] for r in dashboard.data_requests()].count(400) == 1  # never retried
    assert "refused a batch" in (tmp_path / LOG_FILE).read_text()


def test_close_flushes_everything_and_sends_the_final_status_last(tmp_path, dashboard):
    rep = reporter(tmp_path, dashboard, flush_interval_s=5.0)  # nothing goes out before close()
    rep.set_status("running", checkpoint="/ckpt/step-0")
    rep.log_metrics(0, {"accuracy": 0.5})
    rep.set_status("succeeded", checkpoint="/ckpt/step-1")
    rep.log("after the final status was set")
    rep.log_trajectories([trajectory(1, 0)])
    assert rep.close(5.0) is True
    batches = dashboard.accepted()
    statuses = [b["status"] for b in batches if "status" in b]
    assert statuses == [
        {"status": "running", "error": "", "checkpoint": "/ckpt/step-0"},
        {"status": "succeeded", "error": "", "checkpoint": "/ckpt/step-1"},
    ]
    assert "status" in batches[-1]
    assert sum(len(b.get("logs", [])) for b in batches) == 1
    assert sum(len(b.get("trajectories", [])) for b in batches) == 1
    assert json.loads((tmp_path / STATUS_FILE).read_text())["status"] == "succeeded"


def test_an_exception_in_the_with_block_reports_the_run_failed(tmp_path, dashboard):
    with pytest.raises(RuntimeError), reporter(tmp_path, dashboard):
        raise RuntimeError("reward crashed")
    assert dashboard.accepted()[-1]["status"] == {"status": "failed", "error": "RuntimeError: reward crashed"}


def test_close_gives_up_at_its_timeout_and_keeps_the_spool(tmp_path, dashboard):
    dashboard.stop()
    rep = reporter(tmp_path, dashboard)
    rep.log_metrics(0, {"accuracy": 0.5})
    rep.set_status("succeeded")
    started = time.monotonic()
    assert rep.close(0.5) is False
    # Its timeout, plus the second close() gives the sender thread to end: far below the 30 s a request
    # or the default close would wait, and generous for a loaded machine.
    assert time.monotonic() - started < 10
    assert b"status\t" in (tmp_path / SPOOL_FILE).read_bytes()
    assert "not delivered" in (tmp_path / LOG_FILE).read_text()


def test_offline_writes_the_runs_record_into_the_out_dir(tmp_path):
    with Reporter(tmp_path / "out") as rep:
        assert not rep.online
        rep.log_metrics(0, {"accuracy": 0.25, "loss": math.nan})
        rep.log_trajectories([trajectory(0, 0), trajectory(0, 1, reward=-1.0)])
        rep.log("warming up", level="warning")
        rep.set_status("succeeded", checkpoint="ckpt/step-0")
    out = tmp_path / "out"
    assert read_jsonl(out / METRICS_FILE)[0]["values"] == {"accuracy": 0.25, "loss": None}
    assert [t["reward"] for t in read_jsonl(out / TRAJECTORIES_FILE)] == [1.0, -1.0]
    assert "WARNING warming up" in (out / LOG_FILE).read_text()
    assert json.loads((out / STATUS_FILE).read_text())["checkpoint"] == "ckpt/step-0"
    assert not (out / SPOOL_FILE).exists()


def test_log_sequence_numbers_keep_increasing_across_processes(tmp_path):
    with Reporter(tmp_path) as first:
        first.log("a")
        first.log("b")
        seq_a = first._seq
    with Reporter(tmp_path) as second:
        second.log("c")
        assert second._seq > seq_a  # a resumed trainer's lines are new lines, not retries of old ones


def phases(dashboard: Dashboard) -> list[dict[str, Any]]:
    return [batch["phase"] for batch in dashboard.accepted() if "phase" in batch]


def test_phases_are_coalesced_so_only_the_latest_is_sent_with_the_next_batch(tmp_path, dashboard):
    rep = reporter(tmp_path, dashboard, flush_interval_s=5.0)  # nothing goes out before close()
    wait_for(lambda: len(dashboard.requests) == 1)  # but the heartbeat a reporter starts with
    for step in range(1, 1501):  # an SFT loop reporting every step
        rep.set_phase("sft", step, 1500, eta_s=(1500 - step) * 0.4)
    rep.set_phase("rl", 0, 20)
    rep.log_metrics(0, {"accuracy": 0.5})
    assert rep.close(5.0) is True
    (batch,) = [r["batch"] for r in dashboard.data_requests()]
    assert batch["phase"] == {"name": "rl", "done": 0, "total": 20, "detail": ""}
    assert [m["step"] for m in batch["metrics"]] == [0]


def test_a_phase_goes_out_on_its_own_within_the_flush_interval(tmp_path, dashboard):
    with reporter(tmp_path, dashboard, flush_interval_s=0.05) as rep:
        rep.set_phase("loading", 0, 1, detail="SmolLM2-135M-Instruct")
        wait_for(lambda: phases(dashboard) != [], timeout_s=2.0)
    assert phases(dashboard) == [{"name": "loading", "done": 0, "total": 1, "detail": "SmolLM2-135M-Instruct"}]


def test_a_phase_set_during_an_outage_arrives_once_the_dashboard_answers(tmp_path, dashboard):
    rep = reporter(tmp_path, dashboard)
    dashboard.stop()
    rep.set_phase("sft", 1, 10)
    rep.set_phase("sft", 7, 10, eta_s=3.0)
    time.sleep(0.2)  # a few refused connections
    assert not (tmp_path / SPOOL_FILE).exists() or b"phase" not in (tmp_path / SPOOL_FILE).read_bytes()
    dashboard.start()
    wait_for(lambda: phases(dashboard) != [])
    assert rep.close(5.0) is True
    assert phases(dashboard) == [{"name": "sft", "done": 7, "total": 10, "eta_s": 3.0, "detail": ""}]


def test_the_phase_is_written_to_the_out_dir_offline(tmp_path):
    with Reporter(tmp_path) as rep:
        rep.set_phase("loading", 0, 1, detail="tirlab/tiny-math")
        rep.set_phase("sft", 340, 1500, eta_s=math.nan, detail="loss 0.12")  # no estimate yet
        phase = json.loads((tmp_path / PHASE_FILE).read_text())
    assert {k: phase[k] for k in ("name", "done", "total", "eta_s", "detail")} == {
        "name": "sft",
        "done": 340,
        "total": 1500,
        "eta_s": None,
        "detail": "loss 0.12",
    }
    assert phase["time"] == pytest.approx(time.time(), abs=60)


@pytest.mark.parametrize(
    "name, done, total, eta_s",
    [("warmup", 0, 1, None), ("sft", 11, 10, None), ("sft", -1, 10, None), ("rl", 0, 0, None), ("rl", 1, 2, -5.0)],
)
def test_a_phase_the_contract_refuses_is_refused_at_once(tmp_path, name, done, total, eta_s):
    with Reporter(tmp_path) as rep, pytest.raises(ValueError):
        rep.set_phase(name, done, total, eta_s=eta_s)


def test_a_training_run_reports_its_rl_steps_as_a_phase_with_an_eta(tmp_path, random_tiny):
    from tests.model_cache import MODEL_CACHE
    from trainer.config import validate_config
    from trainer.loop.train import run_training

    config = {
        "model": {"name_or_path": str(random_tiny)},
        "data": {"train_dataset": "arithmetic", "prompt_template": "plain", "max_response_tokens": 16},
        "rollout": {"prompts_per_step": 2, "group_size": 2, "trajectories_to_report": 0},
        "schedule": {"max_steps": 2},
    }
    seen: list[dict[str, Any]] = []
    with Reporter(tmp_path) as rep:
        record = rep.set_phase

        def spy(*args: Any, **kwargs: Any) -> None:
            record(*args, **kwargs)
            seen.append(json.loads((tmp_path / PHASE_FILE).read_text()))

        rep.set_phase = spy
        run_training(
            validate_config(config), reporter=rep, out_dir=tmp_path, model_cache=MODEL_CACHE, log=lambda _: None
        )
    assert [(p["name"], p["done"], p["total"]) for p in seen] == [
        ("loading", 0, 1),
        ("rl", 0, 2),
        ("rl", 1, 2),
        ("rl", 2, 2),
    ]
    assert seen[0]["detail"] == str(random_tiny)[-200:]
    assert seen[2]["eta_s"] > 0 and seen[3]["eta_s"] == 0
