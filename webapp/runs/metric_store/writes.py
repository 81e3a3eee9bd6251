"""The one writer of metric steps, and the rollups that let a chart read a long series without its steps.

Every writer of metrics (the trainer's ingest, the MLflow API) calls write_metric_steps inside its
transaction while holding the run's row lock (`select_for_update`). Besides runs_metricstep (one
row per step with all its values) it keeps, for each key of the run, a MetricSeries row (the key is
rolled up; its id; its sealed step) and MetricRollup rows for buckets of 32, 128, 512, ..., 131,072
steps (WIDTHS): count, min, max, first and last step, the value at the last step, and the point
latest in (time, step) order. A chart of 500 points of a 1,000,000-step series reads 489 rows of
width 2,048 instead of a million steps of ~1.6 kB; its first and last step are two index probes
(series_edges).

The 32-step buckets are always exact. The wider ones are exact below the series' sealed step:
every bucket wholly below the bucket of its width that holds the sealed step. Past it they may be
missing or out of date, and readers take that stretch from narrower buckets (covering_rollups_sql):
at most 3 of each narrower width, and the 32-step buckets from the sealed step on. A write merges
new numbers into their 32-step buckets only, and every SEAL_EVERY steps a key's series goes past,
the wider buckets up to there are written whole from the width below and the sealed step moves.
So a 100-step batch of 40 keys merges about 165 rows, not 450 (all 7 widths), and a one-step
report 40, not 280 (measured with every width on every write: 6.4 ms per one-step write of 40 keys,
against 0.7 ms without rollups).

Writes stay exact under re-reports. One statement upserts the steps and returns, for the steps that
existed, their values and whether their time moved, as they were before. From that:

* a number new at its (key, step) is merged into its buckets (count + 1, min, max, last) — into
  sealed wider ones too when it lies below the sealed step: the common case, a step reported once,
  is that one statement;
* a number that changed or went away, or any number of a step whose time moved, makes its 32-step
  bucket stale: recomputed from the steps, then the buckets above it from the width below (at most
  4 rows each);
* a value reported again unchanged (a retried batch) changes nothing, not even the step's row.

Steps written around the store (tests and benchmarks bulk-create MetricStep rows; databases from
before the rollups) have no series rows, and readers scan the steps for such keys. The first time
the store writes to a run whose steps were all written around it, it rebuilds the run's rollups
(rebuild_rollups). Writing steps around the store into a run it already rolls up leaves its
rollups behind: call rebuild_rollups(run) after.
"""

import json
from collections.abc import Iterable
from itertools import chain
from typing import Any

from django.db import connection

from trainer.contract import is_sft_metric
from webapp.runs.metric_store.layout import COLUMNS, RATIO, US_SQL, WIDTHS, columns
from webapp.runs.models import Run

# How far a series goes past its sealed step before its wider buckets are written: one statement
# per SEAL_EVERY steps rather than per 64 (measured: 1.3 statements of 2.6 ms a 100-step batch).
SEAL_EVERY = 1024

_TYPES = dict.fromkeys(COLUMNS, "integer") | {
    "last_value": "float8", "min_value": "float8", "max_value": "float8", "time_value": "float8", "time_us": "bigint",
}  # fmt: skip
_BUCKET, _N, _FIRST, _LAST, _TIME_STEP, _LAST_VALUE, _MIN, _MAX, _TIME_VALUE, _TIME_US = range(10)

# A bucket's rollup from the rollups c of the width below.
_FROM_CHILDREN = """
    sum(c.n)::int, min(c.first_step), max(c.last_step),
    (array_agg(c.time_step ORDER BY c.time_us DESC, c.time_step DESC))[1],
    (array_agg(c.last_value ORDER BY c.last_step DESC))[1], min(c.min_value), max(c.max_value),
    (array_agg(c.time_value ORDER BY c.time_us DESC, c.time_step DESC))[1], max(c.time_us)
"""


# The series rows of the keys (%(keys)s) as they were before the statement (`known`), those
# created for the others, and `ids`: every one's id. Only missing keys are inserted: ON CONFLICT DO
# NOTHING for all 40 keys of a batch cost 0.4 ms more.
_SERIES_CTE = """
known AS (
    SELECT id, key, sealed_step FROM runs_metricseries
    WHERE run_id = %(run)s AND key = ANY(%(keys)s::text[])
),
series AS (
    INSERT INTO runs_metricseries (run_id, key)
    SELECT %(run)s, k.key FROM unnest(%(keys)s::text[]) AS k(key)
    WHERE {guard} AND k.key NOT IN (SELECT key FROM known)
    ON CONFLICT (run_id, key) DO NOTHING
    RETURNING id, key
),
ids AS (
    SELECT id, key FROM series
    UNION ALL
    SELECT id, key FROM known WHERE {guard}
)"""

# Rollups (%(rollups)s) merged into the stored ones: counts add, min and max widen, the later last
# wins, and the point latest in (time, step) order. A JSON object of column arrays, which
# json_to_record parses into PostgreSQL arrays in C (as an array of objects, json_to_recordset
# took 1.7 ms for the 440 rollups of 100 steps x 40 keys; psycopg's array parameters ~9 ms).
# `table`: the partition of 32-step buckets itself where only those are merged (280 rows in
# 2.1 ms rather than 3.0 through the partitioned table).
_ROLLUPS_CTE = f"""
rollups AS (
    INSERT INTO {{table}} AS r (series_id, width, bucket, {columns()})
    SELECT ids.id, b.width, b.bucket, {columns("b.")}
    FROM json_to_record(%(rollups)s::json)
        AS c(key text[], width integer[], bucket integer[], {", ".join(f"{c} {t}[]" for c, t in _TYPES.items())})
    CROSS JOIN LATERAL unnest(c.key, c.width, c.bucket, {columns("c.")}) AS b(key, width, bucket, {columns()})
    JOIN ids ON ids.key = b.key
    ON CONFLICT (series_id, width, bucket) DO UPDATE SET
        n = r.n + EXCLUDED.n,
        first_step = least(r.first_step, EXCLUDED.first_step),
        last_step = greatest(r.last_step, EXCLUDED.last_step),
        last_value = CASE WHEN EXCLUDED.last_step > r.last_step THEN EXCLUDED.last_value ELSE r.last_value END,
        min_value = least(r.min_value, EXCLUDED.min_value),
        max_value = greatest(r.max_value, EXCLUDED.max_value),
        time_step = CASE WHEN (EXCLUDED.time_us, EXCLUDED.time_step) > (r.time_us, r.time_step)
            THEN EXCLUDED.time_step ELSE r.time_step END,
        time_value = CASE WHEN (EXCLUDED.time_us, EXCLUDED.time_step) > (r.time_us, r.time_step)
            THEN EXCLUDED.time_value ELSE r.time_value END,
        time_us = greatest(r.time_us, EXCLUDED.time_us)
)"""

# One statement, one round trip, writes a batch in the common case, steps the run does not have yet:
#
# - input: the batch's steps; old: what those of them the run had, and whether their time moves;
# - written: the steps upserted (values merge key by key, the later time wins), except a step whose
#   merged values and time are what it has (so a retried batch writes nothing);
# - series, ids, rollups: the keys' series rows, and the batch's 32-step buckets merged with all its
#   numbers taken as new — only if no step of the batch existed. Otherwise write_metric_steps reads
#   `old` (step, values before, moved), merges what really is new (_MERGE) and recomputes what
#   changed.
#
# It returns whether the run had series rows and steps before, `old`, the keys' series ids and
# their sealed steps (json, which psycopg decodes; Django has only jsonb left as text).
_WRITE_STEPS = f"""
WITH input AS (
    SELECT x.step, to_timestamp(x.time) AS time, x."values"
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS x(step integer, time double precision, "values" jsonb)
),
old AS (
    SELECT i.step, m."values", m.time <> i.time AS moved
    FROM input AS i
    CROSS JOIN LATERAL (
        SELECT "values", time FROM runs_metricstep WHERE run_id = %(run)s AND step = i.step
    ) AS m
),
written AS (
    INSERT INTO runs_metricstep AS m (run_id, step, time, "values")
    SELECT %(run)s, step, time, "values" FROM input
    ON CONFLICT (run_id, step) DO UPDATE
    SET "values" = m."values" || EXCLUDED."values", time = EXCLUDED.time
    WHERE (m."values" || EXCLUDED."values", EXCLUDED.time) IS DISTINCT FROM (m."values", m.time)
),
{_SERIES_CTE.format(guard="NOT EXISTS (SELECT 1 FROM old)")},
{_ROLLUPS_CTE.format(table=f"runs_metricrollup_{WIDTHS[0]}")}
SELECT
    EXISTS (SELECT 1 FROM runs_metricseries WHERE run_id = %(run)s),
    EXISTS (SELECT 1 FROM runs_metricstep WHERE run_id = %(run)s),
    (SELECT json_agg(json_build_array(step, "values", moved)) FROM old),
    (SELECT json_object_agg(key, id) FROM ids),
    (SELECT json_object_agg(key, sealed_step) FROM known)
"""

# The same merge on its own, with the series' ids: a batch's new numbers when some of its steps
# existed, new numbers in sealed wider buckets (steps reported out of order), steps read back.
_MERGE = f"""
WITH {_SERIES_CTE.format(guard="true")},
{_ROLLUPS_CTE.format(table="runs_metricrollup")}
SELECT json_object_agg(key, id) FROM ids
"""

# 32-step buckets (key, bucket) of a run, deleted to be merged anew from their steps.
_DELETE_NARROW = f"""
DELETE FROM runs_metricrollup AS r
USING runs_metricseries AS s, json_to_record(%(stale)s::json) AS c(key text[], bucket integer[]),
    unnest(c.key, c.bucket) AS t(key, bucket)
WHERE s.run_id = %(run)s AND s.key = t.key AND r.series_id = s.id AND r.width = {WIDTHS[0]} AND r.bucket = t.bucket
"""

# Steps read back in step order, values as text (Django leaves jsonb undecoded), times in µs: those
# of 32-step buckets (each range a subquery apart, see covering_rollups_sql), or the next
# %(limit)s after %(after)s.
_STEPS_IN_BUCKETS = f"""
SELECT m.step, m.us, m."values" FROM unnest(%(buckets)s::int[]) AS b(bucket)
CROSS JOIN LATERAL (
    SELECT step, {US_SQL.format("time")} AS us, "values" FROM runs_metricstep
    WHERE run_id = %(run)s AND step BETWEEN b.bucket * {WIDTHS[0]} AND b.bucket * {WIDTHS[0]} + {WIDTHS[0] - 1}
    OFFSET 0
) AS m
ORDER BY m.step
"""
_STEPS_AFTER = f"""
SELECT m.step, {US_SQL.format("m.time")}, m."values" FROM runs_metricstep AS m
WHERE m.run_id = %(run)s AND m.step > %(after)s ORDER BY m.step LIMIT %(limit)s
"""

# Buckets of a wider width in ranges [lo, hi) per series written over from the width below (each
# range a subquery apart: joined, the planner hashed a whole partition; 465 ms a batch on a
# database holding a 1,000,000-step run).
_RANGES_FROM_CHILDREN = f"""
INSERT INTO runs_metricrollup (series_id, width, bucket, {columns()})
SELECT c.series_id, %(width)s, c.bucket / {RATIO}, {_FROM_CHILDREN}
FROM unnest(%(ids)s::bigint[], %(lo)s::int[], %(hi)s::int[]) AS t(series_id, lo, hi)
CROSS JOIN LATERAL (
    SELECT * FROM runs_metricrollup
    WHERE series_id = t.series_id AND width = %(width)s / {RATIO}
        AND bucket >= t.lo * {RATIO} AND bucket < t.hi * {RATIO}
    OFFSET 0
) AS c
GROUP BY c.series_id, c.bucket / {RATIO}
ON CONFLICT (series_id, width, bucket) DO UPDATE SET {", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS)}
"""
# Buckets (series, bucket) of a wider width whose narrower ones are all gone (their numbers went away).
_DELETE_EMPTIED = f"""
DELETE FROM runs_metricrollup AS r
USING unnest(%(ids)s::bigint[], %(buckets)s::int[]) AS t(series_id, bucket)
WHERE r.series_id = t.series_id AND r.width = %(width)s AND r.bucket = t.bucket AND NOT EXISTS (
    SELECT 1 FROM runs_metricrollup AS c
    WHERE c.series_id = t.series_id AND c.width = %(width)s / {RATIO}
        AND c.bucket >= t.bucket * {RATIO} AND c.bucket < t.bucket * {RATIO} + {RATIO}
)
"""
_SET_SEALED = """
UPDATE runs_metricseries AS s SET sealed_step = t.sealed
FROM unnest(%(ids)s::bigint[], %(sealed)s::int[]) AS t(id, sealed)
WHERE s.id = t.id
"""
_DELETE_RUN_ROLLUPS = """
DELETE FROM runs_metricrollup WHERE series_id IN (SELECT id FROM runs_metricseries WHERE run_id = %(run)s)
"""


def _merge_entries(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The batch's steps in step order, one entry each: later entries for the same step win, as
    they would across two batches (values key by key, the later time)."""
    by_step: dict[int, dict[str, Any]] = {}
    for item in steps:
        entry = by_step.setdefault(item["step"], {"step": item["step"], "values": {}})
        entry["time"] = item["time"]
        entry["values"].update(item["values"])
    return [by_step[step] for step in sorted(by_step)]


def _keys(rows: list[dict[str, Any]]) -> list[str]:
    """The keys of steps, each once, in order."""
    return list(dict.fromkeys(chain.from_iterable(row["values"] for row in rows)))


def _time_us(seconds: float) -> int:
    """Microseconds since the Unix epoch of `to_timestamp(seconds)`, rounded as PostgreSQL rounds it
    (float8_timestamptz: from its own epoch, 2000-01-01, with rint; Python's round is rint's
    half-to-even), so Python's rollups carry the times the steps have."""
    return round((seconds - 946_684_800.0) * 1_000_000) + 946_684_800_000_000


def _is_number(value: Any) -> bool:
    # Steps written around the store may hold anything; like jsonb_typeof, only numbers count.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _new_numbers(
    rows: list[dict[str, Any]], times: list[int], old: dict[int, tuple[dict, bool]]
) -> tuple[dict[str, list[list]], set[tuple[str, int]]]:
    """What steps (in step order, with their times in µs) do to each key: (key -> accumulators of
    its 32-step buckets, in bucket order, of the numbers new at their (key, step); the (key, 32-step
    bucket) of every number that changed or went away, and of every number of a step whose time
    moves (its time is theirs)). `old`: step -> (values, moved) of those steps the run had.

    In Python rather than SQL: aggregating the batch's values with jsonb_each in the write
    statement cost ~12 ms of 100 steps x 40 keys, this ~1.3 ms."""
    narrow: dict[str, list[list]] = {}
    current: dict[str, list] = {}
    stale: set[tuple[str, int]] = set()
    for row, time_us in zip(rows, times, strict=True):
        step, values = row["step"], row["values"]
        bucket = step // WIDTHS[0]
        if step in old:
            before, moved = old[step]
            merged = {**before, **values}
            if moved:
                stale.update((key, bucket) for key in merged if _is_number(before.get(key)) or _is_number(merged[key]))
                continue
            stale.update((key, bucket) for key in values if _is_number(before.get(key)) and values[key] != before[key])
            values = {key: value for key, value in values.items() if not _is_number(before.get(key))}
        for key, value in values.items():
            if type(value) is not float and not _is_number(value):  # floats first: the common case
                continue
            acc = current.get(key)
            if acc is None or acc[_BUCKET] != bucket:
                acc = current[key] = [bucket, 1, step, step, step, value, value, value, value, time_us]
                narrow.setdefault(key, []).append(acc)
                continue
            # Steps come in increasing order: this point is its bucket's last, and its latest in
            # (time, step) order unless its time is earlier.
            acc[_N] += 1
            acc[_LAST] = step
            acc[_LAST_VALUE] = value
            if value < acc[_MIN]:
                acc[_MIN] = value
            elif value > acc[_MAX]:
                acc[_MAX] = value
            if time_us >= acc[_TIME_US]:
                acc[_TIME_STEP], acc[_TIME_VALUE], acc[_TIME_US] = step, value, time_us
    return narrow, stale


def _widen(accs: list[list], ratio: int) -> list[list]:
    """Accumulators of buckets `ratio` times wider, from narrower ones in bucket order."""
    wider: list[list] = []
    for acc in accs:
        bucket = acc[_BUCKET] // ratio
        if not wider or wider[-1][_BUCKET] != bucket:
            wider.append([bucket, *acc[1:]])
            continue
        parent = wider[-1]
        parent[_N] += acc[_N]
        parent[_LAST] = acc[_LAST]
        parent[_LAST_VALUE] = acc[_LAST_VALUE]
        parent[_MIN] = min(parent[_MIN], acc[_MIN])
        parent[_MAX] = max(parent[_MAX], acc[_MAX])
        if (acc[_TIME_US], acc[_TIME_STEP]) > (parent[_TIME_US], parent[_TIME_STEP]):
            parent[_TIME_STEP], parent[_TIME_VALUE], parent[_TIME_US] = acc[_TIME_STEP], acc[_TIME_VALUE], acc[_TIME_US]
    return wider


def _rollups_param(narrow: dict[str, list[list]], sealed: dict[str, int | None], *, narrowest: bool) -> str | None:
    """%(rollups)s of _ROLLUPS_CTE: the new numbers' 32-step buckets (`narrowest`), and their
    wider buckets that are sealed (below the one holding the key's `sealed` step); None when there
    are none."""
    rollups: dict[str, list] = {name: [] for name in ("key", "width", "bucket", *COLUMNS)}
    keys, widths, *columns = rollups.values()
    for key, accs in narrow.items():
        for width in WIDTHS if narrowest else WIDTHS[1:]:
            if width == WIDTHS[0]:
                buckets = accs
            elif not sealed.get(key) or accs[0][_FIRST] >= sealed[key] // width * width:
                break  # no new number in a sealed bucket of this width, so neither of the wider ones
            else:
                buckets = [acc for acc in _widen(accs, width // WIDTHS[0]) if acc[_BUCKET] < sealed[key] // width]
            keys += [key] * len(buckets)
            widths += [width] * len(buckets)
            for column, values in zip(columns, zip(*buckets, strict=True), strict=True):
                column += values
    return json.dumps(rollups) if keys else None


def _ranges(pairs: Iterable[tuple[int, int, int]]) -> dict[str, list[int]]:
    """(series id, lo, hi) bucket ranges, overlapping and adjacent ones of a series joined (a
    bucket must be written once), as the column arrays of _RANGES_FROM_CHILDREN."""
    joined: list[list[int]] = []
    for series_id, lo, hi in sorted(pairs):
        if joined and joined[-1][0] == series_id and lo <= joined[-1][2]:
            joined[-1][2] = max(joined[-1][2], hi)
        elif lo < hi:
            joined.append([series_id, lo, hi])
    return {"ids": [r[0] for r in joined], "lo": [r[1] for r in joined], "hi": [r[2] for r in joined]}


def _to_seal(sealed: dict[str, int | None], narrow: dict[str, list[list]]) -> dict[str, int]:
    """Key -> step to seal up to, for the keys whose new numbers take them SEAL_EVERY steps past
    their sealed step (or as far from none): their last new step."""
    return {
        key: accs[-1][_LAST]
        for key, accs in narrow.items()
        if accs[-1][_LAST] // SEAL_EVERY > (sealed.get(key) or 0) // SEAL_EVERY
    }


def _read_steps(cursor, sql: str, params: dict[str, Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """Steps read back (step, values) in step order, and their times in µs."""
    cursor.execute(sql, params)
    fetched = cursor.fetchall()
    return [{"step": step, "values": json.loads(values)} for step, _, values in fetched], [t for _, t, _ in fetched]


def _recompute_narrow(cursor, run: Run, stale: set[tuple[str, int]]) -> None:
    """Stale 32-step buckets (key, bucket) again from their steps: deleted, then merged anew (with
    the same aggregation as a batch's numbers)."""
    params = {"run": run.pk, "stale": json.dumps({"key": [k for k, _ in stale], "bucket": [b for _, b in stale]})}
    cursor.execute(_DELETE_NARROW, params)
    buckets = sorted({bucket for _, bucket in stale})
    rows, times = _read_steps(cursor, _STEPS_IN_BUCKETS, {"run": run.pk, "buckets": buckets})
    for row in rows:
        row["values"] = {k: v for k, v in row["values"].items() if (k, row["step"] // WIDTHS[0]) in stale}
    narrow, _ = _new_numbers(rows, times, {})
    if narrow:
        params = {"run": run.pk, "keys": list(narrow)}
        cursor.execute(_MERGE, {**params, "rollups": _rollups_param(narrow, {}, narrowest=True)})


def _recompute(
    cursor,
    run: Run,
    ids: dict[str, int],
    sealed: dict[str, int | None],
    to_seal: dict[str, int],
    stale: set[tuple[str, int]],
) -> None:
    """Recompute stale 32-step buckets from the steps; then, width by width from the width below,
    the wider buckets from the sealed step to the new one and those above a stale bucket; then
    move the sealed steps."""
    if missing := sorted({key for key, _ in stale} - set(ids)):  # keys of a moved step not in the batch
        cursor.execute("SELECT key, id FROM runs_metricseries WHERE run_id = %s AND key = ANY(%s)", [run.pk, missing])
        ids = {**ids, **dict(cursor.fetchall())}
    stale = {(key, bucket) for key, bucket in stale if key in ids}  # keys without a row: rebuild_rollups
    if stale:
        _recompute_narrow(cursor, run, stale)
    for width in WIDTHS[1:]:
        pairs = [(ids[key], (sealed.get(key) or 0) // width, step // width) for key, step in to_seal.items()]
        # Every parent of a stale bucket: rewriting an open one (from narrower ones that may be out
        # of date) is harmless, as readers take no open bucket and sealing rewrites it.
        parents = sorted({(ids[key], bucket * WIDTHS[0] // width) for key, bucket in stale})
        ranges = _ranges([*pairs, *((series_id, parent, parent + 1) for series_id, parent in parents)])
        if ranges["ids"]:
            cursor.execute(_RANGES_FROM_CHILDREN, {**ranges, "width": width})
        if parents:
            emptied = {"ids": [p[0] for p in parents], "buckets": [p[1] for p in parents], "width": width}
            cursor.execute(_DELETE_EMPTIED, emptied)
    if to_seal:
        cursor.execute(_SET_SEALED, {"ids": [ids[key] for key in to_seal], "sealed": list(to_seal.values())})


# Steps read back at a time by rebuild_rollups: ~6.5 MB of values.
_REBUILD_CHUNK = 4096


def _rebuild(cursor, run_id: int) -> None:
    """A run's series and rollups from its steps, read back in chunks and aggregated as batches
    are, every bucket of every width merged; all sealed up to each key's last step."""
    cursor.execute(_DELETE_RUN_ROLLUPS, {"run": run_id})
    cursor.execute("DELETE FROM runs_metricseries WHERE run_id = %s", [run_id])
    after, last, ids = -1, {}, {}
    while True:
        rows, times = _read_steps(cursor, _STEPS_AFTER, {"run": run_id, "after": after, "limit": _REBUILD_CHUNK})
        if not rows:
            break
        narrow, _ = _new_numbers(rows, times, {})
        beyond = dict.fromkeys(narrow, 1 << 62)  # as if sealed past every step: every width is merged
        params = {"run": run_id, "keys": _keys(rows)}
        cursor.execute(_MERGE, {**params, "rollups": _rollups_param(narrow, beyond, narrowest=True)})
        ids.update(cursor.fetchone()[0] or {})
        last.update({key: accs[-1][_LAST] for key, accs in narrow.items()})
        after = rows[-1]["step"]
    if last:
        cursor.execute(_SET_SEALED, {"ids": [ids[key] for key in last], "sealed": list(last.values())})


def rebuild_rollups(run: Run) -> None:
    """Recompute a run's series and rollups from its steps: for steps written around the store.

    In the caller's transaction, which should hold the run's row lock (a write of the run's steps
    meanwhile would be lost from its rollups). The steps are read back and aggregated in Python
    (87 s for 1,000,000 steps of 40 keys on 2 cores, bench/ingest.py); in SQL, jsonb_each and
    array_agg(... ORDER BY) over the same steps ran for over 15 minutes."""
    with connection.cursor() as cursor:
        _rebuild(cursor, run.pk)


def write_metric_steps(run: Run, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write a batch of steps {"step": int, "time": epoch seconds, "values": {key: float | None}}
    (None: undefined, e.g. NaN) and keep the run's series and rollups exact; returns the steps as
    written, one per step in step order (later entries for a step win, values key by key).

    The caller holds the transaction and the run's row lock."""
    rows = _merge_entries(steps)
    if not rows:
        return rows
    keys = _keys(rows)
    times = [_time_us(row["time"]) for row in rows]
    # Taken as all new: the 32-step buckets, with the steps, in one statement.
    narrow, stale = _new_numbers(rows, times, {})
    params = {"run": run.pk, "keys": keys, "rows": json.dumps(rows)}
    with connection.cursor() as cursor:
        cursor.execute(_WRITE_STEPS, {**params, "rollups": _rollups_param(narrow, {}, narrowest=True)})
        rolled, had_steps, old, ids, sealed = cursor.fetchone()
        if had_steps and not rolled:
            # Its earlier steps were written around the store: roll them up with this batch's
            # (unless there is nothing to roll up yet).
            if keys:
                _rebuild(cursor, run.pk)
            return rows
        sealed = sealed or {}
        if old is not None:
            # Some steps existed (and nothing was merged): what is new, and what changed.
            narrow, stale = _new_numbers(rows, times, {step: (values, moved) for step, values, moved in old})
            cursor.execute(_MERGE, {**params, "rollups": _rollups_param(narrow, sealed, narrowest=True)})
            ids = cursor.fetchone()[0]
        elif wider := _rollups_param(narrow, sealed, narrowest=False):
            # New numbers in sealed wider buckets (steps reported out of order).
            cursor.execute(_MERGE, {**params, "rollups": wider})
        to_seal = _to_seal(sealed, narrow)
        if stale or to_seal:
            _recompute(cursor, run, ids or {}, sealed, to_seal, stale)
    return rows


def record_metric_steps(run: Run, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """write_metric_steps, and the run's summary fields saved from what it wrote: for a writer that
    saves nothing else of the run (the ingest folds them into its own save)."""
    rows = write_metric_steps(run, steps)
    if rows:
        run.save(update_fields=update_summary(run, rows))
    return rows


def update_summary(run: Run, rows: list[dict[str, Any]]) -> list[str]:
    """Update the run's summary (each key's latest value), last step and metric keys in memory from
    written rows; returns the fields to save.

    The SFT cold start's metrics (trainer.contract.is_sft_metric) count their own steps, which come
    before the RL steps: they join the summary as they come and never move the run's last step."""
    keys = set(run.metric_keys)
    for row in rows:
        keys.update(row["values"])
        values = {key: value for key, value in row["values"].items() if not is_sft_metric(key)}
        if len(values) < len(row["values"]):
            run.summary = {**run.summary, **{k: v for k, v in row["values"].items() if k not in values}}
            if not values:
                continue
        if run.last_step is None or row["step"] >= run.last_step:
            run.last_step = row["step"]
            run.summary = {**run.summary, **values}
    run.metric_keys = sorted(keys)
    return ["summary", "last_step", "metric_keys"]
