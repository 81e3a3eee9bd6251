"""The results table: a paper's Table 1 read from runs. Rows are runs at a step, columns are benchmarks, cells
are one metric; the results page, its exports (webapp.runs.results_export) and GET /api/v1/results/ show it.

Which keys are a benchmark's metric is trainer.metrics.benchmarks' one rule (tirlab's bench/<benchmark>/<metric>,
verl's val-core/<data_source>/<var>/<stat>), read from each run's metric_keys; the values come from the metric
steps holding them, one query for all the runs (webapp.runs.metric_store.runs_metric_steps).

A row's step: at "last" the run's last step holding the metric on any benchmark; at "step" exactly that step;
at "best" the step best on `best_on` (a benchmark, or "mean": the mean over the run's own benchmarks, at the
steps holding all of them) by `better(metric)`, higher where neither way is, the earliest on a tie. A run with
no such step is left out of the table, saying why. The mean column is the mean of a row's cells only when the
row has every column: a mean over fewer benchmarks would not compare with the others'. A column's best value
is marked where one way is better and at least two rows have a value there, not all the same.
"""

from dataclasses import dataclass, field, replace
from statistics import fmean

from django.urls import reverse

from trainer.contract import ACCURACY
from trainer.metrics.benchmarks import BenchmarkMetric, benchmark_columns, better
from webapp.runs.metric_store import runs_metric_steps
from webapp.runs.models import Experiment, Run

AT_CHOICES = ("last", "step", "best")
MEAN = "mean"
MAX_RUNS = 100

Errors = dict[str, list[str]]


class ResultsError(Exception):
    """What of a results query cannot be read, by field."""

    def __init__(self, errors: Errors) -> None:
        super().__init__(errors)
        self.errors = errors


@dataclass(frozen=True)
class ResultsQuery:
    metric: str | None
    at: str = "last"
    step: int | None = None
    best_on: str | None = None


@dataclass(frozen=True)
class ResultsRow:
    """A run at a step: its metric per benchmark there, and their mean when it has every column."""

    run_id: int
    name: str
    url: str
    step: int
    last_step: int
    cells: dict[str, float]
    mean: float | None = None

    @property
    def label(self) -> str:
        """The run's name, with the step where the row is not at the run's last step (as a paper names a checkpoint)."""
        return self.name if self.step == self.last_step else f"{self.name} · step {self.step}"


@dataclass(frozen=True)
class LeftOut:
    """A chosen run that has no row, and why."""

    run_id: int
    name: str
    reason: str


@dataclass(frozen=True)
class ResultsTable:
    metric: str | None  # None: the runs report no benchmark metric
    at: str
    step: int | None
    best_on: str | None
    metrics: list[str]  # what the runs report on benchmarks: the metric picker's choices
    benchmarks: list[str]  # the benchmarks the runs report the metric on: best_on's choices, with "mean"
    columns: list[str] = field(default_factory=list)
    rows: list[ResultsRow] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    best: dict[str, float] = field(default_factory=dict)  # column (or "mean") -> its best value

    @property
    def better(self) -> str | None:
        return better(self.metric) if self.metric else None

    @property
    def has_mean(self) -> bool:
        """A mean column says something only over two benchmarks or more."""
        return len(self.columns) >= 2

    def is_best(self, column: str, value: float | None) -> bool:
        return value is not None and self.best.get(column) == value


def results_runs(
    *, user, run_ids: list[int] | None = None, experiment_id: int | None = None
) -> tuple[list[Run], Errors]:
    """The runs a table is of, in order (as listed; an experiment's in the order they were made), and what of the
    choice could not be taken, by field: runs or an experiment the user may not see, both given, more runs than
    MAX_RUNS (then the first MAX_RUNS are the runs)."""
    errors: Errors = {}
    visible = Run.objects.visible_to(user)
    if run_ids:
        if experiment_id is not None:
            errors["experiment"] = ["choose runs or an experiment, not both"]
        if len(run_ids) > MAX_RUNS:
            errors["runs"] = [f"at most {MAX_RUNS} runs fit a table"]
            run_ids = run_ids[:MAX_RUNS]
        found = {run.pk: run for run in visible.filter(pk__in=run_ids)}
        hidden = [pk for pk in run_ids if pk not in found]
        if hidden:
            listed = ", ".join(f"#{pk}" for pk in hidden)
            errors.setdefault("runs", []).append(
                f"run {listed} is not visible to you or does not exist"
                if len(hidden) == 1
                else f"runs {listed} are not visible to you or do not exist"
            )
        return [found[pk] for pk in dict.fromkeys(run_ids) if pk in found], errors
    if experiment_id is None:
        return [], errors
    if not Experiment.objects.visible_to(user).filter(pk=experiment_id).exists():
        return [], {"experiment": [f"experiment {experiment_id} is not visible to you or does not exist"]}
    runs = list(visible.filter(experiment_id=experiment_id).order_by("created_at", "id")[: MAX_RUNS + 1])
    if len(runs) > MAX_RUNS:
        errors["experiment"] = [
            f"experiment {experiment_id} has more runs than a table holds ({MAX_RUNS}): choose some"
        ]
    return runs[:MAX_RUNS], errors


def _columns(runs: list[Run]) -> dict[int, dict[BenchmarkMetric, str]]:
    return {run.pk: benchmark_columns(run.metric_keys) for run in runs}


def default_metric(metrics: list[str]) -> str | None:
    """accuracy where the runs have it, else their first avg@k, else the first in order."""
    if ACCURACY in metrics:
        return ACCURACY
    return next((metric for metric in metrics if metric.startswith("avg@")), metrics[0] if metrics else None)


def results_query(
    *, runs: list[Run], metric: str | None, at: str = "last", step: int | None = None, best_on: str | None = None
) -> tuple[ResultsQuery, Errors]:
    """The query as asked, each field that cannot be read replaced by its default, and what was wrong, by field."""
    columns = _columns(runs)
    metrics = sorted({cell.metric for cells in columns.values() for cell in cells})
    errors: Errors = {}
    if metric is not None and metric not in metrics:
        reported = ", ".join(metrics) if metrics else "no benchmark metric"
        errors["metric"] = [f"no run here reports {metric!r} on a benchmark; they report {reported}"]
        metric = None
    metric = metric or default_metric(metrics)
    if at not in AT_CHOICES:
        errors["at"] = [f"{at!r} is not one of {', '.join(AT_CHOICES)}"]
        at = "last"
    if step is not None and step < 0:
        errors["step"] = ["a step is 0 or more"]
        step = None
    if at == "step" and step is None:
        errors.setdefault("step", ["a row at a step needs the step (step=)"])
        at = "last"
    if at != "best":
        return ResultsQuery(metric, at, step if at == "step" else None), errors
    benchmarks = {cell.benchmark for cells in columns.values() for cell in cells if cell.metric == metric}
    if best_on not in (None, MEAN, *benchmarks):
        listed = ", ".join([MEAN, *sorted(benchmarks)])
        errors["best_on"] = [f"{best_on!r} is not a benchmark these runs report {metric} on; choose one of {listed}"]
        best_on = None
    return ResultsQuery(metric, at, None, best_on or MEAN), errors


def _best_step(
    steps: list[tuple[int, dict[str, float]]], *, best_on: str, benchmarks: set[str], way: str | None
) -> tuple[int, dict[str, float]] | None:
    scored = []
    for step, cells in steps:
        if best_on == MEAN:
            score = fmean(cells.values()) if set(cells) == benchmarks else None
        else:
            score = cells.get(best_on)
        if score is not None:
            scored.append((-score if way == "lower" else score, -step, step, cells))
    return max(scored)[2:] if scored else None


def _row_step(
    steps: list[tuple[int, dict[str, float]]], query: ResultsQuery, benchmarks: set[str]
) -> tuple[int, dict[str, float]] | None:
    if not steps:
        return None
    if query.at == "last":
        return steps[-1]
    if query.at == "step":
        return next(((step, cells) for step, cells in steps if step == query.step), None)
    return _best_step(steps, best_on=query.best_on or MEAN, benchmarks=benchmarks, way=better(query.metric or ""))


def _reason(query: ResultsQuery, *, reports: bool) -> str:
    if not reports:
        return f"reports no {query.metric} on a benchmark"
    if query.at == "step":
        return f"has no {query.metric} at step {query.step}"
    if query.at == "best" and query.best_on != MEAN:
        return f"has no {query.metric} on {query.best_on}"
    if query.at == "best":
        return f"has no step with {query.metric} on all its benchmarks"
    return f"logged no number for {query.metric}"


def _best(rows: list[ResultsRow], columns: list[str], way: str | None) -> dict[str, float]:
    if way is None:
        return {}
    pick = min if way == "lower" else max
    best = {}
    for column in [*columns, MEAN]:
        values = [row.mean if column == MEAN else row.cells.get(column) for row in rows]
        present = [value for value in values if value is not None]
        # A column where every row ties has no best row: marking them all says nothing.
        if len(present) >= 2 and len(set(present)) > 1:
            best[column] = pick(present)
    return best


def results_table(
    *, runs: list[Run], metric: str | None, at: str = "last", step: int | None = None, best_on: str | None = None
) -> ResultsTable:
    """The table of `runs` (in that order) on `metric` (None: default_metric of what they report), each row at the
    step `at` says (module docstring). Raises ResultsError on a query results_query cannot read as asked."""
    query, errors = results_query(runs=runs, metric=metric, at=at, step=step, best_on=best_on)
    if errors:
        raise ResultsError(errors)
    columns = _columns(runs)
    metrics = sorted({cell.metric for cells in columns.values() for cell in cells})
    keys = {
        run.pk: {cell.benchmark: key for cell, key in columns[run.pk].items() if cell.metric == query.metric}
        for run in runs
    }
    benchmarks = sorted({benchmark for run_keys in keys.values() for benchmark in run_keys})
    table = ResultsTable(query.metric, query.at, query.step, query.best_on, metrics, benchmarks)
    if query.metric is None:
        return table
    wanted = sorted({key for run_keys in keys.values() for key in run_keys.values()})
    steps = runs_metric_steps(runs=[run for run in runs if keys[run.pk]], keys=wanted)
    rows: list[ResultsRow] = []
    for run in runs:
        run_steps = [
            (number, {benchmark: values[key] for benchmark, key in keys[run.pk].items() if key in values})
            for number, values in steps.get(run.pk, [])
        ]
        run_steps = [(number, cells) for number, cells in run_steps if cells]
        chosen = _row_step(run_steps, query, set(keys[run.pk]))
        if chosen is None:
            table.left_out.append(LeftOut(run.pk, run.name, _reason(query, reports=bool(keys[run.pk]))))
            continue
        url = reverse("run-detail", args=[run.pk])
        rows.append(ResultsRow(run.pk, run.name, url, chosen[0], run_steps[-1][0], chosen[1]))
    table.columns.extend(sorted({benchmark for row in rows for benchmark in row.cells}))
    if table.has_mean:
        complete = len(table.columns)
        rows = [replace(row, mean=fmean(row.cells.values())) if len(row.cells) == complete else row for row in rows]
    table.rows.extend(rows)
    table.best.update(_best(rows, table.columns, table.better))
    return table
