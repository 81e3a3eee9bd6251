"""The trainer's Reporter against the real ingest endpoint, served by a live Django server."""

import math
import time

import pytest

from trainer.contract import RunStatus, TrajectoryIn
from trainer.report.client import Reporter
from webapp.runs.models import MetricStep, Run, RunLogLine, Trajectory
from webapp.runs.services import run_create
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db(transaction=True)


def group(step: int, size: int = 4) -> list[TrajectoryIn]:
    """One GRPO group as the training loop reports it: half the samples used the tool and got it right."""
    items = []
    for sample in range(size):
        tool = sample % 2 == 0
        turns = [{"kind": "model", "text": "```python\nprint(6*7)\n```" if tool else "\\boxed{41}"}]
        if tool:
            turns += [
                {"kind": "tool", "text": "42", "call": "print(6*7)", "status": "ok", "duration_ms": 3.5},
                {"kind": "model", "text": "\\boxed{42}"},
            ]
        items.append(
            TrajectoryIn(
                step=step,
                prompt_index=0,
                sample_index=sample,
                prompt=[{"role": "user", "content": "What is 6 * 7?"}],
                turns=turns,
                final_answer="42" if tool else "41",
                ground_truth="42",
                reward=1.0 if tool else -1.0,
                reward_components={"correct": 1.0 if tool else 0.0},
                correct=tool,
                tool_call_count=int(tool),
                truncated=False,
                prompt_tokens=12,
                response_tokens=30,
            )
        )
    return items


def test_a_run_reported_through_the_client_lands_in_the_database(live_server, django_user_model, tmp_path):
    user = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    run, token = run_create(user=user, name="reported", config={}, managed=False)
    run_transition(run=run, status="starting")
    url = f"{live_server.url}/api/v1/runs/{run.pk}/ingest"

    with Reporter(tmp_path, report_url=url, run_token=token, flush_interval_s=0.05, backoff_initial_s=0.05) as rep:
        rep.set_status(RunStatus.RUNNING)
        for step in range(1, 4):
            rep.log_metrics(step, {"accuracy": step / 4, "kl": math.nan, "timing_s/step": 0.5})
            rep.log(f"step {step} done")
        rep.log_trajectories(group(3))
        rep.set_status(RunStatus.SUCCEEDED, checkpoint=str(tmp_path / "ckpt" / "step-3"))
    assert rep.close() is True and not rep.stopped_by_dashboard

    run = Run.objects.get(pk=run.pk)
    assert run.status == "succeeded" and run.heartbeat_at is not None
    assert run.checkpoint_path.endswith("step-3")
    steps = MetricStep.objects.filter(run=run).order_by("step")
    assert [(m.step, m.values) for m in steps] == [
        (step, {"accuracy": step / 4, "kl": None, "timing_s/step": 0.5}) for step in range(1, 4)
    ]
    assert run.last_step == 3
    trajectories = Trajectory.objects.filter(run=run, step=3).order_by("sample_index")
    assert [(t.sample_index, t.correct, t.reward, t.tool_call_count) for t in trajectories] == [
        (0, True, 1.0, 1),
        (1, False, -1.0, 0),
        (2, True, 1.0, 1),
        (3, False, -1.0, 0),
    ]
    assert trajectories[0].turns[1] == {
        "kind": "tool",
        "text": "42",
        "call": "print(6*7)",
        "status": "ok",
        "duration_ms": 3.5,
    }
    messages = list(
        RunLogLine.objects.filter(run=run, source="trainer").order_by("seq").values_list("message", flat=True)
    )
    assert messages == ["step 1 done", "step 2 done", "step 3 done"]


def test_a_run_cancelled_on_the_dashboard_stops_the_client(live_server, django_user_model, tmp_path):
    user = django_user_model.objects.create_user(username="bob", password="pw-bob-123")
    run, token = run_create(user=user, name="cancelled", config={}, managed=False)
    run_transition(run=run, status="starting")
    url = f"{live_server.url}/api/v1/runs/{run.pk}/ingest"

    rep = Reporter(tmp_path, report_url=url, run_token=token, flush_interval_s=0.05)
    rep.log_metrics(0, {"accuracy": 0.1})
    run_transition(run=Run.objects.get(pk=run.pk), status="cancelled")
    rep.log_metrics(1, {"accuracy": 0.2})
    deadline = time.monotonic() + 10
    while not rep.stopped_by_dashboard and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rep.stopped_by_dashboard
    rep.close(2.0)
    assert Run.objects.get(pk=run.pk).status == "cancelled"
