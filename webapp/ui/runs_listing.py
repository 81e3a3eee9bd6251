"""The runs list's query: search, filters and sort from GET parameters, and each row's progress."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import F, Func, Min, Q, QuerySet
from django.http import QueryDict

from webapp.runs.models import Experiment, MetricStep, Run, RunStatus

# ?sort=<key> ascending, ?sort=-<key> descending; runs without the value (no step yet) sort last.
SORTS: dict[str, Any] = {
    "created": F("created_at"),
    "name": F("name"),
    "status": F("status"),
    "experiment": F("experiment__name"),
    "step": F("last_step"),
    "accuracy": F("summary__accuracy"),
    "tool_call_ratio": F("summary__tool_call_ratio"),
}
DEFAULT_SORT = "-created"
PAGE_SIZE = 50


@dataclass
class RunListParams:
    q: str = ""
    statuses: list[str] = field(default_factory=list)
    experiment: int | None = None
    tag: str = ""
    archived: bool = False
    sort: str = DEFAULT_SORT
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, query: QueryDict) -> "RunListParams":
        """Read the list's GET parameters; a value that makes no sense is dropped with an error to show."""
        params = cls(q=query.get("q", "").strip(), tag=query.get("tag", "").strip())
        for status in query.getlist("status"):
            if status in RunStatus.values:
                params.statuses.append(status)
            elif status:
                params.errors.append(f"Unknown status {status!r}; expected one of {', '.join(RunStatus.values)}.")
        experiment = query.get("experiment", "")
        if experiment.isdigit():
            params.experiment = int(experiment)
        elif experiment:
            params.errors.append(f"Experiment must be an experiment id, not {experiment!r}.")
        params.archived = query.get("archived", "") in ("1", "on", "true")
        sort = query.get("sort", "") or DEFAULT_SORT
        if sort.removeprefix("-") in SORTS:
            params.sort = sort
        else:
            params.errors.append(f"Cannot sort by {sort!r}; choose one of {', '.join(SORTS)}.")
        return params


def runs_listed(*, user, params: RunListParams) -> QuerySet[Run]:
    """The runs `user` may see that match `params`, sorted."""
    runs = Run.objects.visible_to(user).select_related("experiment")
    if not params.archived:
        runs = runs.filter(archived=False)
    if params.statuses:
        runs = runs.filter(status__in=params.statuses)
    if params.experiment is not None:
        runs = runs.filter(experiment_id=params.experiment)
    if params.tag:
        runs = runs.filter(tags__contains=[params.tag])
    if params.q:
        match = Q(name__icontains=params.q) | Q(description__icontains=params.q)
        match |= Q(experiment__name__icontains=params.q) | Q(preset__iexact=params.q) | Q(tags__contains=[params.q])
        if params.q.lstrip("#").isdigit():
            match |= Q(pk=int(params.q.lstrip("#")))
        runs = runs.filter(match)
    key = params.sort.removeprefix("-")
    expression = SORTS[key]
    order = expression.desc(nulls_last=True) if params.sort.startswith("-") else expression.asc(nulls_last=True)
    return runs.order_by(order, "-pk")


def filter_choices(*, user) -> dict[str, Any]:
    """The experiments and tags the filter menus offer: those of the user's runs."""
    visible = Run.objects.visible_to(user)
    tags = (
        visible.annotate(tag=Func(F("tags"), function="unnest"))
        .values_list("tag", flat=True)
        .distinct()
        .order_by("tag")
    )
    return {
        "experiments": Experiment.objects.visible_to(user).order_by("name").only("pk", "name"),
        "tags": list(tags),
        "statuses": RunStatus.values,
        "sorts": list(SORTS),
    }


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def first_steps(runs: list[Run]) -> dict[int, int]:
    """Run id -> first step it reported, for the running resumed runs among `runs` (their steps
    continue the parent's, so their pace counts only the steps they trained themselves)."""
    resumed = [run.pk for run in runs if run.parent_relation == "resume" and run.status == RunStatus.RUNNING]
    if not resumed:
        return {}
    rows = MetricStep.objects.filter(run_id__in=resumed).values("run_id").annotate(first=Min("step"))
    return {row["run_id"]: row["first"] for row in rows}


def run_progress(run: Run, *, now: datetime, first_step: int = 0) -> dict[str, Any]:
    """Steps done of max_steps, percent, and for a running run the ETA from its pace so far.

    Steps are reported 0-based, so last_step n means n + 1 steps done; a resumed run trained only
    those from its `first_step` on since it started."""
    schedule = run.config.get("schedule", {}) if isinstance(run.config, dict) else {}
    max_steps = schedule.get("max_steps")
    done = 0 if run.last_step is None else run.last_step + 1
    progress: dict[str, Any] = {"done": done, "max_steps": max_steps, "percent": None, "eta": None}
    if isinstance(max_steps, int) and max_steps > 0:
        progress["percent"] = min(100, round(100 * done / max_steps))
        trained = done - first_step
        if run.status == RunStatus.RUNNING and run.started_at and trained > 0 and done < max_steps:
            per_step = (now - run.started_at).total_seconds() / trained
            progress["eta"] = _duration(per_step * (max_steps - done))
    return progress
