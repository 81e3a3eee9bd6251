"""Reads of runs: metric series (downsampled on the server), trajectories, logs."""

from collections.abc import Iterator
from typing import Any, Literal

from django.db import connection, transaction
from django.db.models import QuerySet

from webapp.runs.models import MetricStep, Run, Trajectory

XAxis = Literal["step", "time"]

# One bucket per max_points slice of the x range; each keeps min, max and the last value
# (the value at the bucket's largest x), so spikes survive and the line ends where it should.
# A series no longer than max_points is returned point by point, exact.
_SERIES_SQL = """
WITH s AS (
    SELECT {x} AS x, step, ("values"->>%(key)s)::double precision AS v
    FROM runs_metricstep
    WHERE run_id = %(run)s AND jsonb_typeof("values"->%(key)s) = 'number'
),
bounds AS (SELECT min(x) AS lo, max(x) AS hi, count(*) AS n FROM s)
SELECT
    CASE WHEN bounds.n <= %(max_points)s THEN s.step
         ELSE least(floor((s.x - bounds.lo) * %(max_points)s / (bounds.hi - bounds.lo + %(eps)s)), %(max_points)s - 1)
    END AS bucket,
    max(s.x) AS x,
    max(s.step) AS step,
    min(s.v) AS min,
    max(s.v) AS max,
    -- the value at the largest (x, step): a max over arrays, without sorting the series
    (max(ARRAY[s.x, s.step, s.v]))[3] AS last,
    count(*) AS count
FROM s, bounds
GROUP BY bucket
ORDER BY bucket
"""

# Relative time: seconds since the run's first step (found through the (run, step) index);
# date_part gives float8, where extract would compute in numeric.
_X_EXPR = {
    "step": "step::double precision",
    "time": (
        "date_part('epoch', time - (SELECT time FROM runs_metricstep WHERE run_id = %(run)s ORDER BY step LIMIT 1))"
    ),
}


def run_metric_series(*, run: Run, keys: list[str], max_points: int, x: XAxis = "step") -> dict[str, dict[str, list]]:
    """Each key's series as parallel lists x, step, min, max, last, count (at most max_points entries)."""
    sql = _SERIES_SQL.format(x=_X_EXPR[x])
    # For steps the buckets are integer ranges (width 1 at least); for time any positive width.
    eps = 1.0 if x == "step" else 1e-9
    series: dict[str, dict[str, list]] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        # One aggregate over up to millions of rows: JIT compilation costs more than it saves
        # (measured 1.8 s of it), and the grouping should not spill to disk.
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        for key in keys:
            cursor.execute(sql, {"run": run.pk, "key": key, "max_points": max_points, "eps": eps})
            rows = cursor.fetchall()
            series[key] = {
                "x": [row[1] for row in rows],
                "step": [row[2] for row in rows],
                "min": [row[3] for row in rows],
                "max": [row[4] for row in rows],
                "last": [row[5] for row in rows],
                "count": [row[6] for row in rows],
            }
    return series


def run_metric_rows(*, run: Run, keys: list[str]) -> Iterator[tuple[int, str, list[Any]]]:
    """Full-fidelity (step, ISO time, values of keys) rows in step order, streamed from the database."""
    queryset = MetricStep.objects.filter(run=run).order_by("step").values_list("step", "time", "values")
    for step, time, values in queryset.iterator(chunk_size=5000):
        yield step, time.isoformat(), [values.get(key) for key in keys]


def run_trajectories(
    *,
    run: Run,
    step: int | None = None,
    correct: bool | None = None,
    has_tool_error: bool | None = None,
    used_tool: bool | None = None,
    truncated: bool | None = None,
    q: str | None = None,
) -> QuerySet[Trajectory]:
    queryset = Trajectory.objects.filter(run=run)
    if step is not None:
        queryset = queryset.filter(step=step)
    if correct is not None:
        queryset = queryset.filter(correct=correct)
    if has_tool_error is not None:
        queryset = queryset.filter(has_tool_error=has_tool_error)
    if used_tool is not None:
        queryset = queryset.filter(tool_call_count__gt=0) if used_tool else queryset.filter(tool_call_count=0)
    if truncated is not None:
        queryset = queryset.filter(truncated=truncated)
    if q:
        queryset = queryset.filter(search_text__icontains=q)
    return queryset.defer("search_text")
