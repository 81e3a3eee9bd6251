"""Experiments through the MLflow API: find, create, get, search, tag.

An experiment belongs to the user who creates it, as in the dashboard, and is created and changed by
the dashboard's services (webapp.runs.services), so the same rules hold at both doors: names are
stripped, unique per owner and at most 200 characters. A user sees their own experiments (staff see
all), plus "Default" (id "0"), which holds their runs that belong to no experiment. MLflow's
experiment deletion is not offered: tirlab deletes an experiment with its runs, from the dashboard.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from webapp.runs.models import Experiment
from webapp.runs.services import experiment_create, experiment_update
from webapp.tracking.entities import DEFAULT_EXPERIMENT_ID, DEFAULT_EXPERIMENT_NAME, experiment_json
from webapp.tracking.errors import MlflowError, invalid, not_found, refused
from webapp.tracking.models import MlflowExperiment
from webapp.tracking.search import matches, page, parse_filter, parse_order_by, sort_rows

MAX_TAG_KEY, MAX_TAG_VALUE = 250, 20_000  # MLflow's MAX_EXPERIMENT_TAG_KEY_LENGTH / _VAL_LENGTH
SEARCH_MAX_RESULTS = 50_000  # MLflow's MAX_EXPERIMENTS_LISTED_PER_PAGE


def experiment_by_id(user, experiment_id: str) -> Experiment | None:
    """The experiment `user` may see with this id (None for Default); RESOURCE_DOES_NOT_EXIST otherwise."""
    if experiment_id == DEFAULT_EXPERIMENT_ID:
        return None
    experiment = None
    if experiment_id.isdigit():
        experiment = Experiment.objects.visible_to(user).select_related("mlflow").filter(pk=int(experiment_id)).first()
    if experiment is None:
        raise not_found(f"No Experiment with id={experiment_id} exists")
    return experiment


def experiment_by_name(user, name: str) -> Experiment | None:
    """The experiment named `name` (the caller's own first; None for Default); RESOURCE_DOES_NOT_EXIST otherwise."""
    if name == DEFAULT_EXPERIMENT_NAME:
        return None
    candidates = Experiment.objects.visible_to(user).select_related("mlflow").filter(name=name)
    experiment = candidates.filter(owner=user).first() or candidates.order_by("pk").first()
    if experiment is None:
        raise not_found(f"Could not find experiment with name '{name}'")
    return experiment


def _check_tags(tags: dict[str, str]) -> None:
    for key, value in tags.items():
        if not key or len(key) > MAX_TAG_KEY:
            raise invalid(f"Experiment tag key {key[:50]!r} must have 1 to {MAX_TAG_KEY} characters.")
        if len(value) > MAX_TAG_VALUE:
            raise invalid(f"Experiment tag {key!r}'s value has {len(value)} characters; at most {MAX_TAG_VALUE}.")


def _exists(name: str) -> MlflowError:
    # The client's set_experiment takes this code from a racing create as "someone else made it".
    return MlflowError("RESOURCE_ALREADY_EXISTS", f"Experiment(name={name}) already exists.")


def _refused(exc: ValidationError) -> MlflowError:
    """experiment_create's or experiment_update's refusal in MLflow's words: a taken name is
    RESOURCE_ALREADY_EXISTS, anything else INVALID_PARAMETER_VALUE."""
    for error in exc.error_dict.get("name", []):
        if error.code == "unique":
            return _exists(error.params["name"])
    return refused("experiment", exc.message_dict)


def create_experiment(user, name: str, tags: dict[str, str], artifact_location: str) -> Experiment:
    if artifact_location:
        raise invalid(
            "tirlab keeps every run's artifacts itself (under the run's folder); leave artifact_location unset."
        )
    _check_tags(tags)
    if name.strip() == DEFAULT_EXPERIMENT_NAME:
        raise _exists(DEFAULT_EXPERIMENT_NAME)
    with transaction.atomic():
        try:
            experiment = experiment_create(user=user, name=name, description=tags.get("mlflow.note.content", ""))
        except ValidationError as exc:
            raise _refused(exc) from None
        if tags:
            MlflowExperiment.objects.create(experiment=experiment, tags=tags)
    return experiment


def set_experiment_tag(user, experiment_id: str, key: str, value: str) -> None:
    experiment = experiment_by_id(user, experiment_id)
    if experiment is None:
        raise invalid("The Default experiment (id 0) takes no tags in tirlab.")
    if experiment.owner_id != user.pk:
        raise MlflowError("PERMISSION_DENIED", f"Experiment {experiment_id} belongs to another user.")
    _check_tags({key: value})
    with transaction.atomic():
        row, _ = MlflowExperiment.objects.select_for_update().get_or_create(experiment=experiment)
        row.tags = {**row.tags, key: value}
        row.save(update_fields=["tags"])
        if key == "mlflow.note.content":
            try:
                experiment_update(experiment=experiment, description=value)
            except ValidationError as exc:
                raise _refused(exc) from None


def _attribute(experiment: dict, entity: str, key: str):
    if entity == "tags":
        return next((t["value"] for t in experiment["tags"] if t["key"] == key), None)
    if entity != "attributes" or key not in ("name", "experiment_id", "creation_time", "last_update_time"):
        raise invalid(
            f"Invalid attribute key '{key}': experiments are searched by name, creation_time, "
            "last_update_time and tags."
        )
    return experiment.get(key)


def search_experiments(
    user, *, view_type: str, max_results: int, filter_text: str, order_by: list[str], page_token: str
) -> tuple[list[dict], str]:
    if not 1 <= max_results <= SEARCH_MAX_RESULTS:
        raise invalid(f"Invalid value {max_results} for parameter 'max_results': 1 to {SEARCH_MAX_RESULTS}.")
    comparisons = parse_filter(filter_text)
    orderings = parse_order_by(order_by) or parse_order_by(["last_update_time DESC"])
    if view_type == "DELETED_ONLY":
        rows: list[dict] = []
    else:
        experiments = Experiment.objects.visible_to(user).select_related("mlflow")
        rows = [experiment_json(None, user=user)] + [experiment_json(e) for e in experiments]
    rows = [r for r in rows if all(matches(c, _attribute(r, c.entity, c.key)) for c in comparisons)]
    rows = sort_rows(rows, [*orderings, *parse_order_by(["experiment_id"])], _attribute)
    return page(rows, max_results=max_results, token=page_token)
