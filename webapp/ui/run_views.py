"""The run page: status, timings, error, config (with fork), cancel/resume, evaluate, live charts and logs."""

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from trainer.config import ConfigError
from trainer.contract import SFT_METRIC_PREFIX
from trainer.protocols import headline_metrics
from webapp.runs.evaluations import run_evaluate
from webapp.runs.events import run_timings
from webapp.runs.lifecycle import run_dir
from webapp.runs.metric_store import run_first_step_time, run_metric_singles
from webapp.runs.models import ACTIVE_STATUSES, Run, RunStatus
from webapp.runs.selectors import queue_positions
from webapp.runs.services import run_cancel, run_fork, run_resume
from webapp.runs.transitions import IllegalTransition
from webapp.runs.verl_runs import is_verl_run, run_launch_script, verl_view
from webapp.ui.config_table import config_rows
from webapp.ui.external_runs import config_protocol, external_headline, is_external, params_tree
from webapp.ui.run_evaluations import EvaluateForm, evaluate_section, evaluated, evaluation_facts

LOG_LINES_SHOWN = 200
# Buckets per series on the charts: a chart is about 400 px wide, so still finer than a pixel.
CHART_POINTS = 500


def visible_run(request: HttpRequest, run_id: int) -> Run:
    return get_object_or_404(
        Run.objects.visible_to(request.user).select_related("experiment", "owner", "parent", "mlflow"), pk=run_id
    )


def _duration(run: Run) -> str:
    """How long its trainer has run: from its first report (started_at) to the end or now. A run
    that finished without one (failed or cancelled in the queue, lost before its trainer reported)
    never ran."""
    if run.started_at is None:
        return "never started" if run.is_finished else "not started yet"
    seconds = int(((run.finished_at or timezone.now()) - run.started_at).total_seconds())
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min {seconds:02d} s" if hours else f"{minutes} min {seconds:02d} s"


def _headline(run: Run) -> list[str]:
    """The metrics the page draws first: a tirlab run's headline for its protocol; an external run's own."""
    if is_external(run):
        return external_headline(list(run.metric_keys))
    return list(headline_metrics(config_protocol(run)))


def _render(
    request: HttpRequest,
    run: Run,
    *,
    fork: dict[str, Any] | None = None,
    evaluate: EvaluateForm | None = None,
    status: int = 200,
) -> HttpResponse:
    lines = list(run.log_lines.order_by("-time", "-id")[:LOG_LINES_SHOWN])[::-1]
    queue_position = queue_positions().get(run.pk) if run.status == RunStatus.QUEUED and run.managed else None
    page = {
        "runId": run.pk,
        "status": run.status,
        "lastStep": run.last_step,
        "metricKeys": list(run.metric_keys),
        # Keys logged once: values in the summary row above the charts, not charts of one point.
        "singles": [{"key": p.key, "step": p.step, "value": p.value} for p in run_metric_singles(run=run)],
        # Drawn first and prefetched; with the statuses that can still change, what the page's JS
        # knows of the trainer <-> dashboard contract.
        "headline": _headline(run),
        "activeStatuses": list(ACTIVE_STATUSES),
        "maxPoints": CHART_POINTS,
        # 0 on the time axis: the first RL step's time (before any, the SFT's rows are not it).
        "firstStepTime": run_first_step_time(run) if run.last_step is not None else None,
        # Metrics on the SFT cold start's own step axis (trainer.contract.is_sft_metric).
        "sftPrefix": SFT_METRIC_PREFIX,
        # The timings the page keeps current (Duration counts on from started_at while the run runs).
        "timings": run_timings(run),
        "lastLogId": lines[-1].pk if lines else 0,
        "runUrl": f"/api/v1/runs/{run.pk}/",
        "metricsUrl": f"/api/v1/runs/{run.pk}/metrics/",
        "logsUrl": f"/api/v1/runs/{run.pk}/logs/",
        "wsPath": f"/ws/runs/{run.pk}/",
        "rolloutsUrl": f"/runs/{run.pk}/rollouts/",
    }
    external = is_external(run)
    tags = run.mlflow.tags if external and hasattr(run, "mlflow") else {}
    context = {
        "run": run,
        "external": external,
        "params_tree": params_tree(run.config) if external else [],
        "mlflow_tags": sorted((k, v) for k, v in tags.items() if k != "mlflow.loggedArtifacts"),
        "logged_by": tags.get("mlflow.source.name", ""),
        "mlflow_user": run.mlflow.user_id if external and hasattr(run, "mlflow") else "",
        "queue_position": queue_position,
        "duration": _duration(run),
        "config_rows": [] if external else config_rows(run.config),
        "sources_json": json.dumps(run.sources, indent=2, sort_keys=True) if run.sources else "",
        "summary_rows": sorted(run.summary.items()),
        "log_lines": lines,
        "log_lines_total": run.log_lines.count(),
        # tirlab neither stops nor restarts a run another trainer logs: its process is not tirlab's.
        "can_cancel": run.status in ACTIVE_STATUSES and not external,
        "can_resume": run.is_finished and bool(run.checkpoint_path) and not external,
        # A verl run: verl's command with every override, the launch script, and whether verl has gone quiet.
        "verl": verl_view(run, out_dir=str(run_dir(run))) if is_verl_run(run) else None,
        "fork": fork or {"name": f"{run.name} (fork)", "overrides": "{\n  \n}", "errors": []},
        # A checkpoint of the run (or the model it starts from) to evaluate, and its evaluations; on an
        # evaluation's own page, what it evaluates.
        "evaluate": evaluate_section(run, request.user, evaluate),
        "evaluation": evaluation_facts(run),
        "page": page,
    }
    # The server's clock as it answers, which the page counts Duration by.
    page["now"] = timezone.now().isoformat()
    return render(request, "ui/run_detail.html", context, status=status)


@login_required
@require_GET
def run_verl_script(request: HttpRequest, run_id: int) -> HttpResponse:
    """A verl run as a bash script for a cluster tirlab does not manage (trainer.verl.command.launch_script)."""
    run = visible_run(request, run_id)
    if not is_verl_run(run):
        return HttpResponse(
            "This run's engine is not verl: it has no verl launch script.\n", status=404, content_type="text/plain"
        )
    response = HttpResponse(run_launch_script(run), content_type="text/x-shellscript; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="tirlab-run-{run.pk}-verl.sh"'
    return response


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    return _render(request, visible_run(request, run_id))


def _wants_json(request: HttpRequest) -> bool:
    """The run page's script asks for JSON (and stays on the page); a plain form post gets a redirect."""
    return request.headers.get("Accept", "").startswith("application/json")


@login_required
@require_POST
def run_cancel_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """Cancel the run, answered as the form was sent: JSON with the run's status and timings for the
    run page's script (which shows "cancelling…" meanwhile), a redirect to the run page without it."""
    run = visible_run(request, run_id)
    try:
        run_cancel(run=run)
    except IllegalTransition as exc:
        message, code = f"Run #{run.pk} is {exc.current}; it cannot be cancelled.", 409
        run.refresh_from_db()
    else:
        message, code = f"Run #{run.pk} cancelled.", 200
    if _wants_json(request):
        state = {"status": run.status, "error": run.error, **run_timings(run), "message": message}
        return JsonResponse(state, status=code)
    (messages.success if code == 200 else messages.error)(request, message)
    return redirect("run-detail", run_id=run.pk)


@login_required
@require_POST
def run_resume_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = visible_run(request, run_id)
    try:
        new_run, _ = run_resume(run=run, user=request.user)
    except ConfigError as exc:
        for field_messages in exc.errors.values():
            for message in field_messages:
                messages.error(request, message)
        return redirect("run-detail", run_id=run.pk)
    messages.success(request, f"Run #{new_run.pk} resumes #{run.pk} from its checkpoint.")
    return redirect("run-detail", run_id=new_run.pk)


def _parse_overrides(text: str) -> tuple[dict[str, Any] | None, str]:
    if not text.strip():
        return {}, ""
    try:
        overrides = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    if not isinstance(overrides, dict):
        return None, 'must be a JSON object, e.g. {"rollout": {"group_size": 8}}'
    return overrides, ""


@login_required
@require_POST
def run_fork_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = visible_run(request, run_id)
    name = request.POST.get("name", "").strip()[:200]
    text = request.POST.get("overrides", "")
    form = {"name": name, "overrides": text, "errors": []}
    overrides, problem = _parse_overrides(text)
    if overrides is None:
        form["errors"] = [("overrides", problem)]
        return _render(request, run, fork=form, status=400)
    try:
        new_run, _ = run_fork(run=run, user=request.user, overrides=overrides, name=name or None)
    except ConfigError as exc:
        form["errors"] = [
            (field, message) for field, field_messages in exc.errors.items() for message in field_messages
        ]
        return _render(request, run, fork=form, status=400)
    messages.success(request, f"Run #{new_run.pk} forked from #{run.pk}.")
    return redirect(reverse("run-detail", kwargs={"run_id": new_run.pk}))


@login_required
@require_POST
def run_evaluate_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """Queue an evaluation of the run (webapp.runs.evaluations.run_evaluate) and open its page; a refusal is shown
    at its fields on the run page, with nothing created."""
    run = visible_run(request, run_id)
    form = EvaluateForm.from_post(request.POST)
    arguments = form.arguments()
    if arguments is not None:
        try:
            evaluation = run_evaluate(run=run, user=request.user, **arguments)
        except ConfigError as exc:
            form.errors.update(exc.errors)
        else:
            messages.success(request, f"Run #{evaluation.pk} evaluates #{run.pk} ({evaluated(evaluation)}).")
            return redirect("run-detail", run_id=evaluation.pk)
    return _render(request, run, evaluate=form, status=400)
