import csv
import io
import json
import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from webapp.runs.metric_store import run_metric_series
from webapp.runs.models import MetricStep

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, tzinfo=UTC)


def store(run, points: dict[int, float | None], *, key: str = "accuracy", seconds=lambda step: step) -> None:
    MetricStep.objects.bulk_create(
        MetricStep(
            run=run,
            step=step,
            time=START + timedelta(seconds=seconds(step)),
            values={} if value is None else {key: value},
        )
        for step, value in points.items()
    )
    run.metric_keys = [key]
    run.save()


def brute_force(points: dict[int, float], max_points: int) -> list[dict]:
    """Buckets over the step range, each with min, max and the value at its largest step."""
    steps = sorted(points)
    if len(steps) <= max_points:
        return [{"step": s, "min": points[s], "max": points[s], "last": points[s], "count": 1} for s in steps]
    lo, hi = steps[0], steps[-1]
    buckets: dict[int, list[int]] = {}
    for s in steps:
        buckets.setdefault(min(math.floor((s - lo) * max_points / (hi - lo + 1)), max_points - 1), []).append(s)
    return [
        {
            "step": members[-1],
            "min": min(points[s] for s in members),
            "max": max(points[s] for s in members),
            "last": points[members[-1]],
            "count": len(members),
        }
        for _, members in sorted(buckets.items())
    ]


def as_buckets(series: dict) -> list[dict]:
    return [
        {"step": s, "min": lo, "max": hi, "last": last, "count": n}
        for s, lo, hi, last, n in zip(
            series["step"], series["min"], series["max"], series["last"], series["count"], strict=True
        )
    ]


def test_long_series_matches_brute_force_buckets(run_and_token):
    run, _ = run_and_token
    rng = random.Random(7)
    # Irregular steps (gaps, like eval-only keys) and spikes that a sampler would miss.
    steps = sorted(rng.sample(range(50_000), 9_000))
    points = {s: rng.gauss(0, 1) + (25.0 if rng.random() < 0.001 else 0.0) for s in steps}
    store(run, points)
    series = run_metric_series(run=run, keys=["accuracy"], max_points=500)["accuracy"]
    assert as_buckets(series) == pytest.approx(brute_force(points, 500))
    assert len(series["step"]) <= 500
    assert max(series["max"]) == max(points.values())
    assert sum(series["count"]) == len(points)


def test_short_series_is_returned_exactly(run_and_token):
    run, _ = run_and_token
    points = {0: 0.1, 1: 0.3, 5: 0.2}
    store(run, points)
    series = run_metric_series(run=run, keys=["accuracy"], max_points=2000)["accuracy"]
    assert series["step"] == [0, 1, 5]
    assert series["last"] == series["min"] == series["max"] == [0.1, 0.3, 0.2]


def test_steps_without_the_key_are_skipped(run_and_token):
    run, _ = run_and_token
    store(run, {0: 1.0, 1: None, 2: 3.0})
    assert run_metric_series(run=run, keys=["accuracy"], max_points=10)["accuracy"]["step"] == [0, 2]


def test_time_axis_is_seconds_since_the_first_step(run_and_token):
    run, _ = run_and_token
    store(run, {s: float(s) for s in range(10)}, seconds=lambda step: 30 * step + 5)
    series = run_metric_series(run=run, keys=["accuracy"], max_points=100, x="time")["accuracy"]
    assert series["x"] == [30.0 * s for s in range(10)]


def test_time_axis_buckets_keep_min_max_last(run_and_token):
    run, _ = run_and_token
    rng = random.Random(3)
    points = {s: rng.random() for s in range(1000)}
    store(run, points, seconds=lambda step: step * 2)
    series = run_metric_series(run=run, keys=["accuracy"], max_points=10, x="time")["accuracy"]
    assert len(series["step"]) == 10
    assert min(series["min"]) == min(points.values()) and max(series["max"]) == max(points.values())
    assert series["last"][-1] == points[999]


def test_metrics_endpoint_defaults_to_all_keys(api, run_and_token):
    run, token = run_and_token
    api.post(
        f"/api/v1/runs/{run.pk}/ingest",
        json.dumps({"metrics": [{"step": s, "values": {"a": s, "b/c": -s}} for s in range(5)]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    body = api.get(f"/api/v1/runs/{run.pk}/metrics").json()
    assert set(body["series"]) == {"a", "b/c"}
    assert body["series"]["b/c"]["last"] == [0, -1, -2, -3, -4]


def test_metrics_endpoint_validates_its_parameters(api, run_and_token):
    run, _ = run_and_token
    assert api.get(f"/api/v1/runs/{run.pk}/metrics?max_points=0").status_code == 400
    assert api.get(f"/api/v1/runs/{run.pk}/metrics?x=wall").status_code == 400


def test_csv_export_streams_the_full_series(api, run_and_token):
    run, _ = run_and_token
    store(run, {s: s / 100 for s in range(3000)})
    response = api.get(f"/api/v1/runs/{run.pk}/metrics?keys=accuracy&format=csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["step", "time", "accuracy"]
    assert len(rows) == 3001
    assert rows[2999 + 1][0] == "2999" and float(rows[-1][2]) == 29.99
