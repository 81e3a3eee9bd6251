"""tirlab's runs and experiments as MLflow entities (mlflow/protos/service.proto), in protobuf's JSON form.

- Experiment "0" is MLflow's "Default": every user has it, and it holds their runs that belong to no
  tirlab experiment. Other experiments are tirlab experiments, their id as a string.
- A run's id is its tirlab id as a string, so `/runs/<id>/` on the dashboard is the same run.
- Status: running and starting -> RUNNING, queued -> SCHEDULED, succeeded -> FINISHED, failed and
  lost -> FAILED, cancelled -> KILLED; the tag `tirlab.status` has tirlab's own word.
- Params: an MLflow run's params as logged; a run of tirlab's trainer shows its config, one param per
  leaf (`rollout.group_size`). Tags: as logged, with `mlflow.runName` following the run's name.
- lifecycle_stage: "deleted" for an archived run (MLflow's delete_run archives), else "active".
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from webapp.runs.models import Experiment, Run, RunStatus

DEFAULT_EXPERIMENT_ID = "0"
DEFAULT_EXPERIMENT_NAME = "Default"

TO_MLFLOW_STATUS = {
    RunStatus.QUEUED: "SCHEDULED",
    RunStatus.STARTING: "RUNNING",
    RunStatus.RUNNING: "RUNNING",
    RunStatus.SUCCEEDED: "FINISHED",
    RunStatus.FAILED: "FAILED",
    RunStatus.LOST: "FAILED",
    RunStatus.CANCELLED: "KILLED",
}
FROM_MLFLOW_STATUS = {
    "RUNNING": RunStatus.RUNNING,
    "FINISHED": RunStatus.SUCCEEDED,
    "FAILED": RunStatus.FAILED,
    "KILLED": RunStatus.CANCELLED,
}
MLFLOW_STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")


def millis(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def experiment_id(experiment: Experiment | None) -> str:
    return DEFAULT_EXPERIMENT_ID if experiment is None else str(experiment.pk)


def artifact_uri(run: Run) -> str:
    # mlflow-artifacts: URIs resolve against the tracking URI, path prefix kept (MlflowArtifactsRepository).
    return f"mlflow-artifacts:/{experiment_id(run.experiment)}/{run.pk}/artifacts"


def _tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in sorted(tags.items())]


def experiment_json(experiment: Experiment | None, *, user=None) -> dict[str, Any]:
    """`experiment`, or the caller's Default experiment for None."""
    if experiment is None:
        joined = getattr(user, "date_joined", None)
        return {
            "experiment_id": DEFAULT_EXPERIMENT_ID,
            "name": DEFAULT_EXPERIMENT_NAME,
            "artifact_location": f"mlflow-artifacts:/{DEFAULT_EXPERIMENT_ID}",
            "lifecycle_stage": "active",
            "creation_time": millis(joined) or 0,
            "last_update_time": millis(joined) or 0,
            "tags": [],
        }
    mlflow = getattr(experiment, "mlflow", None) if _has(experiment, "mlflow") else None
    tags = dict(mlflow.tags) if mlflow is not None else {}
    if experiment.description and "mlflow.note.content" not in tags:
        tags["mlflow.note.content"] = experiment.description
    return {
        "experiment_id": str(experiment.pk),
        "name": experiment.name,
        "artifact_location": f"mlflow-artifacts:/{experiment.pk}",
        "lifecycle_stage": "active",
        "creation_time": millis(experiment.created_at),
        "last_update_time": millis(experiment.updated_at),
        "tags": _tag_list(tags),
    }


def _has(instance: Any, relation: str) -> bool:
    """Whether a reverse one-to-one exists (without raising when it does not)."""
    try:
        getattr(instance, relation)
    except ObjectDoesNotExist:  # what a missing reverse one-to-one raises
        return False
    return True


def param_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def run_params(run: Run) -> dict[str, str]:
    """An MLflow run's params as logged; a tirlab run's config, one param per leaf, dotted paths (and for a
    verl run tirlab launched, what verl logged besides)."""
    if run.source == "mlflow":
        return {key: param_text(value) for key, value in run.config.items()}
    flat: dict[str, str] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict) and value:
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = param_text(value)

    walk(run.config, "")
    if _has(run, "mlflow"):
        # A verl run's own params, as verl logged them (keys with '/', never a tirlab config path).
        flat.update({key: param_text(value) for key, value in run.mlflow.params.items()})
    return flat


def run_tags(run: Run) -> dict[str, str]:
    tags = dict(run.mlflow.tags) if run.source == "mlflow" and _has(run, "mlflow") else {}
    tags["mlflow.runName"] = run.name
    tags["tirlab.status"] = run.status
    if run.description:
        tags.setdefault("mlflow.note.content", run.description)
    if run.source != "mlflow":
        tags["tirlab.source"] = "tirlab trainer"
        if run.preset:
            tags["tirlab.preset"] = run.preset
    return tags


def run_info_json(run: Run) -> dict[str, Any]:
    user_id = run.mlflow.user_id if run.source == "mlflow" and _has(run, "mlflow") else ""
    info = {
        "run_id": str(run.pk),
        "run_uuid": str(run.pk),
        "run_name": run.name,
        "experiment_id": experiment_id(run.experiment),
        "user_id": user_id or run.owner.get_username(),
        "status": TO_MLFLOW_STATUS[run.status],
        "start_time": millis(run.started_at or run.created_at),
        "artifact_uri": artifact_uri(run),
        "lifecycle_stage": "deleted" if run.archived else "active",
    }
    if run.finished_at is not None:
        info["end_time"] = millis(run.finished_at)
    return info


def metric_json(key: str, value: float | None, timestamp_ms: int, step: int) -> dict[str, Any]:
    # protobuf's JSON mapping writes NaN as the string "NaN"; tirlab keeps undefined values as null.
    return {"key": key, "value": "NaN" if value is None else value, "timestamp": timestamp_ms, "step": step}


def run_json(run: Run, latest_metrics: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "info": run_info_json(run),
        "data": {
            "metrics": latest_metrics,
            "params": _tag_list(run_params(run)),
            "tags": _tag_list(run_tags(run)),
        },
        "inputs": {},
    }
