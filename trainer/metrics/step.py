"""Step metrics computed from one step's scored trajectories.

The names are the dashboard's series names; the headline ones come from trainer.contract, which
the run page draws first:

- ``accuracy``: share of completions whose reward marked them correct.
- ``tool_call_ratio``: share of completions with at least one tool call.
- ``code_in_correct``: share of all completions that both called a tool and are correct.
- ``response_length/mean``, ``response_length/max``: model-generated tokens per completion,
  tool output excluded (see `response_length`).
- ``response_length/clip_ratio``: share of completions cut at the length limit.
- ``tool_productivity``: correct answers divided by tool calls over the step (OTC); absent when
  the step made no tool call, since the ratio is undefined there.
- ``tool_calls/mean``, ``tool_calls/max``: tool calls per completion (see `tool_call_count`).
- ``tool_exec/success_ratio``: executions whose status is ``ok`` divided by executions (for the
  ``function_calling`` environment: blocks whose every call the offered schema accepted and ran);
  ``tool_exec/error_ratio``, the rest: errors, timeouts, memory and output limits, kills;
  ``tool_exec/timeout_ratio``: executions with status ``timeout`` divided by executions. All absent
  when nothing was executed.
- ``reward/mean``, ``reward/std``: mean and population standard deviation (ddof=0) of the totals.
- ``reward/<component>/mean``: mean of each named component over the completions that report it.
- ``groups/all_same_reward_ratio``: share of groups whose totals are all equal (within 1e-9), which
  give every completion a zero GRPO advantage.
- ``pass@k`` (asked for with ``pass_at``, normally for validation): the unbiased estimator of
  Chen et al. 2021 (Codex), ``1 - C(n-c, k) / C(n, k)`` per prompt with n samples and c correct,
  averaged over the prompts that have at least k samples.

Validation metrics are the same names under ``prefix="val/"``; `validation_metrics` adds pass@k.
An empty step has no metrics: every name above is a mean or a ratio over nothing.

Per-subset metrics (`subset_metrics`): when prompts carry a label (the arithmetic set's
``extra_info["difficulty"]``, say), the `SUBSET_METRICS` are also computed over each label's prompts
alone and named ``<prefix><label>/<name>``, e.g. ``train/easy/tool_call_ratio``; a label with no
prompt in the step has no metrics. This is what shows a policy that learns to call the tool on
hard problems and to skip it on easy ones, which the step-wide ratio averages away.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trainer.contract import ACCURACY, CODE_IN_CORRECT, RESPONSE_LENGTH_MEAN, TOOL_CALL_RATIO, TOOL_PRODUCTIVITY
from trainer.protocols import get_protocol
from trainer.trajectory import Completion, RewardResult

# Rewards computed the same way can still differ in the last bits (0.1 + 0.2 vs 0.3).
_SAME_REWARD_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ScoredCompletion:
    """One completion with its reward; ``tool_calls`` overrides the counted number of calls when
    the rollout knows it better than the text does."""

    completion: Completion
    reward: RewardResult
    tool_calls: int | None = None


Scored = ScoredCompletion | tuple[Completion, RewardResult]


def tool_call_count(completion: Completion) -> int:
    """Tool calls made by a completion.

    The executions the rollout recorded are the truth when there are any. Without them (a protocol
    whose calls are scored, not executed, like ``tool_call_json``, or a completion rebuilt from
    text) the calls are counted in the text by the protocol's ``count_tool_calls``.
    """
    if completion.executions:
        return len(completion.executions)
    return int(get_protocol(completion.protocol).count_tool_calls(completion.text))


def response_length(completion: Completion) -> int:
    """Model-generated tokens of a completion, tool output excluded.

    ``Completion.response_tokens`` (counted by the rollout's tokenizer over the model's own tokens)
    is used when given. Otherwise the length is the number of characters of the protocol's model
    text (``model_text``), tool outputs removed: a character count is exact for the character-level quickstart
    model and a tokenizer-free proxy for any other.
    """
    if completion.response_tokens is not None:
        return completion.response_tokens
    # With executions recorded, only that many output blocks are real tool output: a block the model
    # wrote itself after the call budget is its own text and counts towards its length.
    real_outputs = len(completion.executions) if completion.executions else None
    return len(get_protocol(completion.protocol).model_text(completion.text, tool_outputs=real_outputs))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n, of which c are
    correct, is correct: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021)."""
    if not 0 <= c <= n:
        raise ValueError(f"correct samples must be between 0 and n={n}, got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    if n - c < k:
        return 1.0
    # Exact integer binomials: n is a group size, small enough that this is cheap and exact.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def step_metrics(
    groups: Iterable[Sequence[Scored]],
    *,
    prefix: str = "",
    pass_at: Iterable[int] = (),
) -> dict[str, float]:
    """Metrics of one step; each group holds the scored completions of one prompt."""
    scored_groups = [[_as_scored(item) for item in group] for group in groups]
    items = [item for group in scored_groups for item in group]
    if not items:
        return {}

    calls = [item.tool_calls if item.tool_calls is not None else tool_call_count(item.completion) for item in items]
    correct = [item.reward.correct for item in items]
    lengths = [response_length(item.completion) for item in items]
    totals = [float(item.reward.total) for item in items]
    statuses = [execution.status for item in items for execution in item.completion.executions]

    metrics: dict[str, float] = {
        ACCURACY: _mean(correct),
        TOOL_CALL_RATIO: _mean(count > 0 for count in calls),
        CODE_IN_CORRECT: _mean(count > 0 and ok for count, ok in zip(calls, correct, strict=True)),
        RESPONSE_LENGTH_MEAN: _mean(lengths),
        "response_length/max": float(max(lengths)),
        "response_length/clip_ratio": _mean(item.completion.truncated for item in items),
        "tool_calls/mean": _mean(calls),
        "tool_calls/max": float(max(calls)),
    }
    if sum(calls):
        metrics[TOOL_PRODUCTIVITY] = sum(correct) / sum(calls)
    if statuses:
        metrics["tool_exec/success_ratio"] = _mean(status == "ok" for status in statuses)
        metrics["tool_exec/error_ratio"] = _mean(status != "ok" for status in statuses)
        metrics["tool_exec/timeout_ratio"] = _mean(status == "timeout" for status in statuses)

    reward_mean = _mean(totals)
    metrics["reward/mean"] = reward_mean
    metrics["reward/std"] = math.sqrt(_mean((total - reward_mean) ** 2 for total in totals))
    components: dict[str, list[float]] = {}
    for item in items:
        for name, value in item.reward.components.items():
            components.setdefault(name, []).append(float(value))
    for name, values in components.items():
        metrics[f"reward/{name}/mean"] = _mean(values)

    nonempty = [group for group in scored_groups if group]
    metrics["groups/all_same_reward_ratio"] = _mean(_all_same(group) for group in nonempty)

    for k in pass_at:
        per_prompt = [
            pass_at_k(len(group), sum(item.reward.correct for item in group), k)
            for group in nonempty
            if len(group) >= k
        ]
        # A prompt with fewer than k samples has no unbiased estimate; it is left out, not guessed.
        if per_prompt:
            metrics[f"pass@{k}"] = _mean(per_prompt)

    return {prefix + name: value for name, value in metrics.items()}


# The step metrics repeated per subset: what the policy does (answers right, calls the tool, and how
# often: multi-call problems need more than one) and what it is paid for it.
SUBSET_METRICS: tuple[str, ...] = (
    ACCURACY,
    TOOL_CALL_RATIO,
    CODE_IN_CORRECT,
    "reward/mean",
    RESPONSE_LENGTH_MEAN,
    "tool_calls/mean",
)


def subset_metrics(
    groups: Iterable[Sequence[Scored]],
    labels: Iterable[str | None],
    *,
    prefix: str = "",
) -> dict[str, float]:
    """`SUBSET_METRICS` over the groups of each label, named ``<prefix><label>/<name>``.

    ``labels`` gives each group's subset, in the order of ``groups``; a group labelled None belongs
    to none. Labels are sorted, so the names come out in the same order every step.
    """
    by_label: dict[str, list[Sequence[Scored]]] = {}
    for group, label in zip(groups, labels, strict=True):
        if label is not None:
            by_label.setdefault(label, []).append(group)
    metrics: dict[str, float] = {}
    for label in sorted(by_label):
        values = step_metrics(by_label[label])
        metrics.update({f"{prefix}{label}/{name}": values[name] for name in SUBSET_METRICS if name in values})
    return metrics


def validation_metrics(groups: Iterable[Sequence[Scored]], *, k: int | Iterable[int] | None = None) -> dict[str, float]:
    """Step metrics under ``val/`` plus ``val/pass@k``; k defaults to the smallest group size, the
    largest k every prompt can be estimated at."""
    scored_groups = [list(group) for group in groups]
    sizes = [len(group) for group in scored_groups if group]
    if k is None:
        ks: Iterable[int] = (min(sizes),) if sizes else ()
    elif isinstance(k, int):
        ks = (k,)
    else:
        ks = k
    return step_metrics(scored_groups, prefix="val/", pass_at=ks)


def _as_scored(item: Scored) -> ScoredCompletion:
    if isinstance(item, ScoredCompletion):
        return item
    completion, reward = item
    return ScoredCompletion(completion, reward)


def _all_same(group: Sequence[ScoredCompletion]) -> bool:
    first = float(group[0].reward.total)
    return all(
        math.isclose(float(item.reward.total), first, rel_tol=0.0, abs_tol=_SAME_REWARD_TOLERANCE) for item in group
    )


def _mean(values: Iterable[float | bool | int]) -> float:
    values = [float(value) for value in values]
    return sum(values) / len(values)
