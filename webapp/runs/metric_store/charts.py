"""A run's metric series for charts, downsampled on the server: from the rollups the store keeps
(webapp.runs.metric_store.writes), or by a pass over the run's steps for keys written around it."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from django.db import connection, transaction

from webapp.runs.metric_store.layout import RATIO, US_SQL, WIDTHS, columns
from webapp.runs.models import Run

XAxis = Literal["step", "time"]
_FIELDS = ("x", "step", "min", "max", "last", "count")

# A chart asks for many keys of one run at once (the run page: all ~40). Each key's series is
# bucketed over its own x range into at most max_points buckets; each bucket keeps min, max and the
# last value (at the bucket's largest x, then step) and its count, so spikes survive and the line
# ends where it should. A series no longer than max_points is returned point by point, exact.
#
# Keys that the store rolls up (webapp.runs.metric_store.writes) are read from their rollups
# (run_metric_series); the others, whose steps were written around it, by a pass over the run's
# steps (run_metric_series_scan).

# --- the scan: runs_metricstep itself ------------------------------------------------------------
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
    WHERE m.run_id = %(run)s{steps}
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


def _empty() -> dict[str, list]:
    return {name: [] for name in _FIELDS}


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


def _group_series(
    cursor, *, run: Run, keys: list[str], bounds: tuple, max_points: int, x: XAxis, steps: tuple[int, int] | None
) -> dict:
    """One pass over the run's steps (those from steps[0] to steps[1] if given) for `keys`, bucketed
    over `bounds` (lo, hi, exact): by step when `exact`, else into max_points buckets of lo..hi."""
    lo, hi, exact = bounds
    params: dict[str, Any] = {"run": run.pk, "lo": lo, "hi": hi, "max_points": max_points}
    if steps is not None:
        params["first"], params["last"] = steps
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
        steps="" if steps is None else " AND m.step BETWEEN %(first)s AND %(last)s",
    )
    cursor.execute(sql, params)
    rows = cursor.fetchall()
    series = {}
    for i, key in enumerate(keys):
        first = 1 + 6 * i
        picked = [row[first : first + 6] for row in rows if row[first + 5]]
        series[key] = dict(zip(_FIELDS, ([p[f] for p in picked] for f in range(6)), strict=True))
    return series


def _scan_series(cursor, *, run: Run, keys: list[str], max_points: int, x: XAxis) -> dict[str, dict[str, list]]:
    """Keys' series by passes over all the run's steps."""
    series: dict[str, dict[str, list]] = {}
    groups: dict[tuple, list[str]] = {}
    for key in keys:
        bounds = _key_bounds(cursor, run=run, key=key, max_points=max_points, x=x)
        if bounds is None:
            series[key] = _empty()
            continue
        lo, hi, n = bounds
        groups.setdefault((lo, hi, n <= max_points), []).append(key)
    for bounds, members in groups.items():
        series.update(
            _group_series(cursor, run=run, keys=members, bounds=bounds, max_points=max_points, x=x, steps=None)
        )
    return series


@contextmanager
def _series_cursor() -> Iterator:
    """A cursor for one chart's reads, in a transaction (one snapshot for all of its queries)."""
    with transaction.atomic(), connection.cursor() as cursor:
        # One aggregate over up to millions of rows: JIT compilation costs more than it saves
        # (measured 1.8 s of it), and the grouping should not spill to disk.
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        yield cursor


def run_metric_series_scan(
    *, run: Run, keys: list[str], max_points: int, x: XAxis = "step"
) -> dict[str, dict[str, list]]:
    """run_metric_series by a pass over the run's steps, whatever is rolled up: what it reads for
    keys written around the metric store, and bench/ingest.py's baseline (the layout before rollups)."""
    with _series_cursor() as cursor:
        series = _scan_series(cursor, run=run, keys=list(dict.fromkeys(keys)), max_points=max_points, x=x)
    return {key: series[key] for key in keys}


# --- the rollups ---------------------------------------------------------------------------------
#
# A rolled-up key with n numbers between steps first and last is read
# - point by point when n <= max_points, from its 32-step rollups: a rollup of one number is that
#   point; the steps of the others are read (at most n rows);
# - else from rollups of the widest width w that has at least max_points / 2 buckets between first
#   and last: buckets of k * w steps, k (1 to 3) as small as keeps them within max_points, so
#   between max_points / 2 and max_points of them, edges at multiples of k * w from the w-bucket of
#   first. Fewer than 2 * max_points + 4 rollups a key, and past its sealed step up to 3 of each
#   narrower width and 32-step ones (covering_rollups_sql). Each bucket's min, max,
#   last and count are exact;
# - else (fewer than max_points / 2 buckets of 32 steps, more numbers) by a pass over its steps, as
#   the scan does (fewer than 16 * max_points rows).
# n itself is not stored (counting it costs as much as the chart): a key is exact when its steps are
# few, or when the buckets it was read in count at most max_points numbers; a key with few 32-step
# buckets is counted from them.
#
# On the time axis the same rollups are bucketed by the time of their latest point into
# max_points equal stretches of the key's time range (from its first to its last step's time):
# buckets of time whose edges fall between rollups. x is the latest time in a bucket and last its
# latest point, in (time, step) order. The rollups' times are µs relative to the run's first step
# in float8, exact while the run spans less than 285 years.


def covering_rollups_sql(series: str) -> str:
    """A LATERAL subquery: the exact rollups that cover each series of `series` (a relation with
    series_id, width and sealed: the series' sealed step, 0 if none) once: buckets of `width` below
    the one holding `sealed`, then the sealed buckets of each narrower width, then 32-step buckets.

    One branch per width with its width as a literal, so each is a range scan of one partition of
    the (series_id, width, bucket) key; OFFSET 0 keeps the subquery apart, as joined to `series`
    the planner took a range for a ninth of a partition and scanned all of it."""
    branches = []
    for width in WIDTHS:
        # At the series' own width from its first bucket; narrower, from the open wider bucket.
        lower = f"CASE WHEN {series}.width = {width} THEN 0 ELSE {series}.sealed / {width * RATIO} * {RATIO} END"
        upper = "" if width == WIDTHS[0] else f" AND r.bucket < {series}.sealed / {width}"
        branches.append(
            f"SELECT r.width, r.bucket, {columns('r.')} FROM runs_metricrollup AS r "
            f"WHERE r.series_id = {series}.series_id AND r.width = {width} AND {width} <= {series}.width "
            f"AND r.bucket >= {lower}{upper}"
        )
    return "LATERAL (\n    " + "\n    UNION ALL ".join(branches) + "\n    OFFSET 0\n)"


@dataclass(frozen=True)
class SeriesEdges:
    """A rolled-up key: its series id, its first and last step (None when it has no number) and its
    sealed step (0 when none)."""

    series_id: int
    first_step: int | None
    last_step: int | None
    sealed: int


# A series' first or last 32-step bucket's step: an index probe.
_EDGE = f"""
    SELECT {{column}} FROM runs_metricrollup
    WHERE series_id = s.id AND width = {WIDTHS[0]} ORDER BY bucket {{order}} LIMIT 1
"""
_EDGES = f"""
SELECT s.key, s.id, ({_EDGE.format(column="first_step", order="ASC")}),
    ({_EDGE.format(column="last_step", order="DESC")}), coalesce(s.sealed_step, 0)
FROM runs_metricseries AS s
WHERE s.run_id = %s AND s.key = ANY(%s::text[])
"""


def series_edges(cursor, run: Run, keys: list[str]) -> dict[str, SeriesEdges]:
    """The rolled-up keys among `keys` (those with a series row), with their first and last steps:
    two index probes a key (0.7 ms for 40 keys)."""
    cursor.execute(_EDGES, [run.pk, keys])
    return {key: SeriesEdges(*rest) for key, *rest in cursor.fetchall()}


# Times of steps, and of the run's first step (its time axis' 0), in µs since the Unix epoch.
_US = US_SQL.format("time")
_STEP_TIMES_SQL = f"SELECT step, {_US} FROM runs_metricstep WHERE run_id = %s AND step = ANY(%s)"
_FIRST_TIME_SQL = f"SELECT {_US} FROM runs_metricstep WHERE run_id = %s ORDER BY step LIMIT 1"
_NARROW_COUNTS_SQL = f"""
SELECT series_id, sum(n) FROM runs_metricrollup
WHERE series_id = ANY(%s::bigint[]) AND width = {WIDTHS[0]} GROUP BY series_id
"""


def _per_series(buckets: str, *, x: bool = True) -> str:
    """Each series' buckets (rows i, j, x, step, low, high, last, n) as one row of arrays in j order:
    40 rows of arrays rather than 20,000 rows make psycopg's decoding and the lists' building
    ~3 times cheaper (measured: 56 + 46 ms for 40 keys x 500 points). Without `x` (on the step axis,
    the step as a float; _series_of makes it) one array less to print and parse."""
    # From a sorted subquery rather than with ORDER BY in each array_agg, which would sort every
    # array apart (measured: 20 of 80 ms for 40 keys x 500 points).
    columns = ("x", "step", "low", "high", "last", "n") if x else ("step", "low", "high", "last", "n")
    arrays = ", ".join(f"array_agg(g.{column})" for column in columns)
    return f"SELECT g.i, {arrays} FROM ({buckets}\n    ORDER BY i, j) AS g GROUP BY g.i"


def _rollup_buckets(j: str, aggregates: str, params: str) -> str:
    """Buckets j of series p (unnest of `params`) from the rollups that cover them. Grouped from a
    subquery sorted on (i, j): sorted once, rather than hashed and then sorted for _per_series
    (measured: 43 ms rather than 51 for 40 keys x 500 points)."""
    return f"""
    SELECT c.i, c.j, {aggregates}
    FROM (
        SELECT p.i, {j} AS j, c.*
        FROM unnest({params}) CROSS JOIN {covering_rollups_sql("p")} AS c
        ORDER BY 1, 2
    ) AS c
    GROUP BY c.i, c.j"""


_ROLLUP_STEP_SQL = _per_series(
    _rollup_buckets(
        "((c.bucket::bigint * c.width) / p.width - p.b0) / p.k",
        "max(c.last_step) AS step, min(c.min_value) AS low, max(c.max_value) AS high, "
        "(max(ARRAY[c.last_step, c.last_value]))[2] AS last, sum(c.n) AS n",
        "%(ids)s::bigint[], %(widths)s::int[], %(sealed)s::int[], %(b0)s::int[], %(k)s::int[], %(i)s::int[]) "
        "AS p(series_id, width, sealed, b0, k, i",
    ),
    x=False,
)
_ROLLUP_TIME_SQL = _per_series(
    _rollup_buckets(
        "greatest(least(floor((c.time_us - p.lo)::float8 * %(max_points)s / ((p.hi - p.lo)::float8 + 0.001)), "
        "%(max_points)s - 1), 0)",
        "(max(c.time_us) - %(t0)s)::float8 / 1000000 AS x, max(c.last_step) AS step, min(c.min_value) AS low, "
        "max(c.max_value) AS high, (max(ARRAY[c.time_us - %(t0)s, c.time_step, c.time_value]))[3] AS last, "
        "sum(c.n) AS n",
        "%(ids)s::bigint[], %(widths)s::int[], %(sealed)s::int[], %(lo)s::bigint[], %(hi)s::bigint[], %(i)s::int[]) "
        "AS p(series_id, width, sealed, lo, hi, i",
    )
)
# Every number of short series (series_id, key): 32-step rollups of one number are that point,
# the steps of the others are read.
_EXACT_SQL = _per_series(
    f"""
    SELECT i, step AS j, {{x}} AS x, step, v AS low, v AS high, v AS last, 1 AS n
    FROM (
        SELECT p.i, r.last_step AS step, r.time_us AS t, r.last_value AS v
        FROM unnest(%(ids)s::bigint[], %(keys)s::text[], %(i)s::int[]) AS p(series_id, key, i)
        JOIN runs_metricrollup AS r ON r.series_id = p.series_id AND r.width = {WIDTHS[0]} AND r.n = 1
        UNION ALL
        SELECT p.i, m.step, {US_SQL.format("m.time")}, (m."values" -> p.key)::float8
        FROM unnest(%(ids)s::bigint[], %(keys)s::text[], %(i)s::int[]) AS p(series_id, key, i)
        JOIN runs_metricrollup AS r ON r.series_id = p.series_id AND r.width = {WIDTHS[0]} AND r.n > 1
        CROSS JOIN LATERAL (
            SELECT step, time, "values" FROM runs_metricstep
            WHERE run_id = %(run)s AND step BETWEEN r.first_step AND r.last_step
            OFFSET 0
        ) AS m
        WHERE jsonb_typeof(m."values" -> p.key) = 'number'
    ) AS points"""
)


def _rollup_width(first: int, last: int, max_points: int) -> int | None:
    """The widest rollup width with at least max_points / 2 buckets between steps first and last."""
    fitting = [w for w in WIDTHS if 2 * (last // w - first // w + 1) >= max_points]
    return fitting[-1] if fitting else None


def _series_of(rows: list[tuple], names: list[str]) -> dict[str, dict[str, list]]:
    """Each name's series from rows (i, [x,] step, min, max, last, count) of _per_series; without x,
    x is the step (as a float, as the step axis has always given it)."""
    series = {name: _empty() for name in names}
    for i, *arrays in rows:
        if len(arrays) < len(_FIELDS):
            arrays = [[float(step) for step in arrays[0]], *arrays]
        series[names[i]] = dict(zip(_FIELDS, arrays, strict=True))
    return series


def _rollup_series(
    cursor, *, keys: dict[str, SeriesEdges], max_points: int, x: XAxis, times: dict[int, int], t0: int
) -> dict[str, dict[str, list]]:
    """Keys' series from their rollups, all in one statement."""
    names = list(keys)
    widths = [_rollup_width(b.first_step, b.last_step, max_points) for b in keys.values()]
    params: dict[str, Any] = {
        "ids": [b.series_id for b in keys.values()],
        "widths": widths,
        "sealed": [b.sealed for b in keys.values()],
        "i": list(range(len(names))),
        "max_points": max_points,
        "t0": t0,
    }
    if x == "step":
        spans = [b.last_step // w - b.first_step // w + 1 for b, w in zip(keys.values(), widths, strict=True)]
        params["b0"] = [b.first_step // w for b, w in zip(keys.values(), widths, strict=True)]
        params["k"] = [-(-span // max_points) for span in spans]
        cursor.execute(_ROLLUP_STEP_SQL, params)
    else:
        params["lo"] = [times[b.first_step] for b in keys.values()]
        params["hi"] = [times[b.last_step] for b in keys.values()]
        cursor.execute(_ROLLUP_TIME_SQL, params)
    return _series_of(cursor.fetchall(), names)


def _exact_series(cursor, *, run: Run, keys: dict[str, SeriesEdges], x: XAxis, t0: int) -> dict[str, dict[str, list]]:
    """Short keys' series point by point, all in one statement."""
    names = list(keys)
    params = {"run": run.pk, "ids": [b.series_id for b in keys.values()], "keys": names, "t0": t0}
    x_sql = "step::float8" if x == "step" else "(t - %(t0)s)::float8 / 1000000"
    cursor.execute(_EXACT_SQL.format(x=x_sql), {**params, "i": list(range(len(names)))})
    return _series_of(cursor.fetchall(), names)


def _edge_times(cursor, run: Run, keys: dict[str, SeriesEdges]) -> tuple[dict[int, int], int]:
    """For the time axis: the µs of the keys' first and last steps, and of the run's first step."""
    cursor.execute(_STEP_TIMES_SQL, [run.pk, sorted({s for b in keys.values() for s in (b.first_step, b.last_step)})])
    times = dict(cursor.fetchall())
    cursor.execute(_FIRST_TIME_SQL, [run.pk])
    return times, cursor.fetchone()[0]


def _steps_series(
    cursor, *, run: Run, keys: dict[str, SeriesEdges], max_points: int, x: XAxis, times, t0: int
) -> dict[str, dict[str, list]]:
    """Keys with more numbers than max_points but fewer 32-step buckets: by passes over their steps,
    one for the keys that share their steps (usually all)."""
    groups: dict[tuple[int, int], list[str]] = {}
    for key, b in keys.items():
        groups.setdefault((b.first_step, b.last_step), []).append(key)
    series = {}
    for (first, last), members in groups.items():
        lo, hi = (first, last) if x == "step" else ((times[first] - t0) / 1e6, (times[last] - t0) / 1e6)
        series.update(
            _group_series(
                cursor, run=run, keys=members, bounds=(lo, hi, False), max_points=max_points, x=x, steps=(first, last)
            )
        )
    return series


def _plan(cursor, keys: dict[str, SeriesEdges], max_points: int) -> tuple[dict[str, SeriesEdges], ...]:
    """Keys with numbers split by how they are read: (point by point, from rollups, from steps)."""
    exact, wide, few = {}, {}, {}
    for key, edges in keys.items():
        if edges.last_step - edges.first_step < max_points:
            exact[key] = edges
        elif _rollup_width(edges.first_step, edges.last_step, max_points):
            wide[key] = edges
        else:
            few[key] = edges
    if few:
        cursor.execute(_NARROW_COUNTS_SQL, [[edges.series_id for edges in few.values()]])
        counts = dict(cursor.fetchall())
        for key, edges in list(few.items()):
            if counts[edges.series_id] <= max_points:
                exact[key] = few.pop(key)
    return exact, wide, few


def run_metric_series(*, run: Run, keys: list[str], max_points: int, x: XAxis = "step") -> dict[str, dict[str, list]]:
    """Each key's series as parallel lists x, step, min, max, last, count (at most max_points entries):
    point by point when the key has at most max_points numbers, else bucketed (see above for where
    the edges of buckets read from rollups fall)."""
    unique = list(dict.fromkeys(keys))
    with _series_cursor() as cursor:
        rolled = series_edges(cursor, run, unique)
        series = _scan_series(cursor, run=run, keys=[k for k in unique if k not in rolled], max_points=max_points, x=x)
        series.update({key: _empty() for key, edges in rolled.items() if edges.first_step is None})
        rolled = {key: edges for key, edges in rolled.items() if edges.first_step is not None}
        times, t0 = _edge_times(cursor, run, rolled) if x == "time" and rolled else ({}, 0)
        exact, wide, few = _plan(cursor, rolled, max_points)
        if wide:
            series.update(_rollup_series(cursor, keys=wide, max_points=max_points, x=x, times=times, t0=t0))
            # Sparse keys: their buckets hold max_points numbers at most, so they are short.
            exact.update({key: wide[key] for key in wide if sum(series[key]["count"]) <= max_points})
        if exact:
            series.update(_exact_series(cursor, run=run, keys=exact, x=x, t0=t0))
        if few:
            series.update(_steps_series(cursor, run=run, keys=few, max_points=max_points, x=x, times=times, t0=t0))
    return {key: series[key] for key in keys}
