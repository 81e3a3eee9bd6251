"""The runs page (/runs/): a live, searchable, sortable table of runs, with bulk compare, cancel and archive."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from webapp.runs.metric_store import run_first_steps
from webapp.runs.models import Run, RunStatus
from webapp.runs.selectors import RUN_SORTS, queue_positions, run_filter_choices, run_list
from webapp.runs.services import run_cancel, runs_set_archived
from webapp.runs.transitions import IllegalTransition
from webapp.ui.external_runs import external_model, is_external
from webapp.ui.runs_listing import PAGE_SIZE, RunListParams, run_progress


def _sort_headers(current: str) -> dict[str, dict[str, str]]:
    """Per sortable column: the sort its header link asks for (descending first) and its arrow."""
    headers = {}
    for key in RUN_SORTS:
        if current == f"-{key}":
            headers[key] = {"param": key, "arrow": " ▼"}
        elif current == key:
            headers[key] = {"param": f"-{key}", "arrow": " ▲"}
        else:
            headers[key] = {"param": f"-{key}", "arrow": ""}
    return headers


def _number(summary: dict, key: str) -> float | None:
    value = summary.get(key) if isinstance(summary, dict) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _model(run: Run) -> str:
    if is_external(run):
        return external_model(run.config)
    model = run.config.get("model", {}) if isinstance(run.config, dict) else {}
    return model.get("name_or_path", "") if isinstance(model, dict) else ""


def _rows(runs: list[Run]) -> list[dict]:
    positions = queue_positions()
    firsts = run_first_steps(runs)
    now = timezone.now()
    rows = []
    for run in runs:
        rows.append(
            {
                "run": run,
                "queue_position": positions.get(run.pk) if run.status == RunStatus.QUEUED and run.managed else None,
                "model": _model(run),
                "progress": run_progress(run, now=now, first_step=firsts.get(run.pk, 0)),
                "accuracy": _number(run.summary, "accuracy"),
                "tool_call_ratio": _number(run.summary, "tool_call_ratio"),
            }
        )
    return rows


@login_required
@require_GET
def runs_list(request: HttpRequest) -> HttpResponse:
    params = RunListParams.from_query(request.GET)
    runs = run_list(user=request.user, filters=params.filters())
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "params": params,
        "page": page,
        "rows": _rows(list(page.object_list)),
        "sorts": _sort_headers(params.sort),
        "any_runs": page.paginator.count > 0 or Run.objects.visible_to(request.user).exists(),
    }
    if request.GET.get("fragment") == "1":
        return render(request, "ui/runs_table.html", context)
    context["choices"] = run_filter_choices(user=request.user)
    return render(request, "ui/runs.html", context)


def _back(request: HttpRequest) -> HttpResponse:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("runs")
    return redirect(target)


@login_required
@require_POST
def runs_bulk(request: HttpRequest) -> HttpResponse:
    """Compare, cancel, archive or unarchive the runs ticked in the table."""
    action = request.POST.get("action", "")
    ids = [int(value) for value in request.POST.getlist("runs") if value.isdigit()]
    runs = list(Run.objects.visible_to(request.user).filter(pk__in=ids).order_by("pk"))
    if action not in ("compare", "cancel", "archive", "unarchive"):
        messages.error(request, f"Unknown action {action!r}.")
    elif not runs:
        messages.error(request, "Select at least one run first.")
    elif action == "compare":
        if len(runs) < 2:
            messages.error(request, "Select at least two runs to compare.")
        else:
            return redirect(f"/compare/?runs={','.join(str(run.pk) for run in runs)}")
    elif action == "cancel":
        cancelled, refused = 0, []
        for run in runs:
            try:
                run_cancel(run=run)
                cancelled += 1
            except IllegalTransition as exc:
                refused.append(f"#{run.pk} is {exc.current}")
        if cancelled:
            messages.success(request, f"Cancelled {cancelled} run{'s' if cancelled != 1 else ''}.")
        if refused:
            messages.error(request, "Not cancelled (already finished): " + ", ".join(refused) + ".")
    else:
        archived = action == "archive"
        changed = runs_set_archived(runs=runs, archived=archived)
        verb = "Archived" if archived else "Unarchived"
        messages.success(request, f"{verb} {changed} run{'s' if changed != 1 else ''}.")
    return _back(request)
