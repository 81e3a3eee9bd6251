"""A software-engineering trajectory's outcome through ingest and on the rollouts page (JavaScript off): stored
and returned by the API, its patch as a coloured diff, the hidden tests' table; a malformed outcome refused with
its field and nothing of the batch written."""

import re

import pytest
from django.test import Client

from trainer.contract import TrajectoryIn
from webapp.runs.ingest import IngestRejected, ingest_batch
from webapp.runs.models import Trajectory

pytestmark = pytest.mark.django_db

PATCH = (
    "diff --git a/f.py b/f.py\nindex 1..2 100644\n--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n-    return a - b\n+    return a + b\n"
)
CALL = "<f=edit><p=cmd>str_replace</p><p=path>f.py</p><p=old>a - b</p><p=new>a + b</p></f>"


def outcome(**changes) -> dict:
    return {
        "kind": "swe",
        "end": "finished",
        "turns": 2,
        "calls": 2,
        "format_errors": 0,
        "patch": PATCH,
        "patch_lines": 2,
        "applied": True,
        "apply_log": "Applied patch f.py cleanly.",
        "resolved": True,
        "tests": [
            {"name": "test_f.py::test_add_0", "kind": "FAIL_TO_PASS", "passed": True, "message": ""},
            {"name": "test_f.py::test_inc_0", "kind": "PASS_TO_PASS", "passed": False, "message": "AssertionError"},
        ],
        **changes,
    }


def trajectory(sample: int, result: dict) -> dict:
    return {
        "step": 0,
        "prompt_index": 0,
        "sample_index": sample,
        "prompt": "Fix: add(2, 3) returns -1, expected 5.",
        "turns": [
            {"kind": "model", "text": CALL},
            {"kind": "tool", "text": "<r>edited</r>\n", "call": CALL, "status": "ok"},
            {"kind": "model", "text": "<f=finish></f>"},
        ],
        "reward": 1.0 if result["resolved"] else 0.0,
        "correct": result["resolved"],
        "tool_call_count": 2,
        "outcome": result,
    }


@pytest.fixture
def client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def test_an_outcome_is_stored_returned_and_shown_as_a_diff_and_a_test_table(client, make_run):
    run, token = make_run(config={"tools": {"protocol": "codeact_mini", "environment": "swe"}})
    failed = outcome(resolved=False, applied=False, end="max_turns", apply_log="error: patch failed: f.py:1")
    ingest_batch(
        run_id=run.pk, token=token, payload={"trajectories": [trajectory(0, outcome()), trajectory(1, failed)]}
    )
    stored = Trajectory.objects.get(run=run, sample_index=0)
    assert stored.outcome == outcome()
    api = client.get(f"/api/v1/runs/{run.pk}/trajectories/").json()
    results = api["results"] if isinstance(api, dict) else api
    assert results[0]["outcome"]["tests"][0]["name"] == "test_f.py::test_add_0"
    html = client.get(f"/runs/{run.pk}/rollouts/").content.decode()
    assert '<span class="diff-remove">-    return a - b</span>' in html
    assert '<span class="diff-add">+    return a + b</span>' in html
    assert '<span class="diff-hunk">@@ -1,2 +1,2 @@</span>' in html
    rows = re.findall(r'<tr class="is-(pass|fail)">\s*<td class="mono">([^<]+)</td>', html)
    assert ("pass", "test_f.py::test_add_0") in rows and ("fail", "test_f.py::test_inc_0") in rows
    assert "patch did not apply" in html and "turn limit" in html and "resolved" in html
    assert "error: patch failed: f.py:1" in html
    # Side by side: both outcomes, in the pair's two columns.
    pair = client.get(f"/runs/{run.pk}/rollouts/?step=0&prompt=0&pair=0,1").content.decode()
    columns = pair.split('<section class="pair"')[1].split('<div class="samples"')[0]
    assert columns.count('<section class="swe-outcome"') == 2


def test_a_malformed_outcome_is_refused_by_field_and_nothing_is_written(make_run):
    run, token = make_run()
    bad = outcome(end="gave_up")
    with pytest.raises(IngestRejected) as refused:
        ingest_batch(
            run_id=run.pk, token=token, payload={"trajectories": [trajectory(0, outcome()), trajectory(1, bad)]}
        )
    assert any("outcome" in field and "end" in field for field in refused.value.errors)
    assert not Trajectory.objects.filter(run=run).exists()


def test_model_text_in_a_patch_is_escaped(client, make_run):
    run, token = make_run(config={"tools": {"protocol": "codeact_mini", "environment": "swe"}})
    hostile = outcome(patch=PATCH + "+<script>window.__pwned=1</script>\n")
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": [trajectory(0, hostile)]})
    html = client.get(f"/runs/{run.pk}/rollouts/").content.decode()
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "sql"}, "trajectories.1.outcome.kind"),
        ({"applied": "yes"}, "trajectories.1.outcome.applied"),
        ({"turns": -1}, "trajectories.1.outcome.turns"),
        ({"surprise": 1}, "trajectories.1.outcome.surprise"),
        ({"patch": "+" * 1_000_001}, "trajectories.1.outcome.patch"),
        (
            {"tests": [{"name": "t", "kind": "FLAKY", "passed": True, "message": ""}]},
            "trajectories.1.outcome.tests.0.kind",
        ),
    ],
)
def test_each_malformed_outcome_is_refused_with_its_field(make_run, change, field):
    run, token = make_run()
    with pytest.raises(IngestRejected) as refused:
        ingest_batch(
            run_id=run.pk,
            token=token,
            payload={"trajectories": [trajectory(0, outcome()), trajectory(1, outcome(**change))]},
        )
    assert field in refused.value.errors, refused.value.errors
    assert not Trajectory.objects.filter(run=run).exists()


def test_a_trajectory_without_an_outcome_stores_none(make_run):
    run, token = make_run()
    plain = trajectory(0, outcome())
    del plain["outcome"]
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": [plain]})
    assert Trajectory.objects.get(run=run).outcome is None


def test_search_finds_a_patch_and_a_failing_test(client, make_run):
    run, token = make_run(config={"tools": {"protocol": "codeact_mini", "environment": "swe"}})
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": [trajectory(0, outcome())]})
    api = f"/api/v1/runs/{run.pk}/trajectories/"
    assert len(client.get(f"{api}?q=return a %2B b").json()["results"]) == 1
    assert len(client.get(f"{api}?q=test_inc_0").json()["results"]) == 1  # failed: searchable
    assert len(client.get(f"{api}?q=test_add_0").json()["results"]) == 0  # passed: not


def test_the_diff_lines_kinds():
    from webapp.ui.rollout_swe import diff_lines, exit_code, swe_view

    patch = (
        "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n x = 1\n--- y = 2\n+++ y = 3\n"
        " z\n\\ No newline at end of file\ndiff --git a/g.py b/g.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/g.py\n@@ -0,0 +1 @@\n+print(1)\n"
    )
    kinds = [(line.kind, line.text) for line in diff_lines(patch)]
    assert kinds == [
        ("file", "diff --git a/f.py b/f.py"),
        ("file", "--- a/f.py"),
        ("file", "+++ b/f.py"),
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("context", " x = 1"),
        ("remove", "--- y = 2"),  # inside the hunk: a removed line, not a header
        ("add", "+++ y = 3"),
        ("context", " z"),
        ("context", "\\ No newline at end of file"),
        ("file", "diff --git a/g.py b/g.py"),
        ("file", "new file mode 100644"),
        ("file", "--- /dev/null"),
        ("file", "+++ b/g.py"),
        ("hunk", "@@ -0,0 +1 @@"),
        ("add", "+print(1)"),
    ]
    assert exit_code("EXECUTION RESULT of [execute_bash]:\nF\n[Command finished with exit code 1]") == "1"
    assert exit_code("5\n[exit 0]") == "0"
    assert exit_code("edited") == ""
    view = swe_view(outcome(applied=False, resolved=False, tests=[
        {"name": "t", "kind": "FAIL_TO_PASS", "passed": False, "message": "not run"}
    ]))  # fmt: skip
    assert view["tests"][0]["result"] == "not run" and view["tests"][0]["message"] == ""
    assert view["cell"] == "finished · +1 −1 · not applied"
    assert swe_view({"kind": "other"}) is None and swe_view(None) is None


def test_thousands_of_tests_are_taken_and_the_page_lists_those_that_did_not_pass():
    from webapp.ui.rollout_swe import TESTS_SHOWN, swe_view

    tests = [{"name": f"t{i}", "kind": "PASS_TO_PASS", "passed": i % 1000 != 7, "message": ""} for i in range(5000)]
    TrajectoryIn.model_validate(trajectory(0, outcome(tests=tests, resolved=False)))
    view = swe_view(outcome(tests=tests, resolved=False))
    assert len(view["tests_shown"]) == TESTS_SHOWN
    assert {t["name"] for t in view["tests_shown"] if not t["passed"]} == {f"t{i}" for i in range(7, 5000, 1000)}
    assert view["tests_hidden"] == 5000 - TESTS_SHOWN and view["passed"] == 4995
    assert view["tests_hidden_failing"] == 0
    unrun = swe_view(outcome(tests=[{**t, "passed": False} for t in tests], applied=False, resolved=False))
    assert len(unrun["tests_shown"]) == TESTS_SHOWN and unrun["tests_hidden_failing"] == 5000 - TESTS_SHOWN
