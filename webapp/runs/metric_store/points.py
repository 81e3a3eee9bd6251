"""A run's metric points one by one, as stored: a key's history, each key's latest value, the keys
logged once, whole rows for export, the steps of many runs that logged some keys (the results table),
and where a run's steps begin."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Min
from django.db.models.fields.json import KeyTransform

from webapp.runs.metric_store.layout import WIDTHS
from webapp.runs.models import MetricStep, Run, RunStatus


@dataclass(frozen=True)
class MetricPoint:
    """One value of a key at a step; None where the trainer logged no number (NaN)."""

    key: str
    step: int
    time: datetime
    value: float | None


_HISTORY_SQL = """
SELECT step, time, CASE WHEN jsonb_typeof("values" -> %(key)s) = 'number' THEN ("values" -> %(key)s)::float8 END
FROM runs_metricstep
WHERE run_id = %(run)s AND "values" ? %(key)s AND step >= %(from_step)s
ORDER BY step LIMIT %(limit)s
"""


def run_metric_history(*, run: Run, key: str, from_step: int, limit: int) -> list[MetricPoint]:
    """The first `limit` points of a key from `from_step` on, in step order."""
    params = {"key": key, "run": run.pk, "from_step": from_step, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(_HISTORY_SQL, params)
        return [MetricPoint(key, step, time, value) for step, time, value in cursor.fetchall()]


_LATEST_SQL = """
SELECT k.key, m.step, m.time,
    CASE WHEN jsonb_typeof(m."values" -> k.key) = 'number' THEN (m."values" -> k.key)::float8 END
FROM unnest(%(keys)s::text[]) AS k(key)
CROSS JOIN LATERAL (
    SELECT step, time, "values" FROM runs_metricstep
    WHERE run_id = %(run)s AND "values" ? k.key ORDER BY step DESC LIMIT 1
) AS m
"""


def run_metric_latest(*, run: Run, keys: list[str]) -> list[MetricPoint]:
    """Each key's point at the last step it was logged at, in key order (keys never logged: none)."""
    if not keys:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_LATEST_SQL, {"keys": keys, "run": run.pk})
        rows = sorted(cursor.fetchall())  # in Python: the database's collation may order keys otherwise
    return [MetricPoint(key, step, time, value) for key, step, time, value in rows]


# A rolled-up key with one number has one 32-step bucket, of count 1: its first two buckets (an
# index probe) tell. Its rollup holds the point.
_SINGLES_SQL = f"""
SELECT s.key, min(r.last_step), min(r.last_value), min(r.time_us)
FROM runs_metricseries AS s
CROSS JOIN LATERAL (
    SELECT n, last_step, last_value, time_us FROM runs_metricrollup
    WHERE series_id = s.id AND width = {WIDTHS[0]} ORDER BY bucket LIMIT 2
) AS r
WHERE s.run_id = %s
GROUP BY s.key
HAVING count(*) = 1 AND sum(r.n) = 1
"""


def run_metric_singles(*, run: Run) -> list[MetricPoint]:
    """The keys logged once (a trainer's final train_runtime, total_flos, …) with their one point,
    in key order: those the store rolls up (one index probe a key); a key written around the store
    is not looked for, as finding it would take a pass over the run's steps."""
    with connection.cursor() as cursor:
        cursor.execute(_SINGLES_SQL, [run.pk])
        rows = sorted(cursor.fetchall())
    return [MetricPoint(key, step, datetime.fromtimestamp(us / 1e6, tz=UTC), value) for key, step, value, us in rows]


def run_metric_rows(*, run: Run, keys: list[str]) -> Iterator[tuple[int, str, list[Any]]]:
    """Full-fidelity (step, ISO time, values of keys) rows in step order, streamed from the database."""
    queryset = MetricStep.objects.filter(run=run).order_by("step").values_list("step", "time", "values")
    for step, time, values in queryset.iterator(chunk_size=5000):
        yield step, time.isoformat(), [values.get(key) for key in keys]


def runs_metric_steps(*, runs: list[Run], keys: list[str]) -> dict[int, list[tuple[int, dict[str, float]]]]:
    """Run id -> the run's steps that logged any of `keys`, in step order, each with its numbers of those keys
    (a NaN, stored as null, left out): one query for all the runs, reading only those keys of each row."""
    if not runs or not keys:
        return {}
    names = {f"k{index}": key for index, key in enumerate(keys)}
    rows = (
        MetricStep.objects.filter(run_id__in=[run.pk for run in runs], values__has_any_keys=keys)
        .annotate(**{name: KeyTransform(key, "values") for name, key in names.items()})
        .order_by("run_id", "step")
        .values_list("run_id", "step", *names)
    )
    steps: dict[int, list[tuple[int, dict[str, float]]]] = {}
    for run_id, step, *values in rows:
        numbers = {
            key: float(value)
            for key, value in zip(names.values(), values, strict=True)
            if isinstance(value, int | float) and not isinstance(value, bool)
        }
        steps.setdefault(run_id, []).append((step, numbers))
    return steps


def run_first_steps(runs: list[Run]) -> dict[int, int]:
    """Run id -> first step it reported, for the running resumed runs among `runs` (their steps
    continue the parent's, so their pace counts only the steps they trained themselves)."""
    resumed = [run.pk for run in runs if run.parent_relation == "resume" and run.status == RunStatus.RUNNING]
    if not resumed:
        return {}
    rows = MetricStep.objects.filter(run_id__in=resumed).values("run_id").annotate(first=Min("step"))
    return {row["run_id"]: row["first"] for row in rows}


def run_first_step_time(run: Run) -> float | None:
    """When the run's first step was recorded (epoch seconds): 0 on the time axis of its charts."""
    first = MetricStep.objects.filter(run=run).order_by("step").values_list("time", flat=True).first()
    return first.timestamp() if first else None
