"""The MLflow tracking REST API (`<prefix>/api/2.0/mlflow/...`) and its artifact proxy, as Django views.

One view answers every endpoint: it authenticates the caller (webapp.tracking.auth), applies their
rate limit, reads the fields (query string for GET, JSON body otherwise) and calls the endpoint's
handler, which answers a dict (the response message as JSON) or raises MlflowError. Endpoints tirlab
does not offer (model registry, logged models, traces, datasets, …) answer 404 ENDPOINT_NOT_FOUND
with a message that says so, which the client reports as such and does not retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import OperationalError
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from webapp.core.unavailable import retry_after_s
from webapp.tracking import artifacts, experiments, run_search, runs
from webapp.tracking.auth import Caller, authenticated_caller, check_rate
from webapp.tracking.entities import MLFLOW_STATUSES, experiment_json, run_info_json, run_json
from webapp.tracking.errors import MlflowError, invalid
from webapp.tracking.fields import Fields, request_fields
from webapp.tracking.metrics import HISTORY_MAX_RESULTS, latest_metrics, metric_history
from webapp.tracking.samples import samples_from_upload

Handler = Callable[[Caller, Fields, HttpRequest], dict[str, Any]]
VIEW_TYPES = ("ACTIVE_ONLY", "DELETED_ONLY", "ALL")


def _run_id(fields: Fields) -> str:
    return fields.first_string("run_id", "run_uuid")


# --- experiments ---------------------------------------------------------------------------------


def get_experiment_by_name(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    experiment = experiments.experiment_by_name(caller.user, fields.string("experiment_name", required=True))
    return {"experiment": experiment_json(experiment, user=caller.user)}


def get_experiment(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    experiment = experiments.experiment_by_id(caller.user, fields.string("experiment_id", required=True))
    return {"experiment": experiment_json(experiment, user=caller.user)}


def create_experiment(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    experiment = experiments.create_experiment(
        caller.user,
        fields.string("name", required=True),
        runs.key_values(list(fields.objects("tags")), "tag", experiments.MAX_TAG_VALUE),
        fields.string("artifact_location"),
    )
    return {"experiment_id": str(experiment.pk)}


def search_experiments(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    rows, token = experiments.search_experiments(
        caller.user,
        view_type=fields.enum("view_type", VIEW_TYPES, default="ACTIVE_ONLY"),
        max_results=fields.int64("max_results", default=1000),
        filter_text=fields.string("filter"),
        order_by=fields.strings("order_by"),
        page_token=fields.string("page_token"),
    )
    return {"experiments": rows, **({"next_page_token": token} if token else {})}


def set_experiment_tag(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    experiments.set_experiment_tag(
        caller.user,
        fields.string("experiment_id", required=True),
        fields.string("key", required=True),
        fields.string("value"),
    )
    return {}


# --- runs ----------------------------------------------------------------------------------------


def create_run(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    run = runs.create_run(
        caller.user,
        experiment_id=fields.string("experiment_id", default="0"),
        user_id=fields.string("user_id"),
        start_time=fields.int64("start_time"),
        tags=runs.key_values(list(fields.objects("tags")), "tag", runs.MAX_TAG_VALUE),
        run_name=fields.string("run_name"),
    )
    return {"run": run_json(run, [])}


def get_run(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    run = runs.readable_run(caller.user, _run_id(fields))
    return {"run": run_json(run, latest_metrics(run))}


def update_run(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    run = runs.update_run(
        caller.user,
        _run_id(fields),
        status=fields.enum("status", MLFLOW_STATUSES),
        end_time=fields.int64("end_time"),
        run_name=fields.string("run_name"),
    )
    return {"run_info": run_info_json(run)}


def delete_run(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    runs.set_deleted(caller.user, fields.string("run_id", required=True), deleted=True)
    return {}


def restore_run(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    runs.set_deleted(caller.user, fields.string("run_id", required=True), deleted=False)
    return {}


def search_runs(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    rows, token = run_search.search_runs(
        caller.user,
        experiment_ids=fields.strings("experiment_ids"),
        filter_text=fields.string("filter"),
        view_type=fields.enum("run_view_type", VIEW_TYPES, default="ACTIVE_ONLY"),
        max_results=fields.int64("max_results", default=1000),
        order_by=fields.strings("order_by"),
        page_token=fields.string("page_token"),
    )
    return {"runs": rows, **({"next_page_token": token} if token else {})}


def log_batch(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    runs.log_batch(
        caller.user,
        fields.string("run_id", required=True),
        metrics=list(fields.objects("metrics")),
        params=list(fields.objects("params")),
        tags=list(fields.objects("tags")),
        body_bytes=len(request.body),
    )
    return {}


def log_metric(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    metric = {name: fields.data.get(name) for name in ("key", "value", "timestamp", "step")}
    if not fields.present("key"):
        raise invalid("Missing value for required parameter 'key'.")
    runs.log_batch(caller.user, _run_id(fields), metrics=[metric], params=[], tags=[], body_bytes=len(request.body))
    return {}


def log_param(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    param = {"key": fields.string("key", required=True), "value": fields.string("value")}
    runs.log_batch(caller.user, _run_id(fields), metrics=[], params=[param], tags=[], body_bytes=len(request.body))
    return {}


def set_tag(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    tag = {"key": fields.string("key", required=True), "value": fields.string("value")}
    runs.log_batch(caller.user, _run_id(fields), metrics=[], params=[], tags=[tag], body_bytes=len(request.body))
    return {}


def delete_tag(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    runs.delete_tag(caller.user, fields.string("run_id", required=True), fields.string("key", required=True))
    return {}


def get_metric_history(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    run = runs.readable_run(caller.user, _run_id(fields))
    max_results = fields.int64("max_results", default=HISTORY_MAX_RESULTS)
    if not 1 <= max_results <= HISTORY_MAX_RESULTS:
        raise invalid(f"Invalid value {max_results} for parameter 'max_results': 1 to {HISTORY_MAX_RESULTS}.")
    token = fields.string("page_token")
    if token and not token.isdigit():
        raise invalid(f"Invalid page_token {token!r}.")
    metrics, next_step = metric_history(
        run, fields.string("metric_key", required=True), from_step=int(token or 0), max_results=max_results
    )
    return {"metrics": metrics, **({"next_page_token": str(next_step)} if next_step is not None else {})}


def search_logged_models(caller: Caller, fields: Fields, request: HttpRequest) -> dict[str, Any]:
    # tirlab keeps no logged models, so a search finds none. The client searches before it reads a
    # `runs:/<run id>/<path>` artifact URI (the path might name a model); creating one is not offered.
    return {"models": []}


ENDPOINTS: dict[tuple[str, str], Handler] = {
    ("GET", "experiments/get-by-name"): get_experiment_by_name,
    ("GET", "experiments/get"): get_experiment,
    ("POST", "experiments/create"): create_experiment,
    ("POST", "experiments/search"): search_experiments,
    ("GET", "experiments/search"): search_experiments,
    ("POST", "experiments/set-experiment-tag"): set_experiment_tag,
    ("POST", "runs/create"): create_run,
    ("GET", "runs/get"): get_run,
    ("POST", "runs/update"): update_run,
    ("POST", "runs/delete"): delete_run,
    ("POST", "runs/restore"): restore_run,
    ("POST", "runs/search"): search_runs,
    ("POST", "runs/log-batch"): log_batch,
    ("POST", "runs/log-metric"): log_metric,
    ("POST", "runs/log-parameter"): log_param,
    ("POST", "runs/set-tag"): set_tag,
    ("POST", "runs/delete-tag"): delete_tag,
    ("GET", "metrics/get-history"): get_metric_history,
    ("POST", "logged-models/search"): search_logged_models,
}
# What the client may call that tirlab answers "not offered", by the endpoint's first segment.
NOT_OFFERED = {
    "registered-models": "the MLflow model registry",
    "model-versions": "the MLflow model registry",
    "logged-models": "logged models (mlflow.<flavor>.log_model)",
    "traces": "tracing",
    "unified-traces": "tracing",
    "datasets": "evaluation datasets",
    "scorers": "scorers",
    "prompt-optimization": "prompt optimization",
    "gateway": "the AI gateway",
    "webhooks": "webhooks",
}


def _answer(request: HttpRequest, work: Callable[[Caller], HttpResponse]) -> HttpResponse:
    try:
        caller = authenticated_caller(request)
        check_rate(caller)
        return work(caller)
    except MlflowError as exc:
        return exc.response()
    except OperationalError as exc:
        seconds = retry_after_s(exc) or 2
        error = MlflowError(
            "TEMPORARILY_UNAVAILABLE",
            "The database is busy or unreachable; nothing was written, send it again.",
            headers={"Retry-After": str(seconds)},
        )
        return error.response()


def _not_offered(request: HttpRequest, version: str, endpoint: str) -> HttpResponse:
    feature = NOT_OFFERED.get(endpoint.split("/", 1)[0])
    if feature is None and endpoint == "runs/log-inputs":
        feature = "datasets logged with mlflow.log_input"
    if feature is None and endpoint in ("runs/log-model", "runs/outputs"):
        feature = "logged models (mlflow.<flavor>.log_model)"
    if (
        feature is None
        and endpoint.startswith("experiments/")
        and endpoint.split("/")[1] in ("delete", "restore", "update")
    ):
        feature = "deleting or renaming experiments (the dashboard does both)"
    message = (
        f"tirlab's MLflow API does not offer {feature}; "
        "see docs/mlflow.md, 'Where tirlab differs from an MLflow server'."
        if feature
        else f"tirlab's MLflow API has no endpoint {request.method} /api/{version}/mlflow/{endpoint}."
    )
    return MlflowError("ENDPOINT_NOT_FOUND", message).response()


# What a run token (a verl run tirlab launched) may call, each on its own run only: verl's tracking
# resumes the run (MLFLOW_RUN_ID), logs params and metrics, and ends it.
RUN_TOKEN_ENDPOINTS = frozenset(
    {
        ("GET", "runs/get"),
        ("POST", "runs/update"),
        ("POST", "runs/log-batch"),
        ("POST", "runs/log-metric"),
        ("POST", "runs/log-parameter"),
        ("POST", "runs/set-tag"),
        ("GET", "metrics/get-history"),
    }
)


def _check_scope(caller: Caller, run_id: Callable[[], str], allowed: bool = True) -> None:
    if caller.run_id is not None and (not allowed or run_id() != str(caller.run_id)):
        raise MlflowError(
            "PERMISSION_DENIED",
            f"A run token reads and writes its own run ({caller.run_id}) only: runs/get, runs/update, log-batch "
            "and its artifacts.",
        )


@csrf_exempt
def api(request: HttpRequest, endpoint: str) -> HttpResponse:
    endpoint = endpoint.strip("/")
    handler = ENDPOINTS.get((request.method, endpoint))
    if handler is None:
        return _not_offered(request, "2.0", endpoint)

    def work(caller: Caller) -> HttpResponse:
        fields = request_fields(request)
        _check_scope(
            caller,
            lambda: fields.first_string("run_id", "run_uuid", required=False),
            (request.method, endpoint) in RUN_TOKEN_ENDPOINTS,
        )
        return JsonResponse(handler(caller, fields, request))

    return _answer(request, work)


@csrf_exempt
def api_v3(request: HttpRequest, endpoint: str) -> HttpResponse:
    """MLflow 3's /api/3.0 endpoints (traces, server-info, …): none is offered, each says so in MLflow's shape."""
    return _not_offered(request, "3.0", endpoint.strip("/"))


def _artifact_run_id(path: str) -> str:
    """The run id of `<experiment id>/<run id>/artifacts/<path>`, '' when there is none."""
    parts = path.strip("/").split("/")
    return parts[1] if len(parts) > 1 else ""


@csrf_exempt
def artifact(request: HttpRequest, path: str = "") -> HttpResponse:
    """The artifact proxy: PUT stores, GET downloads (or lists, with ?path=), DELETE removes."""

    def work(caller: Caller) -> HttpResponse:
        _check_scope(caller, lambda: _artifact_run_id(path or request.GET.get("path", "")))
        if request.method == "GET" and not path:
            return JsonResponse({"files": artifacts.list_artifacts(caller.user, request.GET.get("path", ""))})
        if request.method == "GET":
            _, relative, file = artifacts.readable_artifact(caller.user, path)
            if not file.is_file():
                raise MlflowError("RESOURCE_DOES_NOT_EXIST", f"No artifact {relative!r} in this run.")
            return FileResponse(file.open("rb"), as_attachment=False, filename=file.name)
        if request.method == "PUT":
            length = request.META.get("CONTENT_LENGTH")
            run, relative = artifacts.store_artifact(
                caller.user, path, request, int(length) if length and length.isdigit() else None
            )
            samples_from_upload(run, relative)
            return JsonResponse({})
        if request.method == "DELETE":
            artifacts.delete_artifact(caller.user, path)
            return JsonResponse({})
        raise MlflowError("ENDPOINT_NOT_FOUND", f"The artifact API takes GET, PUT and DELETE, not {request.method}.")

    return _answer(request, work)
