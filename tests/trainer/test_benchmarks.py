"""The rule that names per-benchmark metrics (trainer.metrics.benchmarks), and how it reads verl's."""

import pytest

from trainer.metrics.benchmarks import (
    BenchmarkMetric,
    benchmark_columns,
    benchmark_key,
    benchmark_metrics,
    better,
    mean_key,
    read_benchmark_key,
)


def test_a_benchmark_metric_is_named_after_its_data_source():
    assert benchmark_key("aime24", "accuracy") == "bench/aime24/accuracy"
    assert benchmark_key("openai/gsm8k", "pass@8") == "bench/openai_gsm8k/pass@8"
    assert mean_key("tool_calls/mean") == "bench-mean/tool_calls/mean"


def test_the_rule_reads_back_what_it_names():
    for source, metric in (("aime24", "accuracy"), ("math500", "tool_calls/mean"), ("nq", "pass@4")):
        assert read_benchmark_key(benchmark_key(source, metric)) == BenchmarkMetric(source, metric)


def test_the_mean_and_other_metrics_are_no_benchmark():
    for key in ("bench-mean/accuracy", "val/accuracy", "accuracy", "bench/", "bench/aime24", "val/easy/accuracy"):
        assert read_benchmark_key(key) is None


@pytest.mark.parametrize(
    ("key", "benchmark", "metric"),
    [
        # verl's accuracy, as its ray_trainer names it and as its MLflow logger writes it ('@' -> '_at_').
        ("val-core/aime24/acc/mean@1", "aime24", "accuracy"),
        ("val-core/aime24/acc/mean_at_1", "aime24", "accuracy"),
        ("val-core/math500/acc/mean@16", "math500", "avg@16"),
        # A data source with a '/' (verl's gsm8k example) is the benchmark tirlab names openai_gsm8k.
        ("val-core/openai/gsm8k/reward/mean_at_1", "openai_gsm8k", "reward/mean@1"),
        ("val-core/openai/gsm8k/acc/best@4/mean", "openai_gsm8k", "acc/best@4/mean"),
        ("val-aux/nq/acc/std_at_4", "nq", "acc/std@4"),
        ("val-core/nq/acc/maj@8/mean", "nq", "acc/maj@8/mean"),
    ],
)
def test_verl_validation_metrics_read_as_benchmark_metrics(key, benchmark, metric):
    assert read_benchmark_key(key) == BenchmarkMetric(benchmark, metric)


def test_verl_metrics_that_are_not_per_source_are_no_benchmark():
    for key in ("val-aux/num_turns/mean", "val-core/aime24/acc", "critic/score/mean"):
        assert read_benchmark_key(key) is None


def test_benchmark_metrics_name_each_benchmark_and_their_mean_over_those_that_have_it():
    named = benchmark_metrics(
        {
            "aime24": {"accuracy": 0.2, "tool_calls/mean": 1.0, "groups/all_same_reward_ratio": 1.0},
            "math500": {"accuracy": 0.6, "tool_calls/mean": 2.0, "pass@4": 0.9},
        }
    )
    assert named == {
        "bench/aime24/accuracy": 0.2,
        "bench/aime24/tool_calls/mean": 1.0,
        "bench/math500/accuracy": 0.6,
        "bench/math500/tool_calls/mean": 2.0,
        "bench/math500/pass@4": 0.9,
        "bench-mean/accuracy": pytest.approx(0.4),
        "bench-mean/tool_calls/mean": 1.5,
        "bench-mean/pass@4": 0.9,
    }


def test_a_run_s_keys_give_its_columns():
    keys = ["accuracy", "bench/aime24/accuracy", "bench-mean/accuracy", "val-core/math500/acc/mean_at_1"]
    assert benchmark_columns(keys) == {
        BenchmarkMetric("aime24", "accuracy"): "bench/aime24/accuracy",
        BenchmarkMetric("math500", "accuracy"): "val-core/math500/acc/mean_at_1",
    }


def test_which_way_is_better():
    assert better("accuracy") == better("pass@8") == better("calls/exact_match") == "higher"
    assert better("calls/format_error_ratio") == "lower"
    # More tool calls or longer answers are what one paper wants and another avoids.
    assert better("tool_calls/mean") is None and better("response_length/mean") is None
