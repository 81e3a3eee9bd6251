"""run_metric_series over many keys at once: keys with different ranges and lengths, long names, missing keys."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from tests.webapp.test_metric_series import as_buckets, brute_force
from webapp.runs.metric_store import run_metric_series
from webapp.runs.models import MetricStep

pytestmark = pytest.mark.django_db

LONG_KEY = "timing_s/" + "a_very_long_metric_name_" * 3  # over PostgreSQL's 63-byte identifiers


def test_keys_read_together_match_each_alone(run_and_token):
    run, _ = run_and_token
    rng = random.Random(11)
    dense = {s: rng.random() for s in range(3000)}
    sparse = {s: rng.random() for s in range(100, 3000, 50)}  # 58 points: exact
    late = {s: rng.gauss(0, 1) for s in range(1500, 3000)}  # its own range
    long = {s: rng.random() for s in range(0, 3000, 2)}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    MetricStep.objects.bulk_create(
        MetricStep(
            run=run,
            step=s,
            time=start + timedelta(seconds=s),
            values={
                key: points[s]
                for key, points in (("accuracy", dense), ("val/accuracy", sparse), ("late", late), (LONG_KEY, long))
                if s in points
            },
        )
        for s in range(3000)
    )
    keys = ["accuracy", "val/accuracy", "late", LONG_KEY, "never"]
    together = run_metric_series(run=run, keys=keys, max_points=200)
    assert list(together) == keys
    for key, points in (("accuracy", dense), ("val/accuracy", sparse), ("late", late), (LONG_KEY, long)):
        assert as_buckets(together[key]) == pytest.approx(brute_force(points, 200)), key
        assert together[key] == run_metric_series(run=run, keys=[key], max_points=200)[key]
    assert together["never"] == {"x": [], "step": [], "min": [], "max": [], "last": [], "count": []}
    assert together["val/accuracy"]["step"] == sorted(sparse)
