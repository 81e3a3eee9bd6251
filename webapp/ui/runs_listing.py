"""The runs page's reading of its GET parameters (the query is webapp.runs.selectors.run_list),
and each row's progress."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.http import QueryDict

from webapp.runs.models import Run, RunStatus
from webapp.runs.selectors import DEFAULT_RUN_SORT, RUN_SORTS, RunFilters
from webapp.ui.external_runs import external_max_steps, is_external

PAGE_SIZE = 50


@dataclass
class RunListParams:
    """The runs page's GET parameters: q, status (repeatable), experiment, tag, archived, sort."""

    q: str = ""
    statuses: list[str] = field(default_factory=list)
    experiment: int | None = None
    tag: str = ""
    archived: bool = False
    sort: str = DEFAULT_RUN_SORT
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
        sort = query.get("sort", "") or DEFAULT_RUN_SORT
        if sort.removeprefix("-") in RUN_SORTS:
            params.sort = sort
        else:
            params.errors.append(f"Cannot sort by {sort!r}; choose one of {', '.join(RUN_SORTS)}.")
        return params

    def filters(self) -> RunFilters:
        return RunFilters(
            q=self.q,
            statuses=tuple(self.statuses),
            experiment=self.experiment,
            tags=(self.tag,) if self.tag else (),
            archived=self.archived,
            sort=self.sort,
        )


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def run_progress(run: Run, *, now: datetime, first_step: int = 0) -> dict[str, Any]:
    """Steps done of max_steps, percent, and for a running run the ETA from its pace so far.

    Steps are reported 0-based, so last_step n means n + 1 steps done; a resumed run trained only
    those from its `first_step` on since it started."""
    if is_external(run):
        max_steps = external_max_steps(run.config)
    else:
        schedule = run.config.get("schedule", {}) if isinstance(run.config, dict) else {}
        max_steps = schedule.get("max_steps") if isinstance(schedule, dict) else None
    done = 0 if run.last_step is None else run.last_step + 1
    progress: dict[str, Any] = {"done": done, "max_steps": max_steps, "percent": None, "eta": None}
    if isinstance(max_steps, int) and max_steps > 0:
        progress["percent"] = min(100, round(100 * done / max_steps))
        trained = done - first_step
        if run.status == RunStatus.RUNNING and run.started_at and trained > 0 and done < max_steps:
            per_step = (now - run.started_at).total_seconds() / trained
            progress["eta"] = _duration(per_step * (max_steps - done))
    return progress
