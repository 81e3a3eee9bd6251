import pytest

from webapp.runs.models import RunLogLine, RunStatus
from webapp.runs.services import run_cancel
from webapp.runs.transitions import IllegalTransition, run_transition

pytestmark = pytest.mark.django_db

LEGAL_PATHS = [
    ["starting", "running", "succeeded"],
    ["starting", "running", "failed"],
    ["starting", "running", "cancelled"],
    ["starting", "running", "lost"],
    ["starting", "failed"],
    ["starting", "lost"],
    ["cancelled"],
    ["failed"],
]


@pytest.mark.parametrize("path", LEGAL_PATHS, ids=lambda p: "→".join(p))
def test_legal_paths_from_queued_are_applied(run_and_token, path):
    run, _ = run_and_token
    for status in path:
        run = run_transition(run=run, status=status)
    assert run.status == path[-1]


@pytest.mark.parametrize(
    "path, illegal",
    [
        ([], "running"),
        ([], "succeeded"),
        ([], "lost"),
        (["starting"], "queued"),
        (["starting", "running"], "starting"),
        (["starting", "running", "succeeded"], "failed"),
        (["starting", "running", "succeeded"], "running"),
        (["cancelled"], "starting"),
    ],
)
def test_illegal_transition_is_refused_and_changes_nothing(run_and_token, path, illegal):
    run, _ = run_and_token
    for status in path:
        run = run_transition(run=run, status=status)
    before = run.status
    with pytest.raises(IllegalTransition):
        run_transition(run=run, status=illegal)
    run.refresh_from_db()
    assert run.status == before


def test_running_sets_started_and_finishing_sets_finished(run_and_token):
    run, _ = run_and_token
    run = run_transition(run=run, status="starting")
    assert run.started_at is None
    run = run_transition(run=run, status="running")
    assert run.started_at is not None and run.finished_at is None
    run = run_transition(run=run, status="failed", error="CUDA out of memory")
    assert run.finished_at is not None
    assert run.error == "CUDA out of memory"


def test_each_transition_leaves_a_log_line(run_and_token):
    run, _ = run_and_token
    run_transition(run=run, status="starting")
    messages = list(RunLogLine.objects.filter(run=run).values_list("message", flat=True))
    assert "status queued → starting" in messages


def test_cancel_of_finished_run_is_refused(run_and_token):
    run, _ = run_and_token
    run = run_cancel(run=run)
    assert run.status == RunStatus.CANCELLED
    with pytest.raises(IllegalTransition):
        run_cancel(run=run)
