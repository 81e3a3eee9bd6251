"""Writing a trainer's ingest batch: validated as a whole, written in one transaction, idempotent."""

import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from trainer.contract import IngestBatch, MetricStepIn, SweOutcomeIn, TrajectoryIn, error_path
from webapp.core.tokens import hash_secret
from webapp.runs.events import heartbeat_event, log_line_payload, publish_run_events
from webapp.runs.metric_store import update_summary, write_metric_steps
from webapp.runs.models import Checkpoint, Run, RunLogLine, RunStatus, Trajectory
from webapp.runs.transitions import RUN_TRANSITIONS, run_transition


class IngestRejected(Exception):
    """A batch that is refused as a whole; `errors` maps field paths to messages."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__(json.dumps(errors))


class IngestForbidden(Exception):
    def __init__(self, message: str, *, status_code: int = 403):
        self.message, self.status_code = message, status_code
        super().__init__(message)


def run_token_matches(run: Run, token: str) -> bool:
    return bool(run.token_hash) and hmac.compare_digest(run.token_hash, hash_secret(token))


def parse_batch(payload: Any) -> IngestBatch:
    try:
        return IngestBatch.model_validate(payload)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors(include_url=False):
            path = ".".join(error_path(error)) or "non_field_errors"
            errors.setdefault(path, []).append(error["msg"])
        raise IngestRejected(errors) from None


def _time(value: float | None, default: datetime) -> datetime:
    return default if value is None else datetime.fromtimestamp(value, tz=UTC)


def _status_plan(run: Run, batch: IngestBatch) -> list[str]:
    """The transitions this batch makes; refused before anything is written if one is illegal."""
    plan, current = [], run.status
    # A report means a trainer is running: one tirlab launched (starting) or, for a run created
    # with launch=false, one its user started, which leaves the run queued until it reports.
    if current == RunStatus.QUEUED and not run.managed:
        plan.append(RunStatus.STARTING)
        current = RunStatus.STARTING
    if current == RunStatus.STARTING:
        plan.append(RunStatus.RUNNING)
        current = RunStatus.RUNNING
    if batch.status is not None and batch.status.status != current:
        if batch.status.status not in RUN_TRANSITIONS[current]:
            raise IngestRejected({"status.status": [f"a {current} run cannot become {batch.status.status}"]})
        plan.append(batch.status.status)
    return plan


def _write_metrics(run: Run, steps: list[MetricStepIn], now: datetime) -> list[dict[str, Any]]:
    return write_metric_steps(
        run, [{"step": item.step, "time": _time(item.time, now).timestamp(), "values": item.values} for item in steps]
    )


def _prompt_text(prompt: str | list) -> str:
    return prompt if isinstance(prompt, str) else "\n".join(message.content for message in prompt)


def _trajectory(run: Run, item: TrajectoryIn) -> Trajectory:
    texts = [_prompt_text(item.prompt)]
    for turn in item.turns:
        texts.extend(text for text in (turn.call, turn.text) if text)
    texts.append(item.final_answer)
    if isinstance(item.outcome, SweOutcomeIn):
        # A patch and its failing tests are what one searches a software-engineering run's rollouts for.
        texts.append(item.outcome.patch)
        texts.extend(t.name for t in item.outcome.tests if not t.passed)
    elif item.outcome is not None:
        # A search trajectory's queries are in its turns already; the titles of what they found are not.
        texts.extend(passage.title for search in item.outcome.searches for passage in search.passages)
    return Trajectory(
        run=run,
        step=item.step,
        prompt_index=item.prompt_index,
        sample_index=item.sample_index,
        prompt=item.prompt if isinstance(item.prompt, str) else [m.model_dump() for m in item.prompt],
        turns=[turn.model_dump(exclude_none=True) for turn in item.turns],
        final_answer=item.final_answer,
        ground_truth=item.ground_truth,
        reward=item.reward,
        reward_components=item.reward_components,
        correct=item.correct,
        tool_call_count=item.tool_call_count,
        has_tool_error=any(t.kind == "tool" and t.status not in (None, "ok") for t in item.turns),
        truncated=item.truncated,
        prompt_tokens=item.prompt_tokens,
        response_tokens=item.response_tokens,
        outcome=item.outcome.model_dump() if item.outcome is not None else None,
        data_source=item.data_source or "",
        search_text="\n".join(texts),
    )


_TRAJECTORY_UPDATE_FIELDS = [
    "prompt",
    "turns",
    "final_answer",
    "ground_truth",
    "reward",
    "reward_components",
    "correct",
    "tool_call_count",
    "has_tool_error",
    "truncated",
    "prompt_tokens",
    "response_tokens",
    "outcome",
    "data_source",
    "search_text",
]


def write_trajectories(run: Run, items: list[TrajectoryIn]) -> list[dict[str, Any]]:
    """Upsert trajectories by (run, step, prompt, sample), later ones winning; their summaries, as the
    run's websocket pushes them. The ingest and the MLflow API's samples (webapp.tracking.samples) write here."""
    unique = {(t.step, t.prompt_index, t.sample_index): t for t in items}
    objs = [_trajectory(run, item) for item in unique.values()]
    Trajectory.objects.bulk_create(
        objs,
        update_conflicts=True,
        unique_fields=["run", "step", "prompt_index", "sample_index"],
        update_fields=_TRAJECTORY_UPDATE_FIELDS,
        batch_size=500,
    )
    return [
        {
            "step": t.step,
            "prompt_index": t.prompt_index,
            "sample_index": t.sample_index,
            "reward": t.reward,
            "correct": t.correct,
            "tool_call_count": t.tool_call_count,
            "has_tool_error": t.has_tool_error,
            "truncated": t.truncated,
        }
        for t in objs
    ]


def _write_logs(run: Run, batch: IngestBatch, now: datetime) -> list[dict[str, Any]]:
    lines = {line.seq: line for line in batch.logs}
    seen = set(RunLogLine.objects.filter(run=run, seq__in=list(lines)).values_list("seq", flat=True))
    new = [
        RunLogLine(
            run=run, seq=seq, time=_time(line.time, now), level=line.level, source="trainer", message=line.message
        )
        for seq, line in sorted(lines.items())
        if seq not in seen
    ]
    RunLogLine.objects.bulk_create(new, ignore_conflicts=True)
    return [log_line_payload(line) for line in new]


def _write_checkpoints(run: Run, batch: IngestBatch) -> int:
    """Record the checkpoints saved, by step (a checkpoint saved again at a step replaces its path)."""
    latest = {item.step: item.path for item in batch.checkpoints}
    Checkpoint.objects.bulk_create(
        [Checkpoint(run=run, step=step, path=path) for step, path in latest.items()],
        update_conflicts=True,
        unique_fields=["run", "step"],
        update_fields=["path"],
    )
    return len(latest)


def _takes_final_flush(run: Run, batch: IngestBatch, now: datetime) -> bool:
    """Whether a finished run still takes this batch (for INGEST_CANCEL_GRACE_S after it finished): a
    cancelled trainer's last words (final metrics and checkpoint, sent after the stop request), or a
    trainer's final report sent again because its answer never came back (a timeout, a restarted web
    server) although it was written — same status, same rows, so taking it again changes nothing."""
    if run.finished_at is None or (now - run.finished_at).total_seconds() > settings.INGEST_CANCEL_GRACE_S:
        return False
    return run.status == RunStatus.CANCELLED or (batch.status is not None and batch.status.status == run.status)


@dataclass(frozen=True)
class Ingested:
    """What a batch wrote, and whether its trainer should stop (the run was cancelled in the dashboard)."""

    written: dict[str, int]
    stop: bool


def ingest_batch(*, run_id: int, token: str, payload: Any) -> Ingested:
    """Validate and write one batch for a run; raises IngestForbidden / IngestRejected, writing nothing.

    A run that finished less than INGEST_CANCEL_GRACE_S ago still takes its trainer's final flush (no
    status change; see _takes_final_flush); `stop` tells a cancelled run's trainer to stop.
    """
    batch = parse_batch(payload)
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or not run_token_matches(run, token):
            raise IngestForbidden("this token is not valid for this run")
        final_flush = run.is_finished and _takes_final_flush(run, batch, now)
        if run.is_finished and not final_flush:
            raise IngestForbidden(f"run {run.pk} is {run.status}; it accepts no more reports", status_code=409)
        plan = [] if final_flush else _status_plan(run, batch)

        fields = ["heartbeat_at"]
        run.heartbeat_at = now
        metric_rows = _write_metrics(run, batch.metrics, now) if batch.metrics else []
        if metric_rows:
            fields += update_summary(run, metric_rows)
        trajectories = write_trajectories(run, batch.trajectories) if batch.trajectories else []
        logs = _write_logs(run, batch, now) if batch.logs else []
        checkpoints = _write_checkpoints(run, batch) if batch.checkpoints else 0
        if batch.status is not None and batch.status.checkpoint:
            run.checkpoint_path = batch.status.checkpoint
            fields.append("checkpoint_path")
        if batch.phase is not None:
            # The latest wins; stamped with when it came, so a reader can tell how old its ETA is.
            run.phase = {**batch.phase.model_dump(mode="json"), "at": now.isoformat()}
            fields.append("phase")
        run.save(update_fields=fields)

        # Every batch is a heartbeat: an open run page shows when the trainer was last heard from.
        events: list[tuple[str, dict[str, Any]]] = [heartbeat_event(run)]
        if metric_rows:
            events.append(("metrics", {"steps": metric_rows}))
        if trajectories:
            events.append(("trajectories", {"trajectories": trajectories}))
        if logs:
            events.append(("logs", {"lines": logs}))
        if batch.phase is not None:
            events.append(("phase", run.phase))
        publish_run_events(run, events, list_event="run.updated" if metric_rows else None)
        for status in plan:
            error = batch.status.error if batch.status is not None and status == batch.status.status else ""
            run_transition(run=run, status=status, error=error)
    written = {
        "metrics": len(metric_rows),
        "trajectories": len(trajectories),
        "logs": len(logs),
        "checkpoints": checkpoints,
    }
    return Ingested(written=written, stop=run.status == RunStatus.CANCELLED)
