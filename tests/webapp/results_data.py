"""Runs for the results-table tests, their metric steps written through the real ingest under the benchmark rule
(trainer.metrics.benchmarks). The numbers are made up for the tests, shaped like a ToRL table (AIME has 30
problems: 8/30 is 26.7%); they are not measured results."""

from typing import Any

from trainer.metrics.benchmarks import benchmark_metrics
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run
from webapp.runs.services import run_create

T0 = 1_780_000_000.0

# Benchmark -> accuracy of a base model and of a run's checkpoints after 100 and 200 steps.
BASE = {"aime24": 3 / 30, "aime25": 2 / 30, "math500": 0.552}
STEP_100 = {"aime24": 7 / 30, "aime25": 5 / 30, "math500": 0.742}
STEP_200 = {"aime24": 8 / 30, "aime25": 4 / 30, "math500": 0.758}


def run_with_steps(user, name: str, steps: dict[int, dict[str, Any]], **fields: Any) -> Run:
    """A run whose trainer reported `steps`: step -> its values (metric key -> number)."""
    run, token = run_create(user=user, name=name, config={}, managed=False, **fields)
    metrics = [{"step": step, "time": T0 + step, "values": values} for step, values in steps.items()]
    ingest_batch(run_id=run.pk, token=token, payload={"metrics": metrics})
    run.refresh_from_db()
    return run


def evaluation(by_benchmark: dict[str, float], metric: str = "accuracy", **more: float) -> dict[str, float]:
    """A step's values of an evaluation: `metric` per benchmark under the rule's names, and their means."""
    return benchmark_metrics({source: {metric: value} for source, value in by_benchmark.items()}) | more


def paper_runs(user, **fields: Any) -> list[Run]:
    """A base model and two checkpoints of a ToRL run, each evaluated as a run of its own (at its step)."""
    training = run_with_steps(user, "ToRL-1.5B", {1: {"accuracy": 0.31}}, **fields)
    rows = [
        ("Qwen2.5-Math-1.5B", 0, BASE),
        ("ToRL-1.5B · step 100", 100, STEP_100),
        ("ToRL-1.5B · step 200", 200, STEP_200),
    ]
    return [
        run_with_steps(
            user,
            name,
            {step: evaluation(values, tool_call_ratio=0.8 if step else 0.0)},
            parent=training,
            parent_relation="evaluation",
            evaluated_step=step,
            **fields,
        )
        for name, step, values in rows
    ]
