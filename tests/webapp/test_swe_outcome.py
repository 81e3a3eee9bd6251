"""A software-engineering trajectory's outcome through ingest and on the rollouts page (JavaScript off): stored
and returned by the API, its patch as a coloured diff, the hidden tests' table; a malformed outcome refused with
its field and nothing of the batch written."""

import re

import pytest
from django.test import Client

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
