"""The metric series' one home: the only code that knows how a run's metrics are laid out.

runs_metricstep holds one row per (run, step) with all values of that step (MetricStep);
runs_metricseries and runs_metricrollup hold, for each key of a run, the rollups that let a chart
read a long series without its steps (MetricSeries, MetricRollup). Every writer of metrics (the
trainer's ingest, the MLflow API) writes through `writes`, every reader (the metrics API, the run
and runs pages, the MLflow API) reads through `charts` or `points`; nothing else in webapp touches
those tables (tests/webapp/test_layers.py holds it).
"""

from webapp.runs.metric_store.charts import XAxis, run_metric_series, run_metric_series_scan
from webapp.runs.metric_store.layout import WIDTHS
from webapp.runs.metric_store.points import (
    MetricPoint,
    run_first_step_time,
    run_first_steps,
    run_metric_history,
    run_metric_latest,
    run_metric_rows,
    run_metric_singles,
    runs_metric_steps,
)
from webapp.runs.metric_store.writes import (
    SEAL_EVERY,
    rebuild_rollups,
    record_metric_steps,
    update_summary,
    write_metric_steps,
)

__all__ = [
    "SEAL_EVERY",
    "WIDTHS",
    "MetricPoint",
    "XAxis",
    "rebuild_rollups",
    "record_metric_steps",
    "run_first_step_time",
    "run_first_steps",
    "run_metric_history",
    "run_metric_latest",
    "run_metric_rows",
    "run_metric_series",
    "run_metric_series_scan",
    "run_metric_singles",
    "runs_metric_steps",
    "update_summary",
    "write_metric_steps",
]
