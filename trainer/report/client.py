"""The trainer's reporting client: metrics, trajectories, log lines and run status.

Every report is written at once to the run's out directory (`metrics.jsonl`, `trajectories.jsonl`,
`log.txt`, `status.json`, `checkpoints.jsonl`, `sft_metrics.jsonl` for the SFT cold start's metrics, and `phase.json`:
what the run is doing now, its progress and ETA), so an offline run leaves a complete record and a
dashboard run leaves one too. With a `report_url` (the
dashboard's `POST /api/v1/runs/<id>/ingest`), reports are also queued for one background sender
thread, which:

- batches them: it sends what has queued every `flush_interval_s`, sooner when a batch gets big,
  and splits batches to stay under `max_batch_bytes`;
- retries connection errors, 5xx and 429 with exponential backoff, and meanwhile moves everything
  unsent to an append-only spool file in the out directory, replayed in order once the dashboard
  answers again (memory stays bounded however long the outage);
- sends the latest phase (`set_phase`) with the next batch, or on its own within `flush_interval_s`;
  phases are coalesced, never queued or spooled: only where the run is now matters, so calling it
  every SFT step costs a file write and no request;
- sends an empty batch (a heartbeat) whenever `heartbeat_s` pass without a successful request, so
  a long step never looks dead; it is the sender's own loop rather than a second thread, so a
  heartbeat can never overtake the final status and find the run already finished;
- drops a batch the dashboard refuses with 400 (a trainer bug: retrying cannot fix it) after
  logging its field errors; stops on 409 (the run finished, e.g. cancelled from the dashboard,
  which `stopped_by_dashboard` tells the training loop) and on 401/403 (the token is not valid);
  an answer saying `"stop": true` (cancelled moments ago) sets `stopped_by_dashboard` too, while
  the dashboard still keeps the final flush.

The training loop's calls only serialise and enqueue: they never wait on the network.
Log lines carry increasing sequence numbers and metric steps and trajectories have natural keys,
so the dashboard ignores what a retry sends twice.

    with Reporter(out_dir, report_url=url, run_token=token) as reporter:
        reporter.set_status("running")
        reporter.set_phase("sft", step, total_steps, eta_s=120.0)   # as often as you like
        reporter.log_metrics(step, {"accuracy": 0.5})
        reporter.log_trajectories(trajectories)   # trainer.contract.TrajectoryIn, built by the trainer
        reporter.log_checkpoint(step, path)       # a checkpoint saved, which the dashboard can evaluate
        if reporter.stopped_by_dashboard: ...
        reporter.set_status("succeeded")   # held back and sent by close(), after everything else
"""

from __future__ import annotations

import collections
import http.client
import json
import logging
import math
import os
import queue
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel

from trainer.contract import (
    FINISHED_STATUSES,
    LOG_LEVELS,
    MAX_CHECKPOINT,
    MAX_LOG_MESSAGE,
    MAX_METRIC_VALUES,
    MAX_PHASE_DETAIL,
    MAX_STATUS_ERROR,
    METRIC_KEY_PATTERN,
    CheckpointIn,
    LogLineIn,
    MetricStepIn,
    PhaseIn,
    RunStatus,
    StatusIn,
    TrajectoryIn,
    is_metric_key,
    is_sft_metric,
)

logger = logging.getLogger("trainer.report.client")

METRICS_FILE = "metrics.jsonl"
# The SFT cold start's metrics (trainer.contract.is_sft_metric), by SFT step: metrics.jsonl keeps the RL steps.
SFT_METRICS_FILE = "sft_metrics.jsonl"
TRAJECTORIES_FILE = "trajectories.jsonl"
CHECKPOINTS_FILE = "checkpoints.jsonl"
LOG_FILE = "log.txt"
STATUS_FILE = "status.json"
PHASE_FILE = "phase.json"
SPOOL_FILE = "report-spool.jsonl"

Kind = Literal["metrics", "trajectories", "logs", "checkpoints", "status"]
_KINDS: tuple[Kind, ...] = ("metrics", "trajectories", "logs", "checkpoints", "status")


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data: NaN and infinities become None (the dashboard refuses them), numpy and
    torch scalars become Python numbers, tuples become lists, and anything else unknown becomes its str."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    item = getattr(value, "item", None)  # numpy scalars and 0-d torch tensors
    if callable(item):
        try:
            return jsonable(item())
        except (TypeError, ValueError, RuntimeError):
            pass  # an array of several values: its str is all we can show
    return str(value)


def metric_values(values: Mapping[str, Any]) -> tuple[dict[str, float | None], list[str]]:
    """The values the dashboard accepts (finite numbers, or None for undefined ones like NaN) and the
    names of the values left out because their key or value cannot be stored, or because the step
    already holds the most values the contract allows. Checked one by one, so that one bad name costs
    that value rather than the whole step."""
    clean: dict[str, float | None] = {}
    rejected: list[str] = []
    for key, value in values.items():
        value = jsonable(value)
        if isinstance(value, int | float):  # bool too: a flag is a 0/1 series
            value = _as_float(value)
        if not is_metric_key(key) or len(clean) >= MAX_METRIC_VALUES or not (value is None or isinstance(value, float)):
            rejected.append(str(key))
            continue
        clean[key] = value
    return clean, rejected


def _as_float(value: float) -> float | str:
    try:
        return float(value)
    except OverflowError:  # an int too big for a float: no number the dashboard can store
        return str(value)


def _dumps(value: Any) -> str:
    # allow_nan=False: jsonable() has already turned every non-finite float into None.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _json(item: BaseModel) -> str:
    # Unset optional fields (None) are left out, as the dashboard's defaults are the same.
    return item.model_dump_json(exclude_none=True)


def _record(kind: Kind, line: str) -> bytes:
    """One queued report as a spool line: its kind, a tab, its JSON; JSON never holds a raw newline."""
    return f"{kind}\t{line}\n".encode()


def build_batch(records: Iterable[bytes], phase: bytes | None = None) -> bytes:
    """The ingest payload of queued records (and the latest phase's JSON); each record's JSON is
    spliced in without reparsing."""
    parts: dict[str, list[bytes]] = {"metrics": [], "trajectories": [], "logs": [], "checkpoints": []}
    status: bytes | None = None
    for record in records:
        kind, _, body = record.rstrip(b"\n").partition(b"\t")
        if kind == b"status":
            status = body
        else:
            parts[kind.decode()].append(body)
    fields = [b'"%s":[%s]' % (name.encode(), b",".join(items)) for name, items in parts.items() if items]
    fields.append(b'"heartbeat":true')
    if status is not None:
        fields.append(b'"status":' + status)
    if phase is not None:
        fields.append(b'"phase":' + phase)
    return b"{" + b",".join(fields) + b"}"


class _Buffer:
    """Records waiting in memory while the dashboard answers."""

    def __init__(self) -> None:
        self._records: collections.deque[bytes] = collections.deque()

    def __len__(self) -> int:
        return len(self._records)

    def add(self, records: Iterable[bytes]) -> None:
        self._records.extend(records)

    def peek(self, max_bytes: int, max_items: int) -> list[bytes]:
        return _take(iter(self._records), max_bytes, max_items)

    def advance(self, records: list[bytes]) -> None:
        for _ in records:
            self._records.popleft()

    def drain(self) -> list[bytes]:
        records = list(self._records)
        self._records.clear()
        return records


class _Spool:
    """The on-disk queue used while the dashboard is unreachable: appended at the end, read from an
    offset, emptied once everything in it has been delivered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._size = 0
        self._count = 0  # records in the file after the offset

    def __len__(self) -> int:
        return self._count

    def add(self, records: list[bytes]) -> None:
        if not records:
            return
        with self.path.open("ab") as handle:
            handle.writelines(records)
            handle.flush()
            os.fsync(handle.fileno())  # the point of the spool is to survive what kills the process
        self._size += sum(len(record) for record in records)
        self._count += len(records)

    def peek(self, max_bytes: int, max_items: int) -> list[bytes]:
        if not self._count:
            return []
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            return _take(_complete_lines(handle), max_bytes, max_items)

    def advance(self, records: list[bytes]) -> None:
        self._offset += sum(len(record) for record in records)
        self._count -= len(records)
        if self._count == 0:
            # Delivered to the end: start the file afresh instead of letting it grow for the whole run.
            self.path.write_bytes(b"")
            self._offset = self._size = 0


def _complete_lines(handle: Any) -> Iterable[bytes]:
    for line in handle:
        if not line.endswith(b"\n"):
            return
        yield line


def _take(records: Iterable[bytes], max_bytes: int, max_items: int) -> list[bytes]:
    """The next batch: up to max_bytes (but always one record) and max_items; a status record ends it,
    so nothing reported after a status can reach the dashboard before that status."""
    batch: list[bytes] = []
    size = 0
    for record in records:
        if batch and (size + len(record) > max_bytes or len(batch) >= max_items):
            break
        batch.append(record)
        size += len(record)
        if record.startswith(b"status\t"):
            break
    return batch


@dataclass(frozen=True)
class _Response:
    outcome: Literal["ok", "retry", "rejected", "too_large", "finished", "forbidden"]
    code: int | None = None
    detail: str = ""
    retry_after_s: float | None = None


class _LocalFiles:
    """The run's own record in its out directory, appended as reports arrive (a resumed run appends)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._lock = threading.Lock()
        self._handles: dict[str, Any] = {}

    def append(self, name: str, lines: Iterable[str]) -> None:
        with self._lock:
            handle = self._handles.get(name)
            if handle is None:
                handle = self._handles[name] = (self.out_dir / name).open("a", encoding="utf-8")
            handle.writelines(lines)
            handle.flush()  # readable by `tail -f` and by the run's tests while the run goes on

    def write(self, name: str, text: str) -> None:
        path = self.out_dir / name
        tmp = path.with_name(path.name + ".tmp")
        with self._lock:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)

    def close(self) -> None:
        with self._lock:
            for handle in self._handles.values():
                handle.close()
            self._handles.clear()


class Reporter:
    """Reports a run to its out directory and, given `report_url` and `run_token`, to the dashboard.

    Calls from the training loop never block on the network; `close()` (or leaving the `with`
    block) flushes everything and sends the final status last.
    """

    def __init__(
        self,
        out_dir: str | Path,
        *,
        report_url: str | None = None,
        run_token: str | None = None,
        heartbeat_s: float = 5.0,
        flush_interval_s: float = 1.0,
        max_batch_bytes: int = 1_000_000,
        max_batch_items: int = 2_000,
        request_timeout_s: float = 30.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        close_timeout_s: float = 30.0,
    ) -> None:
        if report_url and not run_token:
            raise ValueError("a report_url needs the run's token (--run-token)")
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.report_url = report_url or None
        self.heartbeat_s = heartbeat_s
        self.flush_interval_s = flush_interval_s
        self.max_batch_bytes = max_batch_bytes
        self.max_batch_items = max_batch_items
        self.request_timeout_s = request_timeout_s
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.close_timeout_s = close_timeout_s

        #: The dashboard answered 409: the run has finished there (cancelled, or marked lost), so the
        #: training loop should stop. Nothing more is sent.
        self.stopped_by_dashboard = False
        #: Why sending stopped (409, 401/403, other 4xx), or "" while it goes on.
        self.stop_reason = ""
        self.sent_batches = 0
        self.dropped_batches = 0
        self.retries = 0

        self._files = _LocalFiles(self.out_dir)
        self._lock = threading.Lock()
        self._seq = 0
        self._final_status: StatusIn | None = None
        self._phase: bytes | None = None  # the latest phase not yet delivered (sender's lock)
        self._closed = False
        self._delivered: bool | None = None
        self._stopped = threading.Event()

        self._token = run_token or ""
        self._inbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._inbox_bytes = 0
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._deadline = math.inf
        self._memory = _Buffer()
        self._spool = _Spool(self.out_dir / SPOOL_FILE)
        self._retry_after_s: float | None = None
        self._last_success = -math.inf
        self._thread: threading.Thread | None = None
        if self.report_url:
            self._set_aside_old_spool()
            # No proxies: the dashboard is reached directly, and a proxy meant for the internet
            # (the environment's http_proxy) would swallow reports for a cluster-local address.
            self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            self._thread = threading.Thread(target=self._send_loop, name="tirlab-reporter", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ the training loop's API

    @property
    def online(self) -> bool:
        return self.report_url is not None

    def log_metrics(self, step: int, values: Mapping[str, Any], *, time_s: float | None = None) -> None:
        """Record one step's metric values; NaN and infinities are reported as null (undefined)."""
        clean, rejected = metric_values(values)
        item = MetricStepIn(step=int(step), time=time.time() if time_s is None else float(time_s), values=clean)
        line = _json(item)
        # Locally the SFT's metrics go to a file of their own: their step axis is not the RL steps'.
        sft = {key: value for key, value in clean.items() if is_sft_metric(key)}
        if not sft:
            self._files.append(METRICS_FILE, [line + "\n"])
        elif len(sft) == len(clean):
            self._files.append(SFT_METRICS_FILE, [line + "\n"])
        else:  # both in one step: each file gets its part
            rl = {key: value for key, value in clean.items() if key not in sft}
            self._files.append(METRICS_FILE, [_json(item.model_copy(update={"values": rl})) + "\n"])
            self._files.append(SFT_METRICS_FILE, [_json(item.model_copy(update={"values": sft})) + "\n"])
        if rejected:
            self._diagnose(
                "warning",
                f"step {step}: metric values left out (key not {METRIC_KEY_PATTERN}, value not a number, or over "
                f"{MAX_METRIC_VALUES} values): " + ", ".join(sorted(rejected)),
            )
        self._enqueue("metrics", line)

    def log_trajectories(self, trajectories: Iterable[TrajectoryIn]) -> None:
        """Record sampled trajectories (whole GRPO groups of a step), each built as the contract's model,
        so valid for the dashboard from the moment it was made."""
        lines = [_json(item) for item in trajectories]
        self._files.append(TRAJECTORIES_FILE, [line + "\n" for line in lines])
        for line in lines:
            self._enqueue("trajectories", line)

    def log_checkpoint(self, step: int, path: str | Path) -> None:
        """Record a checkpoint saved after `step` training steps, so the dashboard lists it to evaluate."""
        line = _json(CheckpointIn(step=int(step), path=str(path)))
        self._files.append(CHECKPOINTS_FILE, [line + "\n"])
        self._enqueue("checkpoints", line)

    def log(self, message: str, level: str = "info") -> None:
        """A log line of the run, shown in the dashboard's log view."""
        if level not in LOG_LEVELS:
            level = "info"
        now = time.time()
        self._files.append(LOG_FILE, [_log_text(now, level, message)])
        getattr(logger, level)(message)
        self._enqueue("logs", _json(self._log_line(now, level, message)))

    def set_status(self, status: str, error: str = "", checkpoint: str | None = None) -> None:
        """Report the run's status, one of trainer.contract.TRAINER_STATUSES (ValueError otherwise). A
        final one (succeeded, failed, cancelled) is held and sent by close() after everything else;
        `running` (with a new checkpoint, say) is sent in turn."""
        item = StatusIn(
            status=status,
            error=error[:MAX_STATUS_ERROR],
            checkpoint=None if checkpoint is None else str(checkpoint)[:MAX_CHECKPOINT],
        )
        record = {**item.model_dump(mode="json", exclude_none=True), "time": time.time()}
        self._files.write(STATUS_FILE, _dumps(record) + "\n")
        if item.status in FINISHED_STATUSES:
            self._final_status = item
        else:
            self._enqueue("status", _json(item))

    def set_phase(self, name: str, done: int, total: int, eta_s: float | None = None, detail: str = "") -> None:
        """Say what the run is doing now: one of trainer.contract.PHASES, `done` of `total` units,
        the seconds it still needs if known (ValueError on anything the contract refuses). Cheap
        enough for every step: it rewrites phase.json and replaces the phase waiting to be sent."""
        eta = jsonable(eta_s) if eta_s is not None else None  # NaN or inf (no estimate yet): unknown
        item = PhaseIn(name=name, done=done, total=total, eta_s=eta, detail=detail[:MAX_PHASE_DETAIL])
        record = {**item.model_dump(mode="json"), "time": time.time()}
        self._files.write(PHASE_FILE, _dumps(record) + "\n")
        if self._thread is not None and not self._stopped.is_set() and not self._closed:
            line = _json(item).encode()
            with self._lock:
                self._phase = line

    def close(self, timeout_s: float | None = None) -> bool:
        """Send everything still queued, then the final status; wait at most `timeout_s`.

        Returns whether everything reached the dashboard (always True offline). What could not be
        sent in time stays in the spool file, named in log.txt.
        """
        if self._closed:
            return bool(self._delivered)
        self._closed = True
        timeout_s = self.close_timeout_s if timeout_s is None else timeout_s
        if self._final_status is not None:
            self._files.append(LOG_FILE, [_log_text(time.time(), "info", f"run {self._final_status.status}")])
        if self._thread is None:
            self._files.close()
            self._delivered = True
            return True
        if self._final_status is not None:
            self._enqueue("status", _json(self._final_status), force=True)
        self._deadline = time.monotonic() + timeout_s
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout_s + 1.0)
        unsent = len(self._spool) + len(self._memory) + self._inbox.qsize()
        self._delivered = not self._thread.is_alive() and unsent == 0 and not self._stopped.is_set()
        if unsent and not self._stopped.is_set():
            self._diagnose(
                "error",
                f"{unsent} reports not delivered to the dashboard within {timeout_s:g} s; see {self._spool.path}",
            )
        self._files.close()
        return self._delivered

    def __enter__(self) -> Reporter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None and self._final_status is None:
            status = RunStatus.CANCELLED if isinstance(exc, KeyboardInterrupt) else RunStatus.FAILED
            self.set_status(status, error=f"{type(exc).__name__}: {exc}")
        self.close()

    # ------------------------------------------------------------------ queueing (caller's thread)

    def _enqueue(self, kind: Kind, line: str, *, force: bool = False) -> None:
        if self._thread is None or self._stopped.is_set() or (self._closed and not force):
            return
        record = _record(kind, line)
        self._inbox.put(record)
        with self._lock:
            self._inbox_bytes += len(record)
            big = self._inbox_bytes >= self.max_batch_bytes // 2
        if big:
            self._wake.set()

    def _diagnose(self, level: str, message: str) -> None:
        """A problem of the reporting itself: always in log.txt, and sent on while the run is open."""
        getattr(logger, level)(message)
        self._files.append(LOG_FILE, [_log_text(time.time(), level, f"[report] {message}")])
        if not self._closed and not self._closing.is_set():
            self._enqueue("logs", _json(self._log_line(time.time(), level, f"[report] {message}")))

    def _log_line(self, now: float, level: str, message: str) -> LogLineIn:
        with self._lock:
            # Microseconds since the epoch, kept increasing: unique across a resumed process too,
            # where a counter restarting at 0 would collide with the lines already stored.
            self._seq = max(self._seq + 1, time.time_ns() // 1000)
            seq = self._seq
        return LogLineIn(seq=seq, time=now, level=level, message=message[:MAX_LOG_MESSAGE])

    def _set_aside_old_spool(self) -> None:
        # A spool left by an earlier process belongs to that process's run; replaying it into this
        # run (a resume is a new run with its own token) would be wrong, losing it silently worse.
        path = self._spool.path
        if path.exists() and path.stat().st_size:
            kept = path.with_name(f"report-spool.unsent-{int(time.time())}.jsonl")
            os.replace(path, kept)
            self._files.append(
                LOG_FILE, [_log_text(time.time(), "warning", f"[report] earlier unsent reports kept in {kept}")]
            )
        else:
            path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ sending (sender thread)

    def _send_loop(self) -> None:
        backoff = 0.0
        next_beat = time.monotonic()  # a heartbeat at once: the run shows as alive while the model loads
        while not self._stopped.is_set():
            self._take_inbox()
            outcome = self._send_pending()
            if outcome == "stopped":
                break
            if outcome == "retry":
                # Unreachable: everything unsent goes to disk, in order, until the dashboard answers.
                self._spool.add(self._memory.drain())
                self.retries += 1
                backoff = min(self.backoff_max_s, max(self.backoff_initial_s, backoff * 2))
                delay = backoff * random.uniform(0.8, 1.0)  # jitter: many trainers, one dashboard
                if self._retry_after_s is not None:
                    delay = max(delay, min(self._retry_after_s, self.backoff_max_s))
                if self._closing.is_set() and time.monotonic() + delay >= self._deadline:
                    break
                time.sleep(delay)  # not woken by new reports: they would only meet the outage again
                continue
            backoff = 0.0
            if self._closing.is_set() and self._inbox.empty():
                break
            next_beat = max(next_beat, self._last_success + self.heartbeat_s)
            if time.monotonic() >= next_beat:
                response = self._post(b'{"heartbeat":true}')
                if response.outcome in ("finished", "forbidden"):
                    self._stop(response)
                    break
                # A failed heartbeat is not retried: the next batch meets the outage and spools.
                next_beat = time.monotonic() + self.heartbeat_s
            wait = min(self.flush_interval_s, next_beat - time.monotonic())
            if self._wake.wait(max(0.0, wait)):
                self._wake.clear()

    def _take_inbox(self) -> None:
        records: list[bytes] = []
        while True:
            try:
                records.append(self._inbox.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            self._inbox_bytes = 0
        if len(self._spool):
            self._spool.add(records)  # behind what is already waiting on disk, to keep the order
        else:
            self._memory.add(records)

    def _send_pending(self) -> Literal["ok", "retry", "stopped"]:
        self._retry_after_s = None
        for source in (self._spool, self._memory):
            while records := source.peek(self.max_batch_bytes, self.max_batch_items):
                phase = self._phase
                payload = build_batch(records, phase)
                response = self._post(payload)
                if response.outcome == "ok":
                    source.advance(records)
                    self._phase_delivered(phase)
                    self.sent_batches += 1
                elif response.outcome == "retry":
                    self._retry_after_s = response.retry_after_s
                    return "retry"
                elif response.outcome == "rejected":
                    self.dropped_batches += 1
                    source.advance(records)
                    self._diagnose(
                        "error",
                        f"dashboard refused a batch of {len(records)} reports (400), dropped: {response.detail}",
                    )
                elif response.outcome == "too_large" and len(records) > 1:
                    # The dashboard's limit is lower than ours: halve the batches from now on.
                    self.max_batch_bytes = max(1024, len(payload) // 2)
                    self.max_batch_items = max(1, len(records) // 2)
                elif response.outcome == "too_large":
                    self.dropped_batches += 1
                    source.advance(records)
                    self._diagnose(
                        "error", f"a single report of {len(payload)} bytes is over the dashboard's limit; dropped"
                    )
                else:
                    self._stop(response)
                    return "stopped"
        return self._send_phase()

    def _send_phase(self) -> Literal["ok", "retry", "stopped"]:
        """The latest phase on its own, when no batch has carried it."""
        phase = self._phase
        if phase is None:
            return "ok"
        response = self._post(build_batch([], phase))
        if response.outcome == "retry":
            self._retry_after_s = response.retry_after_s
            return "retry"
        if response.outcome in ("finished", "forbidden"):
            self._stop(response)
            return "stopped"
        if response.outcome != "ok":  # built from the contract's own model: cannot happen, must not loop
            self._diagnose("error", f"dashboard refused a phase ({response.code}), dropped: {response.detail}")
        else:
            self.sent_batches += 1
        self._phase_delivered(phase)
        return "ok"

    def _phase_delivered(self, phase: bytes | None) -> None:
        with self._lock:
            if self._phase is phase:  # unless a newer one came meanwhile
                self._phase = None

    def _stop(self, response: _Response) -> None:
        if response.outcome == "finished":
            self.stopped_by_dashboard = True
            self.stop_reason = f"the dashboard says the run has finished (409): {response.detail}"
        else:
            self.stop_reason = f"the dashboard refused this trainer ({response.code}): {response.detail}"
        self._stopped.set()
        self._diagnose("warning" if self.stopped_by_dashboard else "error", f"reporting stopped: {self.stop_reason}")

    def _post(self, payload: bytes) -> _Response:
        remaining = self._deadline - time.monotonic()
        timeout = max(0.5, min(self.request_timeout_s, remaining))
        request = urllib.request.Request(
            self.report_url or "",
            data=payload,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._token}"},
        )
        try:
            with self._opener.open(request, timeout=timeout) as reply:
                body = reply.read()
            self._last_success = time.monotonic()  # every batch counts as a heartbeat
            if _says_stop(body) and not self.stopped_by_dashboard:
                # Cancelled in the dashboard, which still keeps what we send for a while: the loop
                # stops after this step and the final metrics and checkpoint are flushed as usual.
                self.stopped_by_dashboard = True
                self.stop_reason = "the run was cancelled in the dashboard"
                self._diagnose("warning", "the dashboard asks this trainer to stop (run cancelled)")
            return _Response("ok", 200)
        except urllib.error.HTTPError as exc:
            return _classify(exc.code, _read_detail(exc), exc.headers.get("Retry-After") if exc.headers else None)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            # Connection refused or reset, DNS, timeouts: the dashboard is (for now) unreachable.
            return _Response("retry", None, str(exc))


def _says_stop(body: bytes) -> bool:
    try:
        reply = json.loads(body or b"{}")
    except ValueError:
        return False
    return isinstance(reply, dict) and reply.get("stop") is True


def _classify(code: int, detail: str, retry_after: str | None) -> _Response:
    if code == 429 or code >= 500:
        try:
            delay = float(retry_after) if retry_after else None
        except ValueError:
            delay = None
        return _Response("retry", code, detail, delay)
    if code == 400:
        return _Response("rejected", code, detail)
    if code == 413:
        return _Response("too_large", code, detail)
    if code == 409:
        return _Response("finished", code, detail)
    return _Response("forbidden", code, detail)  # 401, 403, and a wrong URL (404, 405): no retry can help


def _read_detail(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read().decode("utf-8", "replace")[:2_000]
    except (OSError, http.client.HTTPException):
        return ""


def _log_text(when: float, level: str, message: str) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    return f"{stamp} {level.upper():7} {message}\n"
