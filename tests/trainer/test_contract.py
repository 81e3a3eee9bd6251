"""The trainer <-> dashboard contract on its own: statuses, the metric-key rule, limits, the batch schema."""

import pytest
from pydantic import TypeAdapter, ValidationError

from trainer.contract import (
    ACTIVE_STATUSES,
    FINISHED_STATUSES,
    HEADLINE_METRICS,
    MAX_LOG_LINES,
    MAX_METRIC_KEY,
    MAX_METRIC_STEPS,
    MAX_TRAJECTORIES,
    MAX_TURNS,
    PHASES,
    TRAINER_STATUSES,
    IngestBatch,
    MetricKey,
    PhaseIn,
    RunStatus,
    StatusIn,
    TrajectoryIn,
    is_metric_key,
)
from trainer.metrics.step import ScoredCompletion, step_metrics
from trainer.trajectory import Completion, RewardResult, ToolExecution

TRAJECTORY = {"step": 1, "prompt_index": 0, "sample_index": 0, "prompt": "2 + 3?", "reward": 1.0, "correct": True}


def test_every_status_is_either_active_or_finished_in_lifecycle_order():
    assert ACTIVE_STATUSES + FINISHED_STATUSES == tuple(RunStatus)


def test_a_trainer_reports_running_and_how_it_ended_but_never_queues_starts_or_loses_a_run():
    assert TRAINER_STATUSES == (RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


@pytest.mark.parametrize("status", TRAINER_STATUSES)
def test_the_schema_takes_a_status_a_trainer_reports(status):
    assert StatusIn.model_validate_json(f'{{"status": "{status}"}}').status == status


@pytest.mark.parametrize("status", sorted(set(RunStatus) - set(TRAINER_STATUSES)))
def test_the_schema_refuses_a_status_only_the_dashboard_sets(status):
    with pytest.raises(ValidationError):
        StatusIn.model_validate_json(f'{{"status": "{status}"}}')


KEYS = [
    ("accuracy", True),
    ("response_length/mean", True),
    ("pass@4", True),
    ("reward/torl@2/mean", True),
    ("val/easy:tool_call_ratio", True),
    ("timing_s/gen-1.5", True),
    ("a" * MAX_METRIC_KEY, True),
    ("a" * (MAX_METRIC_KEY + 1), False),
    ("", False),
    ("a key", True),  # MLflow's rule: spaces, unicode word characters
    ("précision", True),
    ("a//b", False),  # ... but no name that normalises as a path to another
    ("../x", False),
    ("a,b", False),
    ("torl#2", False),
    ("accuracy\n", False),
    ("accuracy\r\n", False),
]


@pytest.mark.parametrize("key, valid", KEYS)
def test_the_trainer_and_the_schema_agree_on_every_metric_key(key, valid):
    try:
        TypeAdapter(MetricKey).validate_python(key)
        in_schema = True
    except ValidationError:
        in_schema = False
    assert (is_metric_key(key), in_schema) == (valid, valid)


def test_only_strings_are_metric_keys():
    assert not is_metric_key(3) and not is_metric_key(None)


def test_headline_metrics_are_distinct_metric_keys():
    assert len(set(HEADLINE_METRICS)) == len(HEADLINE_METRICS)
    assert all(is_metric_key(key) for key in HEADLINE_METRICS)


def test_a_step_that_calls_a_tool_reports_every_headline_metric():
    called = Completion("x", executions=(ToolExecution(call="print(1)", status="ok"),), response_tokens=5)
    group = [
        ScoredCompletion(called, RewardResult(1.0, correct=True)),
        ScoredCompletion(Completion("y"), RewardResult(0.0)),
    ]
    assert set(HEADLINE_METRICS) <= set(step_metrics([group]))


@pytest.mark.parametrize(
    "field, limit, item",
    [
        ("metrics", MAX_METRIC_STEPS, {"step": 1, "values": {}}),
        ("trajectories", MAX_TRAJECTORIES, TRAJECTORY),
        ("logs", MAX_LOG_LINES, {"seq": 1, "message": "x"}),
    ],
)
def test_a_batch_holds_at_most_its_limit_of_each_kind(field, limit, item):
    assert len(getattr(IngestBatch.model_validate({field: [item] * limit}), field)) == limit
    with pytest.raises(ValidationError, match=field):
        IngestBatch.model_validate({field: [item] * (limit + 1)})


def test_a_trajectory_holds_at_most_its_limit_of_turns():
    turn = {"kind": "model", "text": "..."}
    TrajectoryIn.model_validate({**TRAJECTORY, "turns": [turn] * MAX_TURNS})
    with pytest.raises(ValidationError, match="turns"):
        TrajectoryIn.model_validate({**TRAJECTORY, "turns": [turn] * (MAX_TURNS + 1)})


def test_a_reward_must_be_a_finite_number():
    for reward in (float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValidationError, match="reward"):
            TrajectoryIn.model_validate({**TRAJECTORY, "reward": reward})


def test_a_run_loads_then_cold_starts_then_trains_and_an_evaluation_run_evaluates():
    assert PHASES == ("loading", "sft", "rl", "eval")


def test_a_checkpoint_is_reported_with_the_steps_done_and_its_folder():
    batch = IngestBatch.model_validate({"checkpoints": [{"step": 6, "path": "/runs/4/checkpoints/step-6"}]})
    assert [(c.step, c.path) for c in batch.checkpoints] == [(6, "/runs/4/checkpoints/step-6")]
    for bad in ({"step": -1, "path": "x"}, {"step": 1, "path": ""}, {"step": 1}):
        with pytest.raises(ValidationError, match="checkpoints"):
            IngestBatch.model_validate({"checkpoints": [bad]})


def test_a_phase_is_done_of_total_with_an_optional_eta():
    phase = IngestBatch.model_validate({"phase": {"name": "sft", "done": 1500, "total": 1500, "eta_s": 0}}).phase
    assert (phase.name, phase.done, phase.total, phase.eta_s, phase.detail) == ("sft", 1500, 1500, 0.0, "")
    assert IngestBatch.model_validate({}).phase is None


@pytest.mark.parametrize(
    "phase",
    [
        {"name": "sft", "done": 1501, "total": 1500},
        {"name": "rl", "done": 0, "total": 0},
        {"name": "rl", "done": True, "total": 20},
        {"name": "rl", "done": 1, "total": 20, "eta_s": float("inf")},
        {"name": "finetune", "done": 0, "total": 1},
    ],
)
def test_a_phase_past_its_total_or_out_of_the_contract_is_refused(phase):
    with pytest.raises(ValidationError):
        PhaseIn.model_validate(phase)
