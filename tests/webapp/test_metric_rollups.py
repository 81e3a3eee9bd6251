"""The metric store's rollups: series read from them equal a brute-force computation over the points
(random series: gaps, nulls, out-of-order and re-reported steps, changed values and times, several
keys, keys with spaces, colons and unicode); steps written around the store; the metric-key rule."""

import math
import random
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from pydantic import TypeAdapter, ValidationError

from trainer.contract import MAX_METRIC_KEY, MetricKey, is_metric_key
from webapp.runs.metric_store import (
    SEAL_EVERY,
    WIDTHS,
    rebuild_rollups,
    run_metric_series,
    run_metric_series_scan,
    run_metric_singles,
    write_metric_steps,
)
from webapp.runs.models import MetricRollup, MetricSeries, MetricStep, Run

pytestmark = pytest.mark.django_db

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
KEYS = ["accuracy", "profiling/Time taken: GRPOTrainer._prepare_inputs", "val-core/точность/mean@1", "x" * 70]
FIELDS = ("x", "step", "min", "max", "last", "count")


def time_us(seconds: float) -> int:
    """to_timestamp's microseconds, as PostgreSQL rounds them."""
    return round((seconds - 946_684_800.0) * 1_000_000) + 946_684_800_000_000


class Model:
    """What the run's steps hold after each batch, in Python: step -> [time, {key: value}]."""

    def __init__(self):
        self.steps: dict[int, list] = {}

    def write(self, run: Run, batch: list[dict]) -> None:
        with transaction.atomic():
            locked = Run.objects.select_for_update().get(pk=run.pk)
            write_metric_steps(locked, batch)
        for item in batch:
            entry = self.steps.setdefault(item["step"], [item["time"], {}])
            entry[0] = item["time"]
            entry[1].update(item["values"])

    def points(self, key: str) -> dict[int, tuple[int, float]]:
        """step -> (µs, value) of the key's numbers."""
        return {
            step: (time_us(t), values[key]) for step, (t, values) in self.steps.items() if values.get(key) is not None
        }

    def t0(self) -> int:
        return time_us(self.steps[min(self.steps)][0])


def buckets_of(groups: dict[int, list[int]], points: dict, x_of) -> dict[str, list]:
    """The series of point groups: x and step of the latest point, min, max, last value, count."""
    series = {name: [] for name in FIELDS}
    for _, members in sorted(groups.items()):
        values = [points[s][1] for s in members]
        latest = max(members, key=lambda s: (x_of(s), s))
        row = (max(x_of(s) for s in members), max(members), min(values), max(values), points[latest][1], len(members))
        for name, value in zip(FIELDS, row, strict=True):
            series[name].append(value)
    return series


def clamp(value: float, top: int) -> int:
    return max(min(math.floor(value), top - 1), 0)


def cover_unit(step: int, width: int, sealed: int) -> tuple[int, int]:
    """The rollup a point is read from at `width` when the series is sealed up to `sealed`: the
    bucket of `width` if it is below the one holding `sealed`, else of the widest narrower one that
    is, else its 32-step bucket."""
    for w in reversed([w for w in WIDTHS if w <= width]):
        if w == WIDTHS[0] or step // w < sealed // w:
            return w, step // w
    raise AssertionError


def expected(points: dict[int, tuple[int, float]], max_points: int, x: str, t0: int, sealed: int) -> dict[str, list]:
    """The documented answer of run_metric_series, computed from the points (and, for the time
    axis, the series' sealed step, which decides which rollups are read)."""
    steps = sorted(points)
    seconds = {s: (points[s][0] - t0) / 1_000_000 for s in steps}
    x_of = (lambda s: float(s)) if x == "step" else seconds.get
    if len(steps) <= max_points:
        return buckets_of({s: [s] for s in steps}, points, x_of)
    first, last = steps[0], steps[-1]
    fitting = [w for w in WIDTHS if 2 * (last // w - first // w + 1) >= max_points]
    groups: dict[int, list[int]] = {}
    if not fitting:  # a pass over the steps, as before the rollups
        lo, hi = x_of(first), x_of(last)
        eps = 1.0 if x == "step" else 1e-9
        for s in steps:
            groups.setdefault(clamp((x_of(s) - lo) * max_points / (hi - lo + eps), max_points), []).append(s)
        return buckets_of(groups, points, x_of)
    width = fitting[-1]
    if x == "step":
        k = -(-(last // width - first // width + 1) // max_points)
        for s in steps:
            groups.setdefault((s // width - first // width) // k, []).append(s)
        return buckets_of(groups, points, x_of)
    units: dict[tuple[int, int], list[int]] = {}
    for s in steps:
        units.setdefault(cover_unit(s, width, sealed), []).append(s)
    lo, hi = points[first][0], points[last][0]
    for members in units.values():
        unit_time = max(points[s][0] for s in members)
        groups.setdefault(clamp((unit_time - lo) * max_points / ((hi - lo) + 0.001), max_points), []).extend(members)
    return buckets_of(groups, points, x_of)


def assert_series(run: Run, model: Model, keys: list[str], max_points: int) -> None:
    for x in ("step", "time"):
        got = run_metric_series(run=run, keys=keys, max_points=max_points, x=x)
        for key in keys:
            sealed = MetricSeries.objects.filter(run=run, key=key).values_list("sealed_step", flat=True).first()
            want = expected(model.points(key), max_points, x, model.t0(), sealed or 0)
            assert len(got[key]["x"]) <= max_points
            for name in FIELDS:
                assert got[key][name] == pytest.approx(want[name], rel=1e-12, abs=1e-9), (key, x, max_points, name)


def random_batches(
    rng: random.Random, keys: list[str], steps: list[int], size: int, *, seconds: float = 0.05
) -> list[list[dict]]:
    """The steps in batches of `size`, each key at 60% of them, 5% of its values null; a step every
    `seconds`, with jitter, or 20 steps a second at whole seconds (ties in time) when that is 1."""
    batches = []
    for i in range(0, len(steps), size):
        batch = []
        for step in steps[i : i + size]:
            values = {key: (None if rng.random() < 0.05 else rng.gauss(0, 1)) for key in keys if rng.random() < 0.6}
            when = T0 + step // 20 if seconds == 1 else T0 + step * seconds + rng.random() * 0.01
            batch.append({"step": step, "time": when, "values": values})
        batches.append(batch)
    return batches


@pytest.mark.parametrize(
    "seed, span, count, size, seconds",
    [
        (1, 40, 30, 7, 0.05),  # short: point by point
        (2, 5_000, 2_000, 100, 0.05),  # medium: 32-step rollups, and the pass over the steps
        (3, 1_000_000, 3_000, 250, 0.05),  # sparse over a million steps: every width
        (4, 300_000, 6_000, 1, 0.05),  # a step per batch
        (6, 20_000, 8_000, 500, 1),  # 20 steps a second, as MLflow's millisecond timestamps tie
    ],
)
def test_rollups_match_brute_force_on_random_series(run_and_token, seed, span, count, size, seconds):
    run, _ = run_and_token
    rng = random.Random(seed)
    model = Model()
    steps = sorted(rng.sample(range(span), count))
    for batch in random_batches(rng, KEYS, steps, size, seconds=seconds)[: 300 if size == 1 else None]:
        model.write(run, batch)
    for max_points in (5, 40, 500, 2000):
        assert_series(run, model, KEYS + ["never"], max_points)


def test_out_of_order_batches_re_reports_and_moved_times(run_and_token):
    """Steps arrive out of order (into buckets the series went past), values change, go away (null),
    come back, and steps are reported again with another time: the answers stay exact."""
    run, _ = run_and_token
    rng = random.Random(5)
    model = Model()
    keys = KEYS[:3]
    steps = sorted(rng.sample(range(200_000), 4_000))
    batches = random_batches(rng, keys, steps, 64)
    rng.shuffle(batches)
    for i, batch in enumerate(batches):
        model.write(run, batch)
        if i % 5 == 4:  # re-report some written steps: changed values, nulls, new keys, a later time
            again = []
            for step in rng.sample(sorted(model.steps), 40):
                values = {key: rng.choice([None, rng.gauss(5, 1), model.steps[step][1].get(key)]) for key in keys}
                moved = rng.random() < 0.3
                again.append(
                    {"step": step, "time": model.steps[step][0] + (rng.random() if moved else 0), "values": values}
                )
            model.write(run, again)
    for max_points in (3, 50, 700):
        assert_series(run, model, keys, max_points)


def rollup_rows(run: Run) -> list[tuple]:
    return sorted(
        MetricRollup.objects.filter(series__run=run).values_list(
            "series__key",
            "width",
            "bucket",
            *[
                "n",
                "first_step",
                "last_step",
                "time_step",
                "last_value",
                "min_value",
                "max_value",
                "time_value",
                "time_us",
            ],
        )  # fmt: skip
    )


def row_versions(run: Run) -> list:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT xmin::text FROM runs_metricstep WHERE run_id = %s UNION ALL SELECT r.xmin::text "
            "FROM runs_metricrollup r JOIN runs_metricseries s ON s.id = r.series_id WHERE s.run_id = %s",
            [run.pk, run.pk],
        )
        return sorted(row[0] for row in cursor.fetchall())


def test_a_retried_batch_changes_nothing(run_and_token):
    run, _ = run_and_token
    model = Model()
    batch = [{"step": s, "time": T0 + s, "values": {"accuracy": s / 10, "loss": None}} for s in range(300)]
    model.write(run, batch)
    rows, versions = rollup_rows(run), row_versions(run)
    model.write(run, batch)
    assert rollup_rows(run) == rows
    assert row_versions(run) == versions  # not a row rewritten
    assert_series(run, model, ["accuracy", "loss"], 20)


def test_a_step_reported_again_with_another_value_keeps_min_max_last_and_count_exact(run_and_token):
    run, _ = run_and_token
    model = Model()
    model.write(run, [{"step": s, "time": T0 + s, "values": {"accuracy": 0.5}} for s in range(600)])
    model.write(run, [{"step": 300, "time": T0 + 300, "values": {"accuracy": 9.0}}])  # a new max
    model.write(run, [{"step": 599, "time": T0 + 599, "values": {"accuracy": -1.0}}])  # the last value
    whole = run_metric_series(run=run, keys=["accuracy"], max_points=1)["accuracy"]
    assert (whole["min"], whole["max"], whole["last"], whole["count"]) == ([-1.0], [9.0], [-1.0], [600])
    model.write(run, [{"step": 300, "time": T0 + 300, "values": {"accuracy": 0.5}}])  # the max again lower
    model.write(run, [{"step": 599, "time": T0 + 599, "values": {"accuracy": None}}])  # the last one gone
    whole = run_metric_series(run=run, keys=["accuracy"], max_points=1)["accuracy"]
    assert (whole["min"], whole["max"], whole["last"], whole["step"], whole["count"]) == (
        [0.5], [0.5], [0.5], [598], [599]
    )  # fmt: skip
    assert_series(run, model, ["accuracy"], 7)


def test_steps_written_around_the_store_are_scanned_then_rolled_up_by_the_next_write(run_and_token):
    run, _ = run_and_token
    model = Model()
    rng = random.Random(9)
    around = [{"step": s, "time": T0 + s * 0.05, "values": {"accuracy": rng.random(), "a b:c": rng.random()}}
              for s in range(0, 40_000, 7)]  # fmt: skip
    MetricStep.objects.bulk_create(
        MetricStep(run=run, step=i["step"], time=datetime.fromtimestamp(i["time"], tz=UTC), values=i["values"])
        for i in around
    )
    for item in around:
        model.steps[item["step"]] = [item["time"], dict(item["values"])]
    assert not MetricSeries.objects.filter(run=run).exists()
    scanned = run_metric_series(run=run, keys=["accuracy", "a b:c"], max_points=300)
    assert scanned == run_metric_series_scan(run=run, keys=["accuracy", "a b:c"], max_points=300)
    model.write(run, [{"step": 40_001, "time": T0 + 2_001, "values": {"accuracy": 2.0}}])
    assert set(MetricSeries.objects.filter(run=run).values_list("key", flat=True)) == {"accuracy", "a b:c"}
    assert_series(run, model, ["accuracy", "a b:c"], 300)


def test_rebuild_rollups_takes_steps_written_around_a_rolled_up_run(run_and_token):
    run, _ = run_and_token
    model = Model()
    model.write(run, [{"step": s, "time": T0 + s, "values": {"accuracy": s % 7}} for s in range(1000)])
    MetricStep.objects.bulk_create(
        MetricStep(run=run, step=s, time=datetime.fromtimestamp(T0 + s, tz=UTC), values={"accuracy": -s})
        for s in range(1000, 1300)
    )
    for s in range(1000, 1300):
        model.steps[s] = [T0 + s, {"accuracy": -s}]
    with transaction.atomic():
        rebuild_rollups(Run.objects.select_for_update().get(pk=run.pk))
    assert_series(run, model, ["accuracy"], 30)
    model.write(run, [{"step": s, "time": T0 + s, "values": {"accuracy": 1.5}} for s in range(1300, 1700)])
    assert_series(run, model, ["accuracy"], 30)


def test_deleting_a_run_deletes_its_rollups(run_and_token):
    run, _ = run_and_token
    Model().write(run, [{"step": s, "time": T0 + s, "values": {"accuracy": 1.0}} for s in range(20)])
    assert MetricRollup.objects.filter(series__run=run).exists()
    run.delete()
    assert not MetricSeries.objects.exists() and not MetricRollup.objects.exists()


def test_keys_with_spaces_colons_and_unicode_through_ingest_and_the_api(run_and_token, api):
    run, token = run_and_token
    keys = ["profiling/Time taken: GRPOTrainer._prepare_inputs", "val-core/openai/gsm8k/reward/mean_at_1",
            "précision/moyenne", "pass@4", "l" * 250]  # fmt: skip
    metrics = [{"step": s, "time": T0 + s, "values": {key: s + i for i, key in enumerate(keys)}} for s in range(40)]
    response = api.post(
        f"/api/v1/runs/{run.pk}/ingest", {"metrics": metrics}, format="json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    run.refresh_from_db()
    assert set(run.metric_keys) == set(keys)
    for key in keys:
        body = api.get(f"/api/v1/runs/{run.pk}/metrics/", {"keys": key, "max_points": 8}).json()
        assert body["series"][key]["count"] == [5] * 8, key
        assert body["series"][key]["last"][-1] == 39 + keys.index(key)


ACCEPTED = [
    "accuracy",
    "pass@4",
    "val/easy:tool_call_ratio",
    "profiling/Time taken: GRPOTrainer._prepare_inputs",
    "val-core/openai/gsm8k/reward/mean_at_1",
    "précision",
    "损失/平均",
    "a b",
    "a..b",
    ".hidden",
    "a" * MAX_METRIC_KEY,
]
REFUSED = [
    "",
    "a//b",
    "../x",
    "..x",
    "..",
    ".",
    "/abs",
    "a/",
    "a/./b",
    "a/../b",
    "a" * (MAX_METRIC_KEY + 1),
    "a,b",
    "torl#2",
    'say "hi"',
    "accuracy\n",
    "val-core/openai/gsm8k/reward/mean@1!",
]


@pytest.mark.parametrize("key", ACCEPTED)
def test_mlflow_metric_names_and_tirlabs_own_are_accepted(key):
    assert is_metric_key(key)
    assert TypeAdapter(MetricKey).validate_python(key) == key


@pytest.mark.parametrize("key", REFUSED)
def test_names_mlflow_refuses_are_refused(key):
    assert not is_metric_key(key)
    with pytest.raises(ValidationError):
        TypeAdapter(MetricKey).validate_python(key)


def test_run_metric_keys_hold_250_characters():
    assert Run._meta.get_field("metric_keys").base_field.max_length == MAX_METRIC_KEY == 250


def test_a_key_longer_than_an_identifier_reads_the_same_from_rollups_and_the_scan(run_and_token):
    run, _ = run_and_token
    key = "é" * 40  # 80 bytes
    model = Model()
    model.write(run, [{"step": s, "time": T0 + s, "values": {key: math.sin(s)}} for s in range(5000)])
    assert_series(run, model, [key], 1000)  # 5000 numbers, 313 32-step buckets: the pass over the steps
    assert_series(run, model, [key], 100)  # from the rollups
    assert run_metric_series(run=run, keys=[key], max_points=6000) == run_metric_series_scan(
        run=run, keys=[key], max_points=6000
    )


def test_time_axis_starts_at_the_runs_first_step(run_and_token):
    run, _ = run_and_token
    model = Model()
    model.write(run, [{"step": 0, "time": T0, "values": {"other": 1.0}}])
    model.write(run, [{"step": s, "time": T0 + 10 + s, "values": {"accuracy": 1.0}} for s in range(1, 200)])
    series = run_metric_series(run=run, keys=["accuracy"], max_points=500, x="time")["accuracy"]
    assert series["x"][0] == 11.0
    assert_series(run, model, ["accuracy"], 10)


def test_rows_are_exact_below_the_open_bucket(run_and_token):
    """Every stored rollup that readers may take (below the bucket of its width holding the series'
    sealed step; every 32-step one) holds its points' count, first and last step."""
    run, _ = run_and_token
    rng = random.Random(3)
    model = Model()
    for batch in random_batches(rng, ["accuracy"], sorted(rng.sample(range(150_000), 5_000)), 333):
        model.write(run, batch)
    points = model.points("accuracy")
    sealed = MetricSeries.objects.get(run=run, key="accuracy").sealed_step
    assert max(points) - sealed < SEAL_EVERY
    checked = 0
    for _, width, bucket, n, first, last_step, *_rest in rollup_rows(run):
        if width != WIDTHS[0] and bucket >= sealed // width:
            continue
        members = [s for s in points if s // width == bucket]
        assert (n, first, last_step) == (len(members), min(members), max(members))
        checked += 1
    assert checked > 300


def test_the_keys_logged_once_are_found_with_their_point(run_and_token):
    run, _ = run_and_token
    model = Model()
    model.write(run, [{"step": step, "time": T0 + step, "values": {"loss": 1.0 / (step + 1)}} for step in range(50)])
    model.write(
        run,
        [
            {"step": 49, "time": T0 + 49, "values": {"train_runtime": 12.5, "nan_once": None, "twice": 1.0}},
            {"step": 40, "time": T0 + 40, "values": {"same_bucket": 3.0}},
            {"step": 41, "time": T0 + 41, "values": {"same_bucket": 4.0}},
        ],
    )
    # A re-sent step keeps one point; a second step in another 32-step bucket makes two.
    model.write(run, [{"step": 49, "time": T0 + 49, "values": {"train_runtime": 13.0}}])
    model.write(run, [{"step": 1000, "time": T0 + 1000, "values": {"twice": 2.0}}])
    singles = run_metric_singles(run=run)
    assert [(p.key, p.step, p.value) for p in singles] == [("train_runtime", 49, 13.0)]
    assert singles[0].time == datetime.fromtimestamp(T0 + 49, tz=UTC)
