"""MLflow's search_runs over the runs a caller may see (theirs; staff: all), MLflow runs and tirlab's own.

Filters and orderings are MLflow's (webapp.tracking.search): attributes (run_id, run_name, status,
user_id, start_time, end_time, experiment_id, lifecycle_stage), params, tags, and metrics at their
latest step. The default order is MLflow's: newest start first, then run id.
"""

from __future__ import annotations

from typing import Any

from webapp.runs.models import Run
from webapp.tracking.entities import DEFAULT_EXPERIMENT_ID, run_info_json, run_json, run_params, run_tags
from webapp.tracking.errors import invalid
from webapp.tracking.metrics import latest_metrics
from webapp.tracking.search import matches, page, parse_filter, parse_order_by, sort_rows

SEARCH_MAX_RESULTS = 50_000  # MLflow's SEARCH_MAX_RESULTS_THRESHOLD
ATTRIBUTES = (
    "run_id",
    "run_name",
    "status",
    "user_id",
    "start_time",
    "end_time",
    "experiment_id",
    "lifecycle_stage",
    "artifact_uri",
)


class _Row:
    """A run with what filters and orderings read of it, computed once."""

    def __init__(self, run: Run, metric_keys: list[str]):
        self.run = run
        self.info = run_info_json(run)
        self.params = run_params(run)
        self.tags = run_tags(run)
        self.metrics = {m["key"]: m["value"] for m in latest_metrics(run, metric_keys)} if metric_keys else {}

    def value(self, entity: str, key: str) -> Any:
        if entity == "attributes":
            if key not in ATTRIBUTES:
                raise invalid(f"Invalid attribute key '{key}': one of {', '.join(ATTRIBUTES)}.")
            return self.info.get(key)
        if entity == "params":
            return self.params.get(key)
        if entity == "tags":
            return self.tags.get(key)
        value = self.metrics.get(key)
        return None if value == "NaN" else value


def search_runs(
    user,
    *,
    experiment_ids: list[str],
    filter_text: str,
    view_type: str,
    max_results: int,
    order_by: list[str],
    page_token: str,
) -> tuple[list[dict[str, Any]], str]:
    if not 1 <= max_results <= SEARCH_MAX_RESULTS:
        raise invalid(f"Invalid value {max_results} for parameter 'max_results': 1 to {SEARCH_MAX_RESULTS}.")
    comparisons = parse_filter(filter_text)
    orderings = parse_order_by(order_by) or parse_order_by(["attributes.start_time DESC"])
    runs = Run.objects.visible_to(user).select_related("experiment", "owner", "mlflow")
    if view_type == "ACTIVE_ONLY":
        runs = runs.filter(archived=False)
    elif view_type == "DELETED_ONLY":
        runs = runs.filter(archived=True)
    ids = [int(i) for i in experiment_ids if i.isdigit() and i != DEFAULT_EXPERIMENT_ID]
    if DEFAULT_EXPERIMENT_ID in experiment_ids:
        runs = runs.filter(experiment_id__in=ids) | runs.filter(experiment__isnull=True)
    else:
        runs = runs.filter(experiment_id__in=ids)
    keys = sorted(
        {c.key for c in comparisons if c.entity == "metrics"} | {o.key for o in orderings if o.entity == "metrics"}
    )
    rows = [_Row(run, keys) for run in runs]
    rows = [row for row in rows if all(matches(c, row.value(c.entity, c.key)) for c in comparisons)]
    rows = sort_rows(rows, [*orderings, *parse_order_by(["attributes.run_id DESC"])], lambda r, e, k: r.value(e, k))
    chunk, token = page(rows, max_results=max_results, token=page_token)
    return [run_json(row.run, latest_metrics(row.run)) for row in chunk], token
