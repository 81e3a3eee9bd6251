import json
from datetime import timedelta

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from trainer.contract import (
    BIGINT_MAX,
    INT_MAX,
    MAX_CHECKPOINT,
    MAX_LOG_MESSAGE,
    MAX_METRIC_VALUES,
    MAX_STATUS_ERROR,
    TIME_MAX,
    RunStatus,
)
from webapp.runs.models import MetricStep, Run, RunLogLine, Trajectory
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db


def trajectory(step: int, prompt: int, sample: int, **extra) -> dict:
    return {
        "step": step,
        "prompt_index": prompt,
        "sample_index": sample,
        "prompt": [{"role": "user", "content": "What is 17 * 23?"}],
        "turns": [
            {"kind": "model", "text": "Let me compute.\n```python\nprint(17*23)\n```"},
            {"kind": "tool", "text": "391", "call": "print(17*23)", "status": "ok", "duration_ms": 12.5},
            {"kind": "model", "text": "The answer is \\boxed{391}."},
        ],
        "final_answer": "391",
        "ground_truth": "391",
        "reward": 1.0,
        "reward_components": {"answer": 1.0},
        "correct": True,
        "tool_call_count": 1,
        "response_tokens": 40,
        **extra,
    }


def batch(steps=(1, 2), **extra) -> dict:
    return {
        "metrics": [
            {"step": s, "time": 1_700_000_000 + s, "values": {"accuracy": 0.5 + s / 10, "tool_call_ratio": 0.25}}
            for s in steps
        ],
        "trajectories": [trajectory(s, p, i) for s in steps for p in range(2) for i in range(2)],
        "logs": [{"seq": s, "level": "info", "message": f"step {s} done"} for s in steps],
        **extra,
    }


def ingest(run_id: int, token: str | None, payload, **headers):
    client = APIClient()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    body = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
    return client.post(f"/api/v1/runs/{run_id}/ingest", body, content_type="application/json", **auth, **headers)


def counts(run: Run) -> tuple[int, int, int]:
    return (
        MetricStep.objects.filter(run=run).count(),
        Trajectory.objects.filter(run=run).count(),
        RunLogLine.objects.filter(run=run, source="trainer").count(),
    )


def test_batch_is_written(run_and_token):
    run, token = run_and_token
    response = ingest(run.pk, token, batch())
    assert response.status_code == 200, response.content
    assert response.json()["written"] == {"metrics": 2, "trajectories": 8, "logs": 2, "checkpoints": 0}
    assert counts(run) == (2, 8, 2)


def test_same_batch_twice_is_stored_once(run_and_token):
    run, token = run_and_token
    assert ingest(run.pk, token, batch()).status_code == 200
    assert ingest(run.pk, token, batch()).status_code == 200
    assert counts(run) == (2, 8, 2)


def test_a_later_report_for_a_step_merges_its_values(run_and_token):
    run, token = run_and_token
    ingest(run.pk, token, {"metrics": [{"step": 5, "values": {"accuracy": 0.5}}]})
    ingest(run.pk, token, {"metrics": [{"step": 5, "values": {"val/accuracy": 0.4, "accuracy": 0.6}}]})
    assert MetricStep.objects.get(run=run, step=5).values == {"accuracy": 0.6, "val/accuracy": 0.4}


def test_summary_keeps_last_value_of_every_metric(run_and_token):
    run, token = run_and_token
    ingest(run.pk, token, {"metrics": [{"step": 1, "values": {"accuracy": 0.1, "val/accuracy": 0.3}}]})
    ingest(run.pk, token, {"metrics": [{"step": 2, "values": {"accuracy": 0.2}}]})
    ingest(run.pk, token, {"metrics": [{"step": 0, "values": {"accuracy": 0.0}}]})
    run.refresh_from_db()
    assert run.last_step == 2
    assert run.summary == {"accuracy": 0.2, "val/accuracy": 0.3}
    assert run.metric_keys == ["accuracy", "val/accuracy"]


def test_trajectory_tool_error_is_derived_from_its_turns(run_and_token):
    run, token = run_and_token
    bad = trajectory(1, 0, 0)
    bad["turns"][1]["status"] = "timeout"
    ingest(run.pk, token, {"trajectories": [bad, trajectory(1, 0, 1)]})
    errors = dict(Trajectory.objects.filter(run=run).values_list("sample_index", "has_tool_error"))
    assert errors == {0: True, 1: False}


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda b: b["metrics"][1]["values"].update({"accuracy": "high"}), "metrics.1.values.accuracy"),
        (lambda b: b["metrics"][0].update({"step": -1}), "metrics.0.step"),
        (lambda b: b["metrics"][0]["values"].update({"bad key!": 1}), "metrics.0.values.bad key!.[key]"),
        (lambda b: b["trajectories"][3].pop("reward"), "trajectories.3.reward"),
        (lambda b: b["trajectories"][0].update({"correct": "yes"}), "trajectories.0.correct"),
        (lambda b: b["trajectories"][0]["turns"][0].update({"kind": "system"}), "trajectories.0.turns.0.kind"),
        (lambda b: b["logs"][0].update({"level": "loud"}), "logs.0.level"),
        (lambda b: b.update({"surprise": 1}), "surprise"),
        (lambda b: b.update({"status": {"status": "exploded"}}), "status.status"),
    ],
)
def test_a_bad_part_refuses_the_whole_batch(run_and_token, mutate, field):
    run, token = run_and_token
    payload = batch()
    mutate(payload)
    response = ingest(run.pk, token, payload)
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert counts(run) == (0, 0, 0)
    run.refresh_from_db()
    assert run.heartbeat_at is None


def test_invalid_json_is_refused(run_and_token):
    run, token = run_and_token
    response = ingest(run.pk, token, '{"metrics": [')
    assert response.status_code == 400
    assert "invalid JSON" in response.json()["detail"]


def test_nan_is_refused_rather_than_stored(run_and_token):
    run, token = run_and_token
    response = ingest(run.pk, token, '{"metrics": [{"step": 1, "values": {"loss": NaN}}]}')
    assert response.status_code == 400
    assert counts(run) == (0, 0, 0)


def test_illegal_status_change_refuses_the_batch(run_and_token):
    run, token = run_and_token
    run_transition(run=run, status="starting")  # its report makes it running, which cannot go back
    response = ingest(run.pk, token, batch(status={"status": "queued"}))
    assert response.status_code == 400
    assert "status.status" in response.json()
    assert counts(run) == (0, 0, 0)


def test_first_report_of_a_starting_run_makes_it_running(run_and_token):
    run, token = run_and_token
    run_transition(run=run, status="starting")
    assert ingest(run.pk, token, {"heartbeat": True}).status_code == 200
    run.refresh_from_db()
    assert run.status == "running" and run.heartbeat_at is not None and run.started_at is not None


def test_first_report_of_an_unmanaged_run_makes_it_running(run_and_token):
    run, token = run_and_token  # launch=false: queued until the trainer you started reports
    assert ingest(run.pk, token, batch(status={"status": "running"})).status_code == 200
    run.refresh_from_db()
    assert run.status == "running" and run.started_at is not None
    assert counts(run) == (2, 8, 2)


def test_an_unmanaged_run_can_report_start_to_finish_in_one_batch(run_and_token):
    run, token = run_and_token
    assert ingest(run.pk, token, batch(status={"status": "succeeded"})).status_code == 200
    run.refresh_from_db()
    assert run.status == "succeeded" and run.started_at is not None and run.finished_at is not None


def test_final_report_finishes_the_run_with_its_error_and_checkpoint(run_and_token):
    run, token = run_and_token
    run_transition(run=run, status="starting")
    payload = batch(status={"status": "failed", "error": "reward crashed", "checkpoint": "/ckpt/step-2"})
    assert ingest(run.pk, token, payload).status_code == 200
    run.refresh_from_db()
    assert (run.status, run.error, run.checkpoint_path) == ("failed", "reward crashed", "/ckpt/step-2")
    assert counts(run) == (2, 8, 2)


def test_token_of_run_a_cannot_write_run_b(make_run):
    run_a, token_a = make_run(name="a")
    run_b, _ = make_run(name="b")
    response = ingest(run_b.pk, token_a, batch())
    assert response.status_code == 403
    assert counts(run_b) == (0, 0, 0)


def test_a_finished_runs_token_is_refused(run_and_token):
    run, token = run_and_token
    run_transition(run=run, status="failed")
    response = ingest(run.pk, token, batch())
    assert response.status_code == 409
    assert counts(run) == (0, 0, 0)


def test_a_cancelled_runs_final_flush_is_kept_for_a_grace_period_then_refused(run_and_token, settings):
    run, token = run_and_token
    run_transition(run=run, status="cancelled")
    # The trainer's last words after the stop request: final metrics and its checkpoint; no status change.
    response = ingest(run.pk, token, batch(status={"status": "cancelled", "checkpoint": "/ckpt/step-2"}))
    assert response.status_code == 200 and response.json()["stop"] is True
    run.refresh_from_db()
    assert (run.status, run.checkpoint_path) == ("cancelled", "/ckpt/step-2")
    assert counts(run) == (2, 8, 2)
    settings.INGEST_CANCEL_GRACE_S = 0
    Run.objects.filter(pk=run.pk).update(finished_at=run.finished_at - timedelta(seconds=5))
    assert ingest(run.pk, token, batch()).status_code == 409


def test_a_final_report_sent_again_after_its_answer_was_lost_is_taken_once(run_and_token, settings):
    """The trainer timed out waiting for the answer to its final batch, which had been written: the retry
    gets 200 and changes nothing, rather than 409 (which would make the trainer think it was lost)."""
    run, token = run_and_token
    final = batch(status={"status": "succeeded", "checkpoint": "/ckpt/step-2"})
    assert ingest(run.pk, token, final).status_code == 200
    run.refresh_from_db()
    finished_at = run.finished_at
    again = ingest(run.pk, token, final)
    assert again.status_code == 200 and again.json()["stop"] is False
    run.refresh_from_db()
    assert (run.status, run.finished_at, counts(run)) == ("succeeded", finished_at, (2, 8, 2))
    assert ingest(run.pk, token, batch(status={"status": "failed"})).status_code == 409  # not a replay
    assert ingest(run.pk, token, batch(steps=(3,))).status_code == 409  # nor is more data without it
    settings.INGEST_CANCEL_GRACE_S = 0
    Run.objects.filter(pk=run.pk).update(finished_at=finished_at - timedelta(seconds=5))
    assert ingest(run.pk, token, final).status_code == 409


def test_a_running_runs_batches_do_not_ask_it_to_stop(run_and_token):
    run, token = run_and_token
    response = ingest(run.pk, token, batch())
    assert response.status_code == 200 and response.json()["stop"] is False


def test_missing_or_personal_token_is_refused(run_and_token, owner):
    from webapp.accounts.services import api_token_create

    run, _ = run_and_token
    assert ingest(run.pk, None, batch()).status_code == 401
    _, personal = api_token_create(user=owner, name="script")
    assert ingest(run.pk, personal, batch()).status_code == 403


def test_unknown_run_is_refused(run_and_token):
    _, token = run_and_token
    assert ingest(999_999, token, batch()).status_code == 403


@override_settings(INGEST_MAX_BYTES=2_000)
def test_batch_over_the_size_limit_is_refused_with_413(run_and_token):
    run, token = run_and_token
    response = ingest(run.pk, token, batch(steps=range(50)))
    assert response.status_code == 413
    assert counts(run) == (0, 0, 0)


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"metrics": [{"step": INT_MAX + 1, "values": {}}]}, "metrics.0.step"),
        ({"metrics": [{"step": 1, "time": TIME_MAX + 1, "values": {}}]}, "metrics.0.time"),
        ({"logs": [{"seq": BIGINT_MAX + 1, "message": "x"}]}, "logs.0.seq"),
        ({"trajectories": [trajectory(1, INT_MAX + 1, 0)]}, "trajectories.0.prompt_index"),
        ({"trajectories": [trajectory(1, 0, 0, response_tokens=INT_MAX + 1)]}, "trajectories.0.response_tokens"),
    ],
)
def test_numbers_the_database_cannot_hold_are_refused_as_field_errors(run_and_token, payload, field):
    run, token = run_and_token
    response = ingest(run.pk, token, payload)
    assert response.status_code == 400
    assert field in response.json()


TOO_MANY_VALUES = {f"m{i}": 0.0 for i in range(MAX_METRIC_VALUES + 1)}


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"metrics": [{"step": 1, "values": TOO_MANY_VALUES}]}, "metrics.0.values"),
        ({"metrics": [{"step": 1, "values": {"accuracy\n": 0.5}}]}, "metrics.0.values.accuracy\n.[key]"),
        ({"logs": [{"seq": 1, "message": "x" * (MAX_LOG_MESSAGE + 1)}]}, "logs.0.message"),
        ({"status": {"status": RunStatus.FAILED, "error": "x" * (MAX_STATUS_ERROR + 1)}}, "status.error"),
        ({"status": {"status": RunStatus.RUNNING, "checkpoint": "x" * (MAX_CHECKPOINT + 1)}}, "status.checkpoint"),
        ({"status": {"status": RunStatus.LOST}}, "status.status"),
    ],
)
def test_what_the_contract_does_not_allow_is_refused_as_a_field_error(run_and_token, payload, field):
    run, token = run_and_token
    run_transition(run=run, status=RunStatus.STARTING)
    response = ingest(run.pk, token, payload)
    assert response.status_code == 400
    assert field in response.json(), response.json()
