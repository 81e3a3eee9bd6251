"""Metrics through the MLflow API: a log-batch's metrics as tirlab metric steps, their history, the latest.

tirlab keeps one value per (run, key, step), as its charts draw them: metrics logged at a new step
append to the series; a value logged again at a step it already has replaces it (MLflow would keep
both, told apart by timestamp). A step's time is the latest timestamp logged at it. NaN is kept as
"undefined" (null) and comes back as NaN; ±Infinity is kept as ±1.7976931348623157e308, as MLflow's
own SQL store keeps it. Steps are 0 to 2**31 - 1.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from trainer.contract import INT_MAX, is_metric_key
from webapp.runs.metric_store import MetricPoint, record_metric_steps, run_metric_history, run_metric_latest
from webapp.runs.models import Run
from webapp.tracking.entities import metric_json
from webapp.tracking.errors import invalid
from webapp.tracking.fields import to_double, to_int64

HISTORY_MAX_RESULTS = 25_000  # what the client asks for (mlflow.store.tracking.GET_METRIC_HISTORY_MAX_RESULTS)


def stored_value(value: float) -> float | None:
    if math.isnan(value):
        return None
    if math.isinf(value):
        return sys.float_info.max if value > 0 else -sys.float_info.max
    return value


def parse_metric(item: Mapping[str, Any], where: str) -> tuple[str, float | None, int, int]:
    """(key, stored value, timestamp ms, step) of one metric of a request, or INVALID_PARAMETER_VALUE."""
    key = item.get("key")
    if not isinstance(key, str) or not is_metric_key(key):
        raise invalid(
            f"Invalid metric name {key!r} ({where}): names have 1 to 250 letters, digits, spaces and _ - . : / @, "
            "and are not paths that normalise to something else (no '//', no leading '/', no '..')."
        )
    if item.get("value") is None:
        raise invalid(f"Missing value for metric '{key}' ({where}).")
    value = to_double(item["value"], f"{where}.value")
    timestamp = to_int64(item.get("timestamp", 0), f"{where}.timestamp")
    step = to_int64(item.get("step", 0), f"{where}.step")
    if timestamp < 0:
        raise invalid(f"Metric '{key}' ({where}): timestamp {timestamp} must be a nonnegative number of milliseconds.")
    if not 0 <= step <= INT_MAX:
        raise invalid(f"Metric '{key}' ({where}): step {step} is outside 0..{INT_MAX}, the steps tirlab stores.")
    return key, stored_value(value), timestamp, step


def write_metrics(run: Run, metrics: list[tuple[str, float | None, int, int]]) -> list[dict[str, Any]]:
    """Write parsed metrics as metric steps (later ones win at a key and step), with the run's
    summary fields; returns the rows written, as the ingest path returns them."""
    by_step: dict[int, dict[str, Any]] = {}
    for key, value, timestamp, step in metrics:
        entry = by_step.setdefault(step, {"step": step, "time": 0.0, "values": {}})
        entry["time"] = max(entry["time"], timestamp / 1000)
        entry["values"][key] = value
    return record_metric_steps(run, [by_step[step] for step in sorted(by_step)])


def _metric_json(point: MetricPoint) -> dict[str, Any]:
    return metric_json(point.key, point.value, int(point.time.timestamp() * 1000), point.step)


def metric_history(run: Run, key: str, *, from_step: int, max_results: int) -> tuple[list[dict[str, Any]], int | None]:
    """One page of a key's history from `from_step` on, and the step the next page starts at (None at the end)."""
    points = run_metric_history(run=run, key=key, from_step=from_step, limit=max_results + 1)
    next_step = points[max_results].step if len(points) > max_results else None
    return [_metric_json(point) for point in points[:max_results]], next_step


def latest_metrics(run: Run, keys: list[str] | None = None) -> list[dict[str, Any]]:
    """The value of each key (all the run's keys by default) at the last step it was logged at."""
    keys = list(run.metric_keys) if keys is None else keys
    return [_metric_json(point) for point in run_metric_latest(run=run, keys=keys)]
