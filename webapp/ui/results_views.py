"""The results page: a paper's table from runs (webapp.runs.results), with its Markdown, LaTeX and CSV to copy.

The whole view lives in the URL: /results/?runs=1,2,3 (as the compare page passes them) or ?experiment=4, and
metric=, at=last|step|best, step=, best_on=. What cannot be read is said above the table, which is then shown
with that choice's default: the page never fails on its query.
"""

from dataclasses import asdict

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from trainer.contract import INT_MAX
from webapp.runs.models import Experiment
from webapp.runs.results import AT_CHOICES, MEAN, results_query, results_runs, results_table
from webapp.runs.results_export import metric_title, results_csv, results_latex, results_markdown, row_cells

AT_LABELS = {"last": "Last step", "step": "At step", "best": "Best step"}


def _whole_number(text: str, what: str, problems: list[str]) -> int | None:
    if not text:
        return None
    if text.isascii() and text.isdigit() and int(text) <= INT_MAX:
        return int(text)
    problems.append(f"{what} must be a whole number, not {text!r}.")
    return None


def _run_ids(request: HttpRequest, problems: list[str]) -> list[int]:
    tokens = [token.strip() for value in request.GET.getlist("runs") for token in value.split(",")]
    ids = []
    for token in filter(None, tokens):
        number = _whole_number(token, "A run id", problems)
        if number is not None:
            ids.append(number)
    return ids


def _caption(metric: str, at: str, step: int | None, best_on: str | None) -> str:
    where = {
        "last": "each run at its last step",
        "step": f"each run at step {step}",
        "best": f"each run at its best step on {'the mean of its benchmarks' if best_on == MEAN else best_on}",
    }[at]
    return f"{metric_title(metric)}, {where}"


@login_required
@require_GET
def results(request: HttpRequest) -> HttpResponse:
    problems: list[str] = []
    run_ids = _run_ids(request, problems)
    experiment_id = _whole_number(request.GET.get("experiment", "").strip(), "The experiment", problems)
    step = _whole_number(request.GET.get("step", "").strip(), "The step", problems)
    runs, errors = results_runs(user=request.user, run_ids=run_ids, experiment_id=experiment_id)
    query, query_errors = results_query(
        runs=runs,
        metric=request.GET.get("metric") or None,
        at=request.GET.get("at") or "last",
        step=step,
        best_on=request.GET.get("best_on") or None,
    )
    if request.GET.get("step", "").strip() and step is None:
        query_errors.pop("step", None)  # said already: the step is not a number
    for messages in (errors | query_errors).values():
        problems.extend(message[0].upper() + message[1:] + "." for message in messages)
    table = results_table(runs=runs, **asdict(query))
    rows = [{"row": row, "cells": row_cells(table, row)} for row in table.rows]
    context = {
        "problems": problems,
        "runs": runs,
        "runs_value": ",".join(str(run.pk) for run in runs) if run_ids else "",
        "experiment_id": experiment_id if not run_ids else None,
        "experiments": Experiment.objects.visible_to(request.user).order_by("name").only("pk", "name"),
        "table": table,
        "at_choices": [(at, AT_LABELS[at]) for at in AT_CHOICES],
        "rows": rows,
        "caption": _caption(table.metric, table.at, table.step, table.best_on) if table.metric else "",
        "step_value": step if step is not None else "",
        "best_on_value": table.best_on or request.GET.get("best_on") or MEAN,
        "exports": [
            ("markdown", "Markdown", results_markdown(table)),
            ("latex", "LaTeX", results_latex(table)),
            ("csv", "CSV", results_csv(table)),
        ],
    }
    return render(request, "ui/results.html", context)
