"""Reads of runs: the runs list, metric series (downsampled on the server), trajectories, logs."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db import DataError, connection, transaction
from django.db.models import F, Func, Min, Q, QuerySet

from webapp.runs.models import Experiment, MetricStep, Run, RunStatus, Trajectory

# The runs list's sort keys, the same for the runs page (?sort=KEY) and the API (?ordering=KEY):
# KEY sorts ascending, -KEY descending; runs without the value (no step yet) sort last.
RUN_SORTS: dict[str, F] = {
    "created": F("created_at"),
    "name": F("name"),
    "status": F("status"),
    "experiment": F("experiment__name"),
    "step": F("last_step"),
    "finished": F("finished_at"),
    "accuracy": F("summary__accuracy"),
    "tool_call_ratio": F("summary__tool_call_ratio"),
}
DEFAULT_RUN_SORT = "-created"


@dataclass(frozen=True)
class RunFilters:
    """Which runs the runs list shows, and in which order (each door reads its own parameters into this)."""

    q: str = ""
    statuses: tuple[str, ...] = ()
    experiment: int | None = None
    preset: str = ""
    parent: int | None = None
    tags: tuple[str, ...] = ()
    archived: bool = False
    created_after: datetime | None = None
    created_before: datetime | None = None
    sort: str = DEFAULT_RUN_SORT


def run_list(*, user, filters: RunFilters) -> QuerySet[Run]:
    """The runs `user` may see that match `filters`, sorted: the runs page and GET /api/v1/runs/ both list this.

    - Archived runs are hidden unless `archived` is set (the page's "Show archived" box, the API's
      archived=true), which lists them along with the others: archiving tucks a run away, it does
      not make it the only thing you see.
    - `statuses`: any of them; `tags`: every one of them; `experiment`, `preset`, `parent`: equal.
    - `created_after` is inclusive, `created_before` exclusive.
    - `q`: a case-insensitive part of the name, description or experiment name, the exact preset
      or tag, or a run id (``12`` or ``#12``).
    - `sort`: a RUN_SORTS key, '-' first for descending; the newest id first among equals.
    """
    runs = Run.objects.visible_to(user).select_related("experiment", "owner")
    if not filters.archived:
        runs = runs.filter(archived=False)
    if filters.statuses:
        runs = runs.filter(status__in=filters.statuses)
    if filters.experiment is not None:
        runs = runs.filter(experiment_id=filters.experiment)
    if filters.preset:
        runs = runs.filter(preset=filters.preset)
    if filters.parent is not None:
        runs = runs.filter(parent_id=filters.parent)
    if filters.tags:
        runs = runs.filter(tags__contains=list(filters.tags))
    if filters.created_after is not None:
        runs = runs.filter(created_at__gte=filters.created_after)
    if filters.created_before is not None:
        runs = runs.filter(created_at__lt=filters.created_before)
    if filters.q:
        q = filters.q
        match = Q(name__icontains=q) | Q(description__icontains=q) | Q(experiment__name__icontains=q)
        match |= Q(preset__iexact=q) | Q(tags__contains=[q])
        if q.lstrip("#").isdigit():
            match |= Q(pk=int(q.lstrip("#")))
        runs = runs.filter(match)
    expression = RUN_SORTS[filters.sort.removeprefix("-")]
    order = expression.desc(nulls_last=True) if filters.sort.startswith("-") else expression.asc(nulls_last=True)
    return runs.order_by(order, "-pk")


def run_filter_choices(*, user) -> dict[str, Any]:
    """The experiments and tags the runs list's filter menus offer: those of the user's runs."""
    tags = (
        Run.objects.visible_to(user)
        .annotate(tag=Func(F("tags"), function="unnest"))
        .values_list("tag", flat=True)
        .distinct()
        .order_by("tag")
    )
    return {
        "experiments": Experiment.objects.visible_to(user).order_by("name").only("pk", "name"),
        "tags": list(tags),
        "statuses": RunStatus.values,
    }


def run_first_steps(runs: list[Run]) -> dict[int, int]:
    """Run id -> first step it reported, for the running resumed runs among `runs` (their steps
    continue the parent's, so their pace counts only the steps they trained themselves)."""
    resumed = [run.pk for run in runs if run.parent_relation == "resume" and run.status == RunStatus.RUNNING]
    if not resumed:
        return {}
    rows = MetricStep.objects.filter(run_id__in=resumed).values("run_id").annotate(first=Min("step"))
    return {row["run_id"]: row["first"] for row in rows}

XAxis = Literal["step", "time"]

# A chart asks for many keys of one run at once (the run page: all ~40). Each key's series is
# bucketed over its own x range into max_points buckets; each bucket keeps min, max and the last
# value (at the bucket's largest x, then step), so spikes survive and the line ends where it
# should. A series no longer than max_points is returned point by point, exact.
#
# Reading a key costs a pass over the run's rows (~1.6 kB of jsonb each), so keys are read
# together: first each key's x bounds and length from the (run, step) index (cheap), then one
# pass per group of keys that share their bounds (usually one), parsing each row's values once
# with jsonb_to_record. Values are numbers or null (the ingest schema allows nothing else).
_BOUNDS_SQL = """
SELECT
    ({first_x}) AS lo,
    ({last_x}) AS hi,
    (SELECT count(*) FROM (
        SELECT 1 FROM runs_metricstep
        WHERE run_id = %(run)s AND jsonb_typeof("values"->%(key)s) = 'number'
        LIMIT %(max_points)s + 1
    ) AS head) AS n
"""
# Ordered by the table's step (not the output column, which the step axis also names "step"),
# so that the (run, step) index finds the first and last rows.
_EDGE_SQL = """
SELECT {x} FROM runs_metricstep AS edge
WHERE run_id = %(run)s AND jsonb_typeof("values"->%(key)s) = 'number' ORDER BY edge.step {order} LIMIT 1
"""

_BUCKET_SQL = (
    "greatest(least(floor((x - %(lo)s) * %(max_points)s / (%(hi)s - %(lo)s + %(eps)s)), %(max_points)s - 1), 0)"
)
_GROUP_SQL = """
SELECT {bucket} AS bucket, {aggregates}
FROM (
    SELECT {x} AS x, step, {columns}
    FROM runs_metricstep m, jsonb_to_record(m."values") AS r({record})
    WHERE m.run_id = %(run)s
) AS s
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
# Names longer than this are truncated as SQL identifiers, so jsonb_to_record cannot match them.
_MAX_IDENTIFIER_BYTES = 63


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _key_bounds(cursor, *, run: Run, key: str, max_points: int, x: XAxis) -> tuple[float, float, int] | None:
    """(lo, hi, n) of a key's x, n counted up to max_points + 1; None when the run has no value for it.

    lo and hi are the x of the key's first and last step; for time that is its range as long as
    the trainer's clock moves forward (a point outside it still lands in the first or last bucket)."""
    first = _EDGE_SQL.format(x=_X_EXPR[x], order="ASC")
    last = _EDGE_SQL.format(x=_X_EXPR[x], order="DESC")
    cursor.execute(
        _BOUNDS_SQL.format(first_x=first, last_x=last), {"run": run.pk, "key": key, "max_points": max_points}
    )
    lo, hi, n = cursor.fetchone()
    return None if n == 0 else (lo, hi, n)


def _group_series(cursor, *, run: Run, keys: list[str], bounds: tuple, max_points: int, x: XAxis) -> dict:
    lo, hi, exact = bounds
    params: dict[str, Any] = {"run": run.pk, "lo": lo, "hi": hi, "max_points": max_points}
    # For steps the buckets are integer ranges (width 1 at least); for time any positive width.
    params["eps"] = 1.0 if x == "step" else 1e-9
    record, columns, aggregates = [], [], []
    for i, key in enumerate(keys):
        if len(key.encode()) <= _MAX_IDENTIFIER_BYTES:
            record.append(f"{_quote(key)} double precision")
            columns.append(f"r.{_quote(key)} AS v{i}")
        else:
            params[f"k{i}"] = key
            columns.append(
                f"CASE WHEN jsonb_typeof(m.\"values\"->%(k{i})s) = 'number' "
                f'THEN (m."values"->%(k{i})s)::double precision END AS v{i}'
            )
        has = f"FILTER (WHERE v{i} IS NOT NULL)"
        aggregates.append(
            f"max(x) {has}, max(step) {has}, min(v{i}), max(v{i}), (max(ARRAY[x, step, v{i}]) {has})[3], count(v{i})"
        )
    bucket = "step" if exact else _BUCKET_SQL
    sql = _GROUP_SQL.format(
        bucket=bucket,
        aggregates=", ".join(aggregates),
        x=_X_EXPR[x],
        columns=", ".join(columns),
        record=", ".join(record) or "_unused_ text",
    )
    cursor.execute(sql, params)
    rows = cursor.fetchall()
    series = {}
    for i, key in enumerate(keys):
        first = 1 + 6 * i
        picked = [row[first : first + 6] for row in rows if row[first + 5]]
        series[key] = {
            "x": [p[0] for p in picked],
            "step": [p[1] for p in picked],
            "min": [p[2] for p in picked],
            "max": [p[3] for p in picked],
            "last": [p[4] for p in picked],
            "count": [p[5] for p in picked],
        }
    return series


def run_metric_series(*, run: Run, keys: list[str], max_points: int, x: XAxis = "step") -> dict[str, dict[str, list]]:
    """Each key's series as parallel lists x, step, min, max, last, count (at most max_points entries)."""
    series: dict[str, dict[str, list]] = {}
    groups: dict[tuple, list[str]] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        # One aggregate over up to millions of rows: JIT compilation costs more than it saves
        # (measured 1.8 s of it), and the grouping should not spill to disk.
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        for key in dict.fromkeys(keys):
            bounds = _key_bounds(cursor, run=run, key=key, max_points=max_points, x=x)
            if bounds is None:
                series[key] = {name: [] for name in ("x", "step", "min", "max", "last", "count")}
                continue
            lo, hi, n = bounds
            groups.setdefault((lo, hi, n <= max_points), []).append(key)
        for bounds, members in groups.items():
            series.update(_group_series(cursor, run=run, keys=members, bounds=bounds, max_points=max_points, x=x))
    return {key: series[key] for key in keys}


def run_metric_rows(*, run: Run, keys: list[str]) -> Iterator[tuple[int, str, list[Any]]]:
    """Full-fidelity (step, ISO time, values of keys) rows in step order, streamed from the database."""
    queryset = MetricStep.objects.filter(run=run).order_by("step").values_list("step", "time", "values")
    for step, time, values in queryset.iterator(chunk_size=5000):
        yield step, time.isoformat(), [values.get(key) for key in keys]


SEARCH_MAX_CHARS = 200


class InvalidSearch(ValueError):
    """A trajectory search that cannot run: too long, or not a valid regular expression."""


def check_search(q: str, *, regex: bool) -> None:
    """Refuse a search longer than SEARCH_MAX_CHARS, or a regex PostgreSQL cannot compile.

    PostgreSQL's regex dialect (ARE) is not Python's, so PostgreSQL itself judges the pattern,
    in a savepoint so that a bad one leaves the caller's transaction usable."""
    if len(q) > SEARCH_MAX_CHARS:
        raise InvalidSearch(f"at most {SEARCH_MAX_CHARS} characters")
    if not regex:
        return
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT '' ~* %s", [q])
    except DataError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid regular expression"
        raise InvalidSearch(message) from None


def run_trajectories(
    *,
    run: Run,
    step: int | None = None,
    correct: bool | None = None,
    has_tool_error: bool | None = None,
    used_tool: bool | None = None,
    truncated: bool | None = None,
    q: str | None = None,
    regex: bool = False,
) -> QuerySet[Trajectory]:
    """A run's trajectories, filtered; `q` is a case-insensitive substring, or with `regex` a
    PostgreSQL regular expression (~*). Raises InvalidSearch for a search that cannot run."""
    if q:
        check_search(q, regex=regex)
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
        queryset = queryset.filter(search_text__iregex=q) if regex else queryset.filter(search_text__icontains=q)
    return queryset.defer("search_text")


def queue_positions() -> dict[int, int]:
    """Run id -> 1-based place in the launch queue (managed queued runs start oldest first)."""
    ids = Run.objects.filter(managed=True, status=RunStatus.QUEUED).order_by("created_at", "pk")
    return {pk: position for position, pk in enumerate(ids.values_list("pk", flat=True), start=1)}
