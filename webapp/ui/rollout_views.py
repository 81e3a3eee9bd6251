"""The rollouts page: a run's sampled trajectories step by step, GRPO groups side by side, with
filters, a text/regex search across steps and deep links to one trajectory.

Server-rendered so it works with JavaScript off; static/js/rollouts.js adds arrow keys, the
slider, code highlighting, copy-link and a notice when a newer step arrives.

A run whose calls are JSON (tool_call_json, artist_fc) and whose examples' ground truth is calls shows
each trajectory's calls (every block of the model's own text, tool outputs left out) against the ground
truth's, call by call (trainer.protocols.call_diff), above its text.
"""

import math
import re
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.db import OperationalError, connection, transaction
from django.db.models import Max, Min, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse

from trainer.config import ToolConfig
from trainer.contract import INT_MAX
from trainer.protocols import Protocol, get_protocol
from webapp.runs.models import Run, Trajectory
from webapp.runs.selectors import SEARCH_MAX_CHARS, InvalidSearch, run_trajectories
from webapp.ui import rollout_samples as samples
from webapp.ui.external_runs import config_protocol
from webapp.ui.rollout_search import search_view
from webapp.ui.rollout_swe import mark_turns, swe_view

GROUPS_PER_PAGE = 4
SEARCH_PAGE_SIZE = 50
SEARCH_TIMEOUT = "5s"
SNIPPET_CHARS = 90
PREVIEW_CHARS = 160

# Query parameters that filter trajectories and so travel with every navigation link: those with a value, then
# the boxes ticked.
VALUE_FILTERS = ("correct", "data_source")
BOX_FILTERS = ("used_tool", "has_tool_error", "truncated")


class RolloutQuery(forms.Form):
    step = forms.IntegerField(required=False, min_value=0, max_value=INT_MAX)
    prompt = forms.IntegerField(required=False, min_value=0, max_value=INT_MAX)
    sample = forms.IntegerField(required=False, min_value=0, max_value=INT_MAX)
    page = forms.IntegerField(required=False, min_value=1, max_value=1_000_000)
    # Two samples of the prompt's group side by side: "3,5".
    pair = forms.RegexField(
        required=False,
        regex=r"^\d{1,9},\d{1,9}$",
        label="Side by side",
        error_messages={"invalid": "give two sample numbers, like 3,5."},
    )
    correct = forms.ChoiceField(
        required=False, choices=[("", "all"), ("true", "correct"), ("false", "incorrect")], label="Outcome"
    )
    used_tool = forms.BooleanField(required=False, label="used a tool")
    has_tool_error = forms.BooleanField(required=False, label="tool error")
    truncated = forms.BooleanField(required=False, label="truncated")
    # A benchmark's name, as the rows give it; one that no trajectory has shows none, as any filter that matches none.
    data_source = forms.CharField(required=False, label="Benchmark")
    q = forms.CharField(required=False, max_length=SEARCH_MAX_CHARS, strip=False, label="Search all steps")
    regex = forms.BooleanField(required=False, label="regex")

    def selector_filters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "correct": {"true": True, "false": False}.get(data["correct"]),
            "used_tool": True if data["used_tool"] else None,
            "has_tool_error": True if data["has_tool_error"] else None,
            "truncated": True if data["truncated"] else None,
            "data_source": data["data_source"] or None,
        }

    def filter_params(self) -> dict[str, str]:
        data = self.cleaned_data
        params = {name: data[name] for name in VALUE_FILTERS if data[name]}
        params.update({name: "1" for name in BOX_FILTERS if data[name]})
        return params


def _query(params: dict[str, Any]) -> str:
    return "?" + urlencode({key: value for key, value in params.items() if value not in (None, "")})


def run_protocol(run: Run) -> Protocol:
    """The tool protocol the run's config names (the config's default where it names none)."""
    return get_protocol(config_protocol(run) or ToolConfig.model_fields["protocol"].default)


def _trajectory_view(trajectory: Trajectory, target: tuple[int | None, int | None], protocol: Protocol) -> Trajectory:
    trajectory.turn_views = samples.turn_views(trajectory.turns, protocol)
    trajectory.call_diff = samples.call_diff(trajectory, protocol)
    trajectory.calls_made = samples.calls_made(trajectory, trajectory.call_diff)
    trajectory.answer_text = samples.answer_text(trajectory, protocol)
    trajectory.answer_cell = samples.cell(trajectory.answer_text)
    trajectory.ground_truth_text = samples.expected_text(trajectory.ground_truth)
    trajectory.ground_truth_state = samples.ground_truth_state(trajectory.ground_truth)
    trajectory.swe = swe_view(trajectory.outcome)
    if trajectory.swe is not None:
        trajectory.answer_cell = trajectory.swe["cell"]
        mark_turns(trajectory.turn_views)
    trajectory.search_outcome = search_view(trajectory.outcome, trajectory.ground_truth, trajectory.final_answer)
    if trajectory.search_outcome is not None:
        trajectory.answer_cell = samples.cell(trajectory.search_outcome["cell"])
        trajectory.ground_truth_text = trajectory.search_outcome["expected"] or trajectory.ground_truth_text
    trajectory.is_target = target == (trajectory.prompt_index, trajectory.sample_index)
    trajectory.deep_link = (
        _query({"step": trajectory.step, "prompt": trajectory.prompt_index, "sample": trajectory.sample_index})
        + f"#t-{trajectory.prompt_index}-{trajectory.sample_index}"
    )
    return trajectory


def _prompt_preview(prompt: Any) -> str:
    """The question on one line: the last message of a chat prompt, cut to PREVIEW_CHARS."""
    if isinstance(prompt, list):
        prompt = prompt[-1].get("content", "") if prompt and isinstance(prompt[-1], dict) else ""
    text = _one_line(samples.as_text(prompt)).strip()
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _group_stats(rows: list[tuple[int, bool, float]]) -> dict[str, dict[str, Any]]:
    """Per prompt index of the whole step (filters aside): size, correct count, reward mean and std."""
    by_prompt: dict[int, list[tuple[bool, float]]] = {}
    for prompt_index, correct, reward in rows:
        by_prompt.setdefault(prompt_index, []).append((correct, reward))
    stats = {}
    for prompt_index, items in by_prompt.items():
        rewards = [reward for _, reward in items]
        mean = sum(rewards) / len(rewards)
        std = math.sqrt(sum((reward - mean) ** 2 for reward in rewards) / len(rewards))
        stats[prompt_index] = {
            "size": len(items),
            "correct": sum(1 for correct, _ in items if correct),
            "mean_reward": mean,
            "reward_std": std,
        }
    return stats


def _step_context(run: Run, query: RolloutQuery) -> dict[str, Any]:
    data = query.cleaned_data
    matching = run_trajectories(run=run, **query.selector_filters())
    context: dict[str, Any] = {"notice": ""}
    requested = data["step"]
    if requested is None:
        step = matching.aggregate(step=Max("step"))["step"]
    elif matching.filter(step=requested).exists():
        step = requested
    else:
        below = matching.filter(step__lt=requested).aggregate(step=Max("step"))["step"]
        step = below if below is not None else matching.filter(step__gt=requested).aggregate(step=Min("step"))["step"]
        if step is not None:
            context["notice"] = f"Step {requested} has no matching rollouts; showing step {step}."
    if step is None:
        context["notice"] = "No rollouts match these filters." if query.filter_params() else ""
        return context

    filter_params = query.filter_params()
    prev_step = matching.filter(step__lt=step).aggregate(step=Max("step"))["step"]
    next_step = matching.filter(step__gt=step).aggregate(step=Min("step"))["step"]
    step_rows = list(Trajectory.objects.filter(run=run, step=step).values_list("prompt_index", "correct", "reward"))
    stats = _group_stats(step_rows)
    shown = list(matching.filter(step=step).values_list("prompt_index", flat=True).distinct().order_by("prompt_index"))
    pages = max(1, math.ceil(len(shown) / GROUPS_PER_PAGE))
    page = data["page"]
    if page is None and data["prompt"] in shown:
        page = shown.index(data["prompt"]) // GROUPS_PER_PAGE + 1
    page = min(page or 1, pages)
    page_prompts = shown[(page - 1) * GROUPS_PER_PAGE : page * GROUPS_PER_PAGE]

    target = (data["prompt"], data["sample"])
    protocol = run_protocol(run)
    groups: dict[int, dict[str, Any]] = {}
    for trajectory in matching.filter(step=step, prompt_index__in=page_prompts):
        group = groups.setdefault(
            trajectory.prompt_index,
            {
                "prompt_index": trajectory.prompt_index,
                "prompt": trajectory.prompt,
                "chat": isinstance(trajectory.prompt, list),
                "preview": _prompt_preview(trajectory.prompt),
                "data_source": trajectory.data_source,
                "stats": stats[trajectory.prompt_index],
                "trajectories": [],
            },
        )
        group["trajectories"].append(_trajectory_view(trajectory, target, protocol))
    pair = tuple(int(n) for n in data["pair"].split(",")) if data["pair"] else ()
    for group in groups.values():
        _compare_links(group, step, filter_params, pair if group["prompt_index"] == data["prompt"] else ())
    if pair and not any(group["pair"] for group in groups.values()):
        context["notice"] = (
            f"Samples {data['pair'].replace(',', ' and ')} of prompt {data['prompt']} are not both among"
            f" the rollouts shown for step {step}."
        )
    if (
        data["prompt"] is not None
        and data["sample"] is not None
        and not any(t.is_target for g in groups.values() for t in g["trajectories"])
    ):
        context["notice"] = (
            f"Prompt {data['prompt']}, sample {data['sample']} is not among the rollouts shown for step {step}."
        )

    def step_url(number: int | None) -> str:
        return _query({"step": number, **filter_params}) if number is not None else ""

    context.update(
        step=step,
        call_language=protocol.call_language,
        prev_url=step_url(prev_step),
        next_url=step_url(next_step),
        prev_step=prev_step,
        next_step=next_step,
        groups=[groups[p] for p in page_prompts if p in groups],
        step_total=len(step_rows),
        step_correct=sum(1 for _, correct, _ in step_rows if correct),
        step_groups=len(stats),
        shown_groups=len(shown),
        page=page,
        pages=pages,
        page_urls=[(n, _query({"step": step, **filter_params, "page": n})) for n in range(1, pages + 1)],
    )
    return context


def _compare_links(group: dict[str, Any], step: int, filter_params: dict[str, str], pair: tuple[int, ...]) -> None:
    """The group's best and worst samples, the link that puts them side by side, each sample's link to
    its place beside the best, and the pair asked for (`pair`: two sample numbers of this group)."""
    trajectories = group["trajectories"]
    prompt = group["prompt_index"]
    first = trajectories[0]
    group["expected"] = samples.cell(first.ground_truth_text)
    group["component_names"] = samples.component_columns(trajectories)

    def pair_url(a: int, b: int) -> str:
        return _query({"step": step, "prompt": prompt, "pair": f"{a},{b}", **filter_params}) + f"#pair-{prompt}"

    best, worst = samples.mark_best_and_worst(trajectories)
    group["best_vs_worst_url"] = pair_url(best.sample_index, worst.sample_index) if best else ""
    group["best_sample"] = best.sample_index if best else None
    for trajectory in trajectories:
        trajectory.beside_best_url = (
            pair_url(best.sample_index, trajectory.sample_index) if best and trajectory is not best else ""
        )
    by_sample = {t.sample_index: t for t in trajectories}
    group["pair"] = [by_sample[n] for n in pair] if len(set(pair)) == 2 and set(pair) <= by_sample.keys() else []
    group["pair_close_url"] = _query({"step": step, **filter_params}) + f"#g-{prompt}"


def _snippet(text: str, q: str, regex: bool) -> tuple[str, str, str]:
    """(before, match, after) around the first match, for display; Python's re approximates ~*."""
    start = end = -1
    if regex:
        try:
            found = re.search(q, text, re.IGNORECASE)
        except re.error:
            found = None
        if found:
            start, end = found.span()
    else:
        start = text.lower().find(q.lower())
        end = start + len(q) if start >= 0 else -1
    if start < 0:
        return _one_line(text[: SNIPPET_CHARS * 2]), "", ""
    before = ("…" if start > SNIPPET_CHARS else "") + text[max(0, start - SNIPPET_CHARS) : start]
    after = text[end : end + SNIPPET_CHARS] + ("…" if end + SNIPPET_CHARS < len(text) else "")
    return _one_line(before), _one_line(text[start:end]), _one_line(after)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _search_context(run: Run, query: RolloutQuery) -> dict[str, Any]:
    data = query.cleaned_data
    q, regex = data["q"], data["regex"]
    page = data["page"] or 1
    queryset: QuerySet[Trajectory] = run_trajectories(run=run, q=q, regex=regex, **query.selector_filters())
    offset = (page - 1) * SEARCH_PAGE_SIZE
    rows = queryset.only(
        "step",
        "prompt_index",
        "sample_index",
        "correct",
        "reward",
        "tool_call_count",
        "truncated",
        "data_source",
        "search_text",
    )[offset : offset + SEARCH_PAGE_SIZE + 1]
    # A pattern can be slow on a big run: bound the scan rather than hold a worker.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL statement_timeout = '{SEARCH_TIMEOUT}'")
        results = list(rows)
    base = {"q": q, "regex": "1" if regex else "", **query.filter_params()}
    for result in results:
        result.before, result.match, result.after = _snippet(result.search_text, q, regex)
        result.deep_link = (
            _query({"step": result.step, "prompt": result.prompt_index, "sample": result.sample_index})
            + f"#t-{result.prompt_index}-{result.sample_index}"
        )
    return {
        "results": results[:SEARCH_PAGE_SIZE],
        "search_page": page,
        "search_prev_url": _query({**base, "page": page - 1}) if page > 1 else "",
        "search_next_url": _query({**base, "page": page + 1}) if len(results) > SEARCH_PAGE_SIZE else "",
        "search_offset": offset,
        "search_end": offset + len(results[:SEARCH_PAGE_SIZE]),
    }


def _benchmarks(run: Run, step: int | None, chosen: str) -> list[str]:
    """The benchmarks the filter offers: those of the step shown (a read of one step's rows, where the whole run's
    would be a pass over all of them), and the one chosen."""
    names = {chosen} if chosen else set()
    if step is not None:
        rows = Trajectory.objects.filter(run=run, step=step).exclude(data_source="")
        names.update(rows.values_list("data_source", flat=True).distinct())
    return sorted(names)


def _run_url(run: Run) -> str:
    """The run's own page, where that page is installed."""
    try:
        return reverse("run-detail", args=[run.pk])
    except NoReverseMatch:
        return ""


@login_required
def rollouts(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.visible_to(request.user), pk=run_id)
    query = RolloutQuery(request.GET)
    bounds = Trajectory.objects.filter(run=run).aggregate(first=Min("step"), last=Max("step"))
    context: dict[str, Any] = {"run": run, "run_url": _run_url(run), "form": query, "bounds": bounds, "errors": []}
    status = 200
    if not query.is_valid():
        context["errors"] = [
            f"{query.fields[name].label or name}: {' '.join(errs)}" for name, errs in query.errors.items()
        ]
        status = 400
    elif query.cleaned_data["q"]:
        context["searching"] = True
        try:
            context.update(_search_context(run, query))
        except InvalidSearch as exc:
            context["errors"] = [f"Search: {exc}"]
            status = 400
        except OperationalError:
            context["errors"] = [f"Search: took longer than {SEARCH_TIMEOUT}; make the pattern more specific."]
            status = 400
    elif bounds["last"] is not None:
        context.update(_step_context(run, query))
    chosen = query.cleaned_data.get("data_source", "")
    context["benchmarks"] = _benchmarks(run, context.get("step", bounds["last"]), chosen)
    context["benchmark"] = chosen
    return render(request, "ui/rollouts.html", context, status=status)


@login_required
def rollouts_latest(request: HttpRequest, run_id: int) -> JsonResponse:
    """The run's latest step with rollouts, polled by the page when its websocket is down."""
    run = get_object_or_404(Run.objects.visible_to(request.user), pk=run_id)
    last = Trajectory.objects.filter(run=run).aggregate(step=Max("step"))["step"]
    return JsonResponse({"run": run.pk, "last_step": last, "status": run.status})
