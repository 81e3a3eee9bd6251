"""Reads of runs: the runs list and its filters, trajectories, the launch queue (a run's metric series
are webapp.runs.metric_store's)."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DataError, connection, transaction
from django.db.models import F, Func, Q, QuerySet

from webapp.runs.models import Experiment, Run, RunStatus, Trajectory

# The runs list's sort keys, the same for the runs page (?sort=KEY) and the API (?ordering=KEY):
# KEY sorts ascending, -KEY descending; runs without the value (no step yet) sort last.
RUN_SORTS: dict[str, F] = {
    "created": F("created_at"),
    "name": F("name"),
    "status": F("status"),
    "experiment": F("experiment__name"),
    "step": F("last_step"),
    "finished": F("finished_at"),
    "accuracy": F("summary__accuracy"),
    "tool_call_ratio": F("summary__tool_call_ratio"),
}
DEFAULT_RUN_SORT = "-created"


@dataclass(frozen=True)
class RunFilters:
    """Which runs the runs list shows, and in which order (each door reads its own parameters into this)."""

    q: str = ""
    statuses: tuple[str, ...] = ()
    experiment: int | None = None
    preset: str = ""
    parent: int | None = None
    tags: tuple[str, ...] = ()
    archived: bool = False
    created_after: datetime | None = None
    created_before: datetime | None = None
    sort: str = DEFAULT_RUN_SORT


def run_list(*, user, filters: RunFilters) -> QuerySet[Run]:
    """The runs `user` may see that match `filters`, sorted: the runs page and GET /api/v1/runs/ both list this.

    - Archived runs are hidden unless `archived` is set (the page's "Show archived" box, the API's
      archived=true), which lists them along with the others: archiving tucks a run away, it does
      not make it the only thing you see.
    - `statuses`: any of them; `tags`: every one of them; `experiment`, `preset`, `parent`: equal.
    - `created_after` is inclusive, `created_before` exclusive.
    - `q`: a case-insensitive part of the name, description or experiment name, the exact preset
      or tag, or a run id (``12`` or ``#12``).
    - `sort`: a RUN_SORTS key, '-' first for descending; the newest id first among equals.
    """
    runs = Run.objects.visible_to(user).select_related("experiment", "owner")
    if not filters.archived:
        runs = runs.filter(archived=False)
    if filters.statuses:
        runs = runs.filter(status__in=filters.statuses)
    if filters.experiment is not None:
        runs = runs.filter(experiment_id=filters.experiment)
    if filters.preset:
        runs = runs.filter(preset=filters.preset)
    if filters.parent is not None:
        runs = runs.filter(parent_id=filters.parent)
    if filters.tags:
        runs = runs.filter(tags__contains=list(filters.tags))
    if filters.created_after is not None:
        runs = runs.filter(created_at__gte=filters.created_after)
    if filters.created_before is not None:
        runs = runs.filter(created_at__lt=filters.created_before)
    if filters.q:
        q = filters.q
        match = Q(name__icontains=q) | Q(description__icontains=q) | Q(experiment__name__icontains=q)
        match |= Q(preset__iexact=q) | Q(tags__contains=[q])
        if q.lstrip("#").isdigit():
            match |= Q(pk=int(q.lstrip("#")))
        runs = runs.filter(match)
    expression = RUN_SORTS[filters.sort.removeprefix("-")]
    order = expression.desc(nulls_last=True) if filters.sort.startswith("-") else expression.asc(nulls_last=True)
    return runs.order_by(order, "-pk")


def run_filter_choices(*, user) -> dict[str, Any]:
    """The experiments and tags the runs list's filter menus offer: those of the user's runs."""
    tags = (
        Run.objects.visible_to(user)
        .annotate(tag=Func(F("tags"), function="unnest"))
        .values_list("tag", flat=True)
        .distinct()
        .order_by("tag")
    )
    return {
        "experiments": Experiment.objects.visible_to(user).order_by("name").only("pk", "name"),
        "tags": list(tags),
        "statuses": RunStatus.values,
    }


SEARCH_MAX_CHARS = 200


class InvalidSearch(ValueError):
    """A trajectory search that cannot run: too long, or not a valid regular expression."""


def check_search(q: str, *, regex: bool) -> None:
    """Refuse a search longer than SEARCH_MAX_CHARS, or a regex PostgreSQL cannot compile.

    PostgreSQL's regex dialect (ARE) is not Python's, so PostgreSQL itself judges the pattern,
    in a savepoint so that a bad one leaves the caller's transaction usable."""
    if len(q) > SEARCH_MAX_CHARS:
        raise InvalidSearch(f"at most {SEARCH_MAX_CHARS} characters")
    if not regex:
        return
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT '' ~* %s", [q])
    except DataError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid regular expression"
        raise InvalidSearch(message) from None


def run_trajectories(
    *,
    run: Run,
    step: int | None = None,
    correct: bool | None = None,
    has_tool_error: bool | None = None,
    used_tool: bool | None = None,
    truncated: bool | None = None,
    data_source: str | None = None,
    q: str | None = None,
    regex: bool = False,
) -> QuerySet[Trajectory]:
    """A run's trajectories, filtered; `data_source` is a benchmark's name as its rows give it (one no trajectory
    has matches none); `q` is a case-insensitive substring, or with `regex` a PostgreSQL regular expression (~*).
    Raises InvalidSearch for a search that cannot run."""
    if q:
        check_search(q, regex=regex)
    queryset = Trajectory.objects.filter(run=run)
    if step is not None:
        queryset = queryset.filter(step=step)
    if correct is not None:
        queryset = queryset.filter(correct=correct)
    if has_tool_error is not None:
        queryset = queryset.filter(has_tool_error=has_tool_error)
    if used_tool is not None:
        queryset = queryset.filter(tool_call_count__gt=0) if used_tool else queryset.filter(tool_call_count=0)
    if truncated is not None:
        queryset = queryset.filter(truncated=truncated)
    if data_source:
        queryset = queryset.filter(data_source=data_source)
    if q:
        queryset = queryset.filter(search_text__iregex=q) if regex else queryset.filter(search_text__icontains=q)
    return queryset.defer("search_text")


def queue_positions() -> dict[int, int]:
    """Run id -> 1-based place in the launch queue (managed queued runs start oldest first)."""
    ids = Run.objects.filter(managed=True, status=RunStatus.QUEUED).order_by("created_at", "pk")
    return {pk: position for position, pk in enumerate(ids.values_list("pk", flat=True), start=1)}
