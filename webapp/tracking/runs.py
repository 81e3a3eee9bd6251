"""Runs through the MLflow API: create, get, update, delete and restore, log a batch, tags.

A run created here is a tirlab run (source "mlflow", not managed: tirlab neither launches nor stops
it) owned by the caller, created, renamed, archived and given params by the runs app's services
(webapp.runs.external, webapp.runs.services), so a name follows the dashboard's rules. Only its
owner writes to it, and only such runs are written to: a run of tirlab's own trainer is read-only
here (its trainer reports through the ingest endpoint). Every write is one transaction under the
run's row lock, checked whole before anything is written, and counts as the run's heartbeat: a run
marked lost runs again when its trainer reports again.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from trainer.config import ConfigError
from trainer.contract import is_metric_key
from webapp.runs.events import publish_run_events
from webapp.runs.external import ParamsChanged, external_run_add_params, external_run_beat, external_run_create
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_update, runs_set_archived
from webapp.runs.transitions import run_log, run_transition
from webapp.runs.verl_runs import is_verl_run
from webapp.tracking.entities import FROM_MLFLOW_STATUS, TO_MLFLOW_STATUS
from webapp.tracking.errors import MlflowError, invalid, not_found, refused
from webapp.tracking.experiments import experiment_by_id
from webapp.tracking.metrics import parse_metric, write_metrics
from webapp.tracking.models import MlflowRun
from webapp.tracking.samples import tables_from_tag

# MLflow's limits (mlflow/utils/validation.py).
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000
MAX_BATCH_BYTES = 1_000_000
MAX_KEY = 250
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
# What MLflow 3.17.2's server does with a longer value that a run logs (log-batch, log-parameter,
# set-tag): it answers 200 and keeps the value cut to the limit. Its store validates each param and
# tag through _validate_param / _validate_tag (mlflow/store/tracking/sqlalchemy_store.py:2048, 2188,
# 2209, 2397), which call _validate_length_limit(..., truncate=True) (mlflow/utils/validation.py:434,
# 446); that returns value[:limit] (:551-556) while MLFLOW_TRUNCATE_LONG_VALUES is on, its default
# (mlflow/environment_variables.py:832). Clients send whole values: a raw REST client, and the 3.17.2
# client too (log_param sends Param(key, str(value)) as it is, mlflow/tracking/_tracking_service/
# client.py:392-415). Experiment tags are refused instead, as MLflow refuses them (validation.py:451-457,
# no truncate), and so are a new run's tags, which MLflow's create_run does not check at all.
RUN_NAME_TAG = "mlflow.runName"
LOGGED_ARTIFACTS_TAG = "mlflow.loggedArtifacts"


def _run_id(run_id: str) -> int:
    if not run_id.isdigit() or len(run_id) > 18:
        raise not_found(f"Run with id={run_id} not found")
    return int(run_id)


def readable_run(user, run_id: str) -> Run:
    """A run the caller may read: any of theirs, any for staff; PERMISSION_DENIED for another user's."""
    run = Run.objects.select_related("experiment", "owner", "mlflow").filter(pk=_run_id(run_id)).first()
    if run is None:
        raise not_found(f"Run with id={run_id} not found")
    if run.owner_id != user.pk and not user.is_staff:
        raise MlflowError("PERMISSION_DENIED", f"Permission denied: run {run_id} belongs to another user.")
    return run


def writable_run(user, run_id: str) -> Run:
    """The caller's MLflow run, locked for this transaction."""
    run = Run.objects.select_for_update().filter(pk=_run_id(run_id)).first()
    if run is None:
        raise not_found(f"Run with id={run_id} not found")
    if run.owner_id != user.pk:
        raise MlflowError("PERMISSION_DENIED", f"Permission denied: run {run_id} belongs to another user.")
    if is_verl_run(run):
        # verl's tracking in a run tirlab launched (MLFLOW_RUN_ID): what it logs is the run's own.
        MlflowRun.objects.get_or_create(run=run)
        return run
    if run.source != "mlflow":
        raise MlflowError(
            "PERMISSION_DENIED",
            f"Run {run_id} is a run of tirlab's own trainer, which alone reports to it; it is read-only here.",
        )
    return run


def _check_key(kind: str, key: Any) -> str:
    """Param and tag names follow the rule of metric names (MLflow's `_validate_param_name` /
    `_validate_tag_name` are its `_validate_metric_name`)."""
    if not isinstance(key, str) or not is_metric_key(key):
        raise invalid(
            f"Invalid {kind} name {str(key)[:60]!r}: names have 1 to {MAX_KEY} letters, digits, spaces and "
            "_ - . : / @, and are not paths that normalise to something else."
        )
    return key


def _check_value(kind: str, key: str, value: Any, limit: int, *, cut: bool = False) -> str:
    """The value, or with `cut` its first `limit` characters (a run's logged params and tags, see
    MAX_PARAM_VALUE); a longer one is refused otherwise."""
    if not isinstance(value, str):
        raise invalid(f"Invalid value for {kind} '{key}': a string.")
    if len(value) > limit and not cut:
        raise invalid(f"{kind.capitalize()} '{key}' has a value of {len(value)} characters; at most {limit}.")
    return value[:limit]


def key_values(items: list[Mapping[str, Any]], kind: str, limit: int, *, cut: bool = False) -> dict[str, str]:
    """`[{"key": k, "value": v}, ...]` as a dict (later ones win), each key and value checked."""
    out: dict[str, str] = {}
    for item in items:
        key = _check_key(kind, item.get("key"))
        out[key] = _check_value(kind, key, item.get("value", ""), limit, cut=cut)
    return out


def _cut_notes(params: list[Mapping[str, Any]], tags: list[Mapping[str, Any]]) -> list[str]:
    """A line for the run's log for each value kept cut: the dashboard shows the value, not MLflow's
    server log, so its user learns there why it ends short."""
    return [
        f"{kind} '{item['key']}' was {len(item['value']):,} characters long; its first {limit:,} were kept, "
        "as MLflow keeps them"
        for kind, items, limit in (("param", params, MAX_PARAM_VALUE), ("tag", tags, MAX_TAG_VALUE))
        for item in items
        if len(item.get("value", "")) > limit
    ]


def _moment(millis: int | None) -> datetime | None:
    return None if millis is None else datetime.fromtimestamp(millis / 1000, tz=UTC)


def create_run(
    user, *, experiment_id: str, user_id: str, start_time: int | None, tags: dict[str, str], run_name: str
) -> Run:
    experiment = experiment_by_id(user, experiment_id)
    with transaction.atomic():
        try:
            run = external_run_create(
                user=user,
                name=run_name or tags.get(RUN_NAME_TAG, ""),
                experiment=experiment,
                description=tags.get("mlflow.note.content", ""),
                started_at=_moment(start_time),
                logged_by=tags.get("mlflow.source.name", ""),
            )
        except ConfigError as exc:
            raise refused("run", exc.errors) from None
        MlflowRun.objects.create(
            run=run, user_id=user_id[:256], tags={k: v for k, v in tags.items() if k != RUN_NAME_TAG}
        )
    return Run.objects.select_related("experiment", "owner", "mlflow").get(pk=run.pk)


def update_run(user, run_id: str, *, status: str | None, end_time: int | None, run_name: str) -> Run:
    with transaction.atomic():
        run = writable_run(user, run_id)
        if run_name:
            rename(run, run_name)
        if run.managed and status is not None:
            # A launched run's status is its launcher's (trainer.verl.launch knows how verl's process ended).
            if status == "RUNNING" and run.status == RunStatus.STARTING:
                run_transition(run=run, status=RunStatus.RUNNING, reason="verl's MLflow tracking started")
            elif status != "RUNNING":
                run_log(run=run, message=f"verl's MLflow tracking ended its run ({status}); the launcher reports how")
        elif status is not None and status != "SCHEDULED":
            target = FROM_MLFLOW_STATUS[status]
            if target != run.status:
                run_transition(run=run, status=target, end_time=_moment(end_time))
        elif status == "SCHEDULED" and TO_MLFLOW_STATUS[run.status] != "SCHEDULED":
            raise invalid("tirlab does not schedule runs reported through MLflow; SCHEDULED cannot be set.")
        external_run_beat(run=run)
    return Run.objects.select_related("experiment", "owner", "mlflow").get(pk=run.pk)


def rename(run: Run, name: str) -> None:
    """A blank name leaves the run's as it is (the client sends none when it renames nothing)."""
    if name.strip() and name.strip() != run.name:
        try:
            run_update(run=run, name=name)
        except ConfigError as exc:
            raise refused("run", exc.errors) from None


def set_deleted(user, run_id: str, *, deleted: bool) -> None:
    """MLflow's delete_run / restore_run: a deleted run is an archived one (hidden from lists, kept)."""
    with transaction.atomic():
        runs_set_archived(runs=[writable_run(user, run_id)], archived=deleted)


def log_batch(
    user,
    run_id: str,
    *,
    metrics: list[Mapping[str, Any]],
    params: list[Mapping[str, Any]],
    tags: list[Mapping[str, Any]],
    body_bytes: int,
) -> None:
    """MLflow's log-batch (and log-metric, log-parameter, set-tag, one item each): all or nothing."""
    if body_bytes > MAX_BATCH_BYTES:
        raise invalid(
            f"Batched logging API requests must be at most {MAX_BATCH_BYTES} bytes, got payload of size {body_bytes}."
        )
    if len(metrics) > MAX_METRICS_PER_BATCH:
        raise invalid(
            f"A batch logging request can contain at most {MAX_METRICS_PER_BATCH} metrics. Got {len(metrics)} metrics."
        )
    for kind, items in (("params", params), ("tags", tags)):
        if len(items) > MAX_PARAMS_TAGS_PER_BATCH:
            raise invalid(
                f"A batch logging request can contain at most {MAX_PARAMS_TAGS_PER_BATCH} {kind}. "
                f"Got {len(items)} {kind}."
            )
    total = len(metrics) + len(params) + len(tags)
    if total > MAX_ENTITIES_PER_BATCH:
        raise invalid(
            f"A batch logging request can contain at most {MAX_ENTITIES_PER_BATCH} metrics, params and tags in total. "
            f"Got {total}."
        )
    parsed = [parse_metric(item, f"metrics[{i}]") for i, item in enumerate(metrics)]
    new_params = _params_in_order(params)
    new_tags = key_values(tags, "tag", MAX_TAG_VALUE, cut=True)
    with transaction.atomic():
        run = writable_run(user, run_id)
        try:
            if run.managed:
                launched_run_add_params(run=run, params=new_params)
            else:
                external_run_add_params(run=run, params=new_params)
        except ParamsChanged as exc:
            raise _params_changed(run, exc) from None
        events: list[tuple[str, dict[str, Any]]] = []
        if parsed:
            events.append(("metrics", {"steps": write_metrics(run, parsed)}))
        if new_tags:
            _merge_tags(user, run, new_tags)
        for note in _cut_notes(params, tags):
            run_log(run=run, message=note, level="warning")
        publish_run_events(run, events, list_event="run.updated" if parsed else None)
        external_run_beat(run=run)


def launched_run_add_params(*, run: Run, params: dict[str, str]) -> None:
    """Params verl logs in a run tirlab launched: kept beside the run's config (its tirlab config, which
    they never change), write-once as MLflow keeps params. The caller holds the run's row lock."""
    row = MlflowRun.objects.select_for_update().get(run=run)
    changed = {key: (row.params[key], value) for key, value in params.items() if row.params.get(key, value) != value}
    if changed:
        raise ParamsChanged(changed)
    if any(key not in row.params for key in params):
        row.params = {**row.params, **params}
        row.save(update_fields=["params"])


def _params_in_order(items: list[Mapping[str, Any]]) -> dict[str, str]:
    """Params as a dict; one key twice with two values in one request is refused, as MLflow does."""
    out: dict[str, str] = {}
    for item in items:
        key = _check_key("param", item.get("key"))
        value = _check_value("param", key, item.get("value", ""), MAX_PARAM_VALUE, cut=True)
        if key in out and out[key] != value:
            raise invalid(
                f"Duplicate parameter keys have been submitted: [{key}]. Please ensure the request contains only "
                "one param value per param key."
            )
        out[key] = value
    return out


def _params_changed(run: Run, exc: ParamsChanged) -> MlflowError:
    """Params are write-once (the runs app's rule, and MLflow's), refused in MLflow's words."""
    key, (old, new) = next(iter(exc.changed.items()))
    return invalid(
        f"Changing param values is not allowed. Param with key='{key}' was already logged with value="
        f"'{old}' for run ID='{run.pk}'. Attempted logging new value '{new}'."
    )


def _merge_tags(user, run: Run, tags: dict[str, str]) -> None:
    """Tags overwrite. `mlflow.runName` renames the run; `mlflow.loggedArtifacts` (log_table) turns the
    tables it lists into trajectories."""
    row = MlflowRun.objects.select_for_update().get(run=run)
    if RUN_NAME_TAG in tags:
        rename(run, tags[RUN_NAME_TAG])
    row.tags = {**row.tags, **{k: v for k, v in tags.items() if k != RUN_NAME_TAG}}
    row.save(update_fields=["tags"])
    if LOGGED_ARTIFACTS_TAG in tags:
        tables_from_tag(run, tags[LOGGED_ARTIFACTS_TAG])


def delete_tag(user, run_id: str, key: str) -> None:
    with transaction.atomic():
        run = writable_run(user, run_id)
        row = MlflowRun.objects.select_for_update().get(run=run)
        if key not in row.tags:
            raise not_found(f"No tag with name: {key} in run with id {run_id}")
        row.tags = {k: v for k, v in row.tags.items() if k != key}
        row.save(update_fields=["tags"])
        external_run_beat(run=run)
