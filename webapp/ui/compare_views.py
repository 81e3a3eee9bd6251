"""The compare page: chosen runs overlaid on shared metric charts, and a diff of their configs.

The whole view lives in the URL: /compare/?runs=1,2,3&metrics=accuracy,tool_call_ratio&smooth=0.6
&x=step&only_differences=1 (the form without JavaScript sends run=1&run=2&metric=… instead; both work).
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from trainer.contract import HEADLINE_METRICS
from trainer.protocols import headline_metrics
from webapp.runs.models import Run
from webapp.ui.config_table import config_diff
from webapp.ui.external_runs import config_protocol, external_headline, is_external

MAX_RUNS = 8
PICKER_RUNS = 50


def _list_param(request: HttpRequest, comma_name: str, repeated_name: str) -> list[str]:
    values = [item for value in request.GET.getlist(comma_name) for item in value.split(",")]
    values += request.GET.getlist(repeated_name)
    seen: dict[str, None] = {}
    for value in values:
        if value.strip():
            seen[value.strip()] = None
    return list(seen)


def _smoothing(text: str | None, problems: list[str]) -> float:
    if text in (None, ""):
        return 0.0
    try:
        value = float(text)
    except ValueError:
        problems.append(f"Smoothing must be a number between 0 and 0.99, not {text!r}.")
        return 0.0
    if not 0 <= value <= 0.99:
        problems.append("Smoothing must be between 0 and 0.99.")
        return min(max(value, 0.0), 0.99)
    return value


@login_required
@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    problems: list[str] = []
    ids: list[int] = []
    for token in _list_param(request, "runs", "run"):
        if token.isdigit():
            ids.append(int(token))
        else:
            problems.append(f"{token!r} is not a run id.")
    if len(ids) > MAX_RUNS:
        problems.append(f"At most {MAX_RUNS} runs can be compared; the first {MAX_RUNS} are shown.")
        ids = ids[:MAX_RUNS]
    visible = Run.objects.visible_to(request.user)
    found = {run.pk: run for run in visible.filter(pk__in=ids)}
    runs = [found[pk] for pk in ids if pk in found]
    hidden = [pk for pk in ids if pk not in found]
    if hidden:
        listed = ", ".join(f"#{pk}" for pk in hidden)
        problems.append(f"Runs {listed} are not visible to you or do not exist; they are left out.")

    all_keys = sorted({key for run in runs for key in run.metric_keys})
    metrics = _list_param(request, "metrics", "metric")
    if not metrics:
        # The headline metrics of the runs' kinds (trainer.contract: code tools, JSON calls) that they have.
        protocols = sorted({config_protocol(run) or "" for run in runs})
        headline = dict.fromkeys(key for protocol in protocols for key in headline_metrics(protocol))
        for run in runs:
            if is_external(run):  # a run logged through MLflow: what its framework logs first
                headline.update(dict.fromkeys(external_headline(list(run.metric_keys))))
        metrics = [key for key in headline if key in all_keys] or list(HEADLINE_METRICS)
    x = request.GET.get("x", "step")
    if x not in ("step", "time"):
        problems.append("The x axis is step or time; showing steps.")
        x = "step"
    smooth = _smoothing(request.GET.get("smooth"), problems)
    only_differences = request.GET.get("only_differences") in ("1", "on", "true")

    picker = list(visible.exclude(pk__in=[run.pk for run in runs]).only("pk", "name", "status")[:PICKER_RUNS])
    rows = config_diff([run.config for run in runs]) if runs else []
    page = {
        "runs": [{"id": run.pk, "name": run.name, "metricsUrl": f"/api/v1/runs/{run.pk}/metrics/"} for run in runs],
        "metrics": metrics,
        "smooth": smooth,
        "x": x,
        "onlyDifferences": only_differences,
    }
    context = {
        "runs": runs,
        "picker": picker,
        "problems": problems,
        "metrics": metrics,
        "metric_choices": sorted(set(all_keys) | set(metrics)),
        "smooth": smooth,
        "x": x,
        "only_differences": only_differences,
        "diff_rows": rows,
        "differing": sum(row["differs"] for row in rows),
        "page": page,
    }
    return render(request, "ui/compare.html", context)
