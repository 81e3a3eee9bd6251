"""A software-engineering run's rollouts in a real browser: each trajectory's calls and outputs in SkyRL-v0's
spelling (`<function=...>` blocks, `EXECUTION RESULT of [...]` observations, bash's exit code), then its end state,
its patch as a coloured diff and the hidden tests' table, readable in both themes."""

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from tests.webapp.test_swe_outcome import outcome
from trainer.envs.swe import observations
from trainer.protocols import get_protocol
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = "/workspace/calc"
PATCH = (
    "diff --git a/calc.py b/calc.py\nindex 3f2a1c4..8b0d9e2 100644\n--- a/calc.py\n+++ b/calc.py\n"
    "@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n def inc(a):\n"
)
TESTS = [
    {"name": "test_calc.py::test_add", "kind": "FAIL_TO_PASS"},
    {"name": "test_calc.py::test_add_negative", "kind": "FAIL_TO_PASS"},
    {"name": "test_calc.py::test_inc", "kind": "PASS_TO_PASS"},
]
PYTEST_FAIL = (
    "F.\n=== FAILURES ===\n___ test_add ___\n    def test_add():\n>       assert add(2, 3) == 5\n"
    "E       assert -1 == 5\ntest_calc.py:4: AssertionError\n1 failed, 1 passed in 0.02s"
)


def bash(command: str, output: str, code: int) -> tuple[str, str]:
    call = f"<function=execute_bash>\n<parameter=command>{command}</parameter>\n</function"
    text = observations.command_observation(output, code, working_dir=ROOT, python="/usr/bin/python")
    return call, observations.execution_result("execute_bash", text)


def editor(command: str, observation: str, **params: str) -> tuple[str, str]:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in {"command": command, **params}.items())
    return f"<function=str_replace_editor>\n{body}</function", observations.execution_result(
        "str_replace_editor", observation
    )


def codeact_turns(steps: list[tuple[str, str, str | None]]) -> list[dict]:
    """Turns as trainer.report.trajectories builds them from a codeact completion: (thought, call, observation)
    each, the observation None for finish (nothing follows it)."""
    protocol = get_protocol("codeact")
    text, calls = "", []
    for thought, call, observation in steps:
        text += f"{thought}\n{call}"
        if observation is None:
            text = protocol.close_call(text)
        else:
            text = protocol.append_output(text, observation)
            calls.append(protocol.close_call(call))
    turns, pending = [], iter(calls)
    for segment in protocol.segments(text, tool_outputs=len(calls)):
        if segment.kind == "tool":
            turns.append({"kind": "tool", "text": segment.text, "call": next(pending), "status": "ok"})
        else:
            turns.append({"kind": "model", "text": segment.text})
    return turns


VIEW = editor(
    "view",
    f"Here's the result of running `cat -n` on {ROOT}/calc.py:\n     1\tdef add(a, b):\n     2\t    return a - b\n",
    path=f"{ROOT}/calc.py",
)
FIX = editor(
    "str_replace",
    f"The file {ROOT}/calc.py has been edited. Here's the result of running `cat -n` on a snippet of "
    f"{ROOT}/calc.py:\n     1\tdef add(a, b):\n     2\t    return a + b\nReview the changes and make sure they are "
    "as expected. Edit the file again if necessary.",
    path=f"{ROOT}/calc.py",
    old_str="    return a - b",
    new_str="    return a + b",
)
RESOLVED = [
    ("The issue says add(2, 3) returns -1. Let me look at calc.py.", *VIEW),
    ("Let me reproduce it with the tests.", *bash(f"cd {ROOT} && python -m pytest -q", PYTEST_FAIL, 1)),
    ("add subtracts; it should add.", *FIX),
    ("Run the tests again.", *bash(f"cd {ROOT} && python -m pytest -q", "..\n2 passed in 0.01s", 0)),
    ("The fix works.", "<function=finish>\n</function", None),
]
NOT_APPLIED = [
    ("Let me look at calc.py.", *VIEW),
    ("I will rewrite the function.", *FIX),
    ("Check it.", *bash(f"cd {ROOT} && python -c 'import calc; print(calc.add(2, 3))'", "5", 0)),
]
APPLY_LOG = (
    "Checking patch calc.py...\nerror: while searching for:\ndef add(a, b):\n    return a - b\n\n"
    "error: patch failed: calc.py:1\nerror: calc.py: patch does not apply\n"
    "Failed to apply patch with git apply, trying with patch command...\npatching file calc.py\n"
    "Hunk #1 FAILED at 1.\n1 out of 1 hunk FAILED -- saving rejects to file calc.py.rej\nAPPLY_PATCH_FAIL\n"
)


def trajectory(sample: int, steps: list, result: dict) -> dict:
    return {
        "step": 0,
        "prompt_index": 0,
        "sample_index": sample,
        "prompt": "<uploaded_files>\n/workspace/calc\n</uploaded_files>\nadd(2, 3) returns -1, expected 5. Fix it.",
        "turns": codeact_turns(steps),
        "reward": 1.0 if result["resolved"] else 0.0,
        "correct": result["resolved"],
        "tool_call_count": result["calls"],
        "outcome": result,
    }


def report_run(user) -> int:
    run, token = run_create(
        user=user, name="swe", config={"tools": {"protocol": "codeact", "environment": "swe"}}, managed=False
    )
    resolved = outcome(
        turns=5,
        calls=5,
        patch=PATCH,
        patch_lines=2,
        apply_log="Checking patch calc.py...\nApplied patch calc.py cleanly.\nAPPLY_PATCH_PASS\n",
        tests=[{**t, "passed": True, "message": ""} for t in TESTS],
    )
    failed = outcome(
        end="max_turns",
        turns=3,
        calls=3,
        patch=PATCH,
        patch_lines=2,
        applied=False,
        resolved=False,
        apply_log=APPLY_LOG,
        tests=[{**t, "passed": False, "message": "not run"} for t in TESTS],
    )
    # A third, graded: the patch applied and a test still fails, with its message.
    wrong = outcome(
        end="stuck",
        turns=4,
        calls=4,
        patch=PATCH.replace("+    return a + b", "+    return a + b + 1"),
        resolved=False,
        tests=[
            {**TESTS[0], "passed": False, "message": "AssertionError: assert 6 == 5"},
            {**TESTS[1], "passed": False, "message": "AssertionError: assert 0 == -1"},
            {**TESTS[2], "passed": True, "message": ""},
        ],
    )
    ingest_batch(
        run_id=run.pk,
        token=token,
        payload={
            "trajectories": [
                trajectory(0, RESOLVED, resolved),
                trajectory(1, NOT_APPLIED, failed),
                trajectory(2, RESOLVED[:4], wrong),
            ]
        },
    )
    return run.pk


@pytest.fixture
def run_id(researcher) -> int:
    return in_thread(report_run, user=researcher)


def test_the_turns_patch_and_tests_of_each_trajectory(page, live_server, run_id):
    log_in(page, live_server, f"/runs/{run_id}/rollouts/", wait_for="#rollouts")
    assert page.locator("#t-0-0 .answer-cell").inner_text() == "finished · +1 −1 · tests 3/3"
    assert page.locator("#t-0-1 .answer-cell").inner_text() == "turn limit · +1 −1 · not applied"
    for row in ("t-0-0", "t-0-1", "t-0-2"):
        page.click(f"#{row} > summary")
        page.wait_for_selector(f"#{row}[open] .swe-outcome", state="visible")

    # The turns: SkyRL-v0's calls whole, the observations, bash's exit code beside the status.
    resolved = page.locator("#t-0-0")
    calls = resolved.locator(".turn.model pre.call")
    assert calls.count() == 5
    assert calls.nth(1).inner_text().startswith("<function=execute_bash>")
    assert calls.nth(1).inner_text().endswith("</function>")
    finish = resolved.locator(".turn.model").nth(4)
    assert finish.locator("pre.call").inner_text() == "<function=finish>\n</function>"
    assert finish.locator(".prose").all_inner_texts() == ["The fix works.\n"]
    outputs = resolved.locator(".turn.tool")
    assert outputs.count() == 4
    assert outputs.nth(1).locator(".output").inner_text().startswith("EXECUTION RESULT of [execute_bash]:")
    assert outputs.nth(1).locator(".exit-code").inner_text() == "exit 1"
    assert outputs.nth(3).locator(".exit-code").inner_text() == "exit 0"
    assert outputs.nth(0).locator(".exit-code").count() == 0  # the editor has no exit code

    # The outcome: end state, resolved, the patch as a diff, every test passed.
    head = resolved.locator(".swe-head").inner_text()
    assert head.split()[:2] == ["resolved", "finished"] and "patch applied" in head and "tests 3/3 passed" in head
    assert resolved.locator(".diff-remove").all_inner_texts() == ["-    return a - b"]
    assert resolved.locator(".diff-add").all_inner_texts() == ["+    return a + b"]
    assert resolved.locator(".diff-hunk").all_inner_texts() == ["@@ -1,5 +1,5 @@"]
    assert resolved.locator(".diff-file").count() == 4
    assert resolved.locator(".swe-tests tbody tr.is-pass").count() == 3
    assert not resolved.locator(".apply-log").evaluate("e => e.open")

    # A patch that did not apply: said so, its apply log open, the tests not run.
    failed = page.locator("#t-0-1")
    head = failed.locator(".swe-head").inner_text()
    assert "not resolved" in head and "turn limit" in head and "patch did not apply" in head
    assert "tests not run" in head
    assert failed.locator(".apply-log").evaluate("e => e.open")
    assert "APPLY_PATCH_FAIL" in failed.locator(".apply-log pre").inner_text()
    assert failed.locator(".swe-tests tbody tr.is-not-run").count() == 3

    # Graded and failing: each test's result and message.
    wrong = page.locator("#t-0-2 .swe-tests tbody tr")
    assert [wrong.nth(i).locator("td").nth(2).inner_text() for i in range(3)] == ["fail", "fail", "pass"]
    assert wrong.nth(0).locator("td").nth(3).inner_text() == "AssertionError: assert 6 == 5"
    assert "stuck" in page.locator("#t-0-2 .swe-head").inner_text()

    assert_readable_in_both_themes(
        page,
        "#t-0-0 .diff-add",
        "#t-0-0 .diff-remove",
        "#t-0-0 .diff-hunk",
        "#t-0-0 .diff-file >> nth=0",
        "#t-0-0 .diff-context >> nth=0",
        "#t-0-0 .exit-code >> nth=0",
        "#t-0-2 .swe-tests tr.is-fail td.mono:last-child >> nth=0",
        "#t-0-2 .swe-tests tr.is-fail .badge >> nth=0",
        "#t-0-1 .swe-tests tr.is-not-run .badge >> nth=0",
    )
    page.click("#t-0-2 > summary")  # closed again: the screenshot shows the first two
    page.locator("#t-0-0").scroll_into_view_if_needed()
    screenshot(page, "rollouts_swe.png")
    toggle_theme(page)
    screenshot(page, "rollouts_swe_dark.png")
    toggle_theme(page)
