"""Per-benchmark evaluation metrics, and the one rule that names them.

An evaluation's rows are grouped by their ``data_source`` (ToRL's test parquet mixes aime24, aime25 and math500
that way; Search-R1's nq, hotpotqa, …): each group is one benchmark, a column of the paper's table. Its metrics
are named ``bench/<benchmark>/<metric>``, and their mean over the benchmarks that have them (a paper's "Avg."
column, each benchmark weighing the same whatever its size) ``bench-mean/<metric>``. ``<benchmark>`` is the
data source as `source_name` writes it into a metric name ("openai/gsm8k" becomes "openai_gsm8k").

The metrics of each benchmark (`BENCHMARK_METRICS`, computed by the same functions as the step metrics,
over that benchmark's rows alone):

- ``accuracy``: share of the evaluation's first pass marked correct: the greedy pass, or with no greedy pass the
  mean over the k samples (avg@k); exact match under the search and function-calling rewards, the resolve rate
  under the swe reward;
- ``avg@k`` and ``pass@k`` (a pass of k > 1 samples per prompt): the mean correctness of the k samples, and the
  unbiased pass@k estimator (trainer.metrics.step.pass_at_k);
- ``tool_call_ratio``, ``tool_calls/mean``, ``code_in_correct``, ``tool_productivity``, ``response_length/mean``,
  ``reward/mean``: as the step metrics define them;
- the environment's own: the calls against the ground truth (``calls/exact_match``, …) for function calling,
  ``search/searches/mean`` and ``search/valid_action_ratio`` for search, ``swe/resolve_rate`` and
  ``swe/finish_action_ratio`` for software engineering.

`read_benchmark_key` reads the rule back, and also reads verl's validation metrics, so that a verl run logged
through the MLflow API fills the same table: verl names them ``val-core/<data_source>/<var>/<stat>`` (and
``val-aux/…``), <stat> being ``mean@N``, ``std@N``, ``best@N/mean``, ``maj@N/mean``, …, and its MLflow logger
writes '@' as '_at_' (verl 0.9.1 verl/trainer/ppo/ray_trainer.py:722-738, verl/utils/tracking.py:588-592).
verl's accuracy (``acc``, the variable tirlab's reward adapter returns) reads as tirlab's: ``acc/mean@1`` is
``accuracy`` and ``acc/mean@N`` is ``avg@N``; every other one keeps verl's name with '@' (``reward/mean@1``,
``acc/best@4/mean``: verl's bootstrap estimate, which is not the unbiased pass@k).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainer.contract import (
    ACCURACY,
    CODE_IN_CORRECT,
    RESPONSE_LENGTH_MEAN,
    SWE_FINISH_RATIO,
    SWE_RESOLVE_RATE,
    TOOL_CALL_RATIO,
    TOOL_CALLS_MEAN,
    TOOL_PRODUCTIVITY,
)
from trainer.metrics.search import source_name

BENCH_PREFIX = "bench/"
MEAN_PREFIX = "bench-mean/"

# What each benchmark reports, where the evaluation has it (a sampled pass adds avg@k and pass@k).
BENCHMARK_METRICS: tuple[str, ...] = (
    ACCURACY,
    TOOL_CALL_RATIO,
    TOOL_CALLS_MEAN,
    CODE_IN_CORRECT,
    TOOL_PRODUCTIVITY,
    RESPONSE_LENGTH_MEAN,
    "reward/mean",
    "calls/exact_match",
    "calls/name_accuracy",
    "calls/param_accuracy",
    "calls/format_error_ratio",
    "calls/sequence_match",
    "search/searches/mean",
    "search/valid_action_ratio",
    SWE_RESOLVE_RATE,
    SWE_FINISH_RATIO,
)
_SAMPLED = re.compile(r"^(avg|pass)@\d+$")

# Which way a metric is better, for marking a table's best value; metrics not listed have no better way
# (more tool calls or longer responses are what one paper wants and another avoids).
LOWER_IS_BETTER = frozenset({"calls/format_error_ratio"})
_NEUTRAL = frozenset({TOOL_CALL_RATIO, TOOL_CALLS_MEAN, RESPONSE_LENGTH_MEAN, "search/searches/mean"})

_VERL = re.compile(
    r"^val-(?:core|aux)/(?P<source>.+)/(?P<var>[^/]+)/"
    r"(?P<stat>(?:mean|std|best|worst|maj)(?:@|_at_)(?P<n>\d+)(?:/(?:mean|std))?)$"
)


@dataclass(frozen=True)
class BenchmarkMetric:
    """A metric key read as a table cell's place: its benchmark (column) and what it measures."""

    benchmark: str
    metric: str


def benchmark_key(benchmark: str, metric: str) -> str:
    """The metric key of `metric` on the benchmark of data source `benchmark`."""
    return f"{BENCH_PREFIX}{source_name(benchmark)}/{metric}"


def mean_key(metric: str) -> str:
    return f"{MEAN_PREFIX}{metric}"


def read_benchmark_key(key: str) -> BenchmarkMetric | None:
    """The benchmark and metric a key names (tirlab's bench/… or verl's val-core/…, val-aux/…), or None."""
    if key.startswith(BENCH_PREFIX):
        benchmark, _, metric = key.removeprefix(BENCH_PREFIX).partition("/")
        return BenchmarkMetric(benchmark, metric) if benchmark and metric else None
    match = _VERL.match(key)
    if match is None:
        return None
    var, stat, n = match["var"], match["stat"].replace("_at_", "@"), int(match["n"])
    if var == "acc" and stat == f"mean@{n}":
        metric = ACCURACY if n == 1 else f"avg@{n}"
    else:
        metric = f"{var}/{stat}"
    return BenchmarkMetric(source_name(match["source"]), metric)


def better(metric: str) -> str | None:
    """'higher' or 'lower' where one way is better, None where neither is."""
    if metric in LOWER_IS_BETTER:
        return "lower"
    if metric in _NEUTRAL or metric.startswith("response_length/"):
        return None
    return "higher"


def benchmark_metrics(by_benchmark: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Each benchmark's metrics (its data source -> the metrics computed over its rows alone) under the rule's
    names, the ones `BENCHMARK_METRICS` lists and a sampled pass's avg@k and pass@k, with their means."""
    named: dict[str, float] = {}
    kept: dict[str, list[float]] = {}
    for source in sorted(by_benchmark):
        for metric, value in by_benchmark[source].items():
            if metric in BENCHMARK_METRICS or _SAMPLED.match(metric):
                named[benchmark_key(source, metric)] = value
                kept.setdefault(metric, []).append(value)
    named.update({mean_key(metric): sum(values) / len(values) for metric, values in kept.items()})
    return named


def benchmark_columns(keys: Iterable[str]) -> dict[BenchmarkMetric, str]:
    """The keys of a run that are benchmark metrics, by what each one reads as."""
    read = {}
    for key in keys:
        cell = read_benchmark_key(key)
        if cell is not None:
            read.setdefault(cell, key)
    return read
