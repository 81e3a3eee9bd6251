"""A software-engineering trajectory's outcome as the rollouts page shows it: how it ended, its patch as a
coloured unified diff, and the hidden tests' results (trainer.contract.SweOutcomeIn), and each bash output's exit
code beside its turn."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

END_LABELS = {
    "finished": "finished",
    "max_turns": "turn limit",
    "stuck": "stuck",
    "context_full": "context full",
    "no_call": "no call",
}
END_TITLES = {
    "finished": "The model called finish.",
    "max_turns": "The trajectory reached the run's turn limit.",
    "stuck": "OpenHands' stuck detector stopped it: the same action and observation again, or the same error.",
    "context_full": "The response reached data.max_response_tokens.",
    "no_call": "The model's turn held no call.",
}

TESTS_SHOWN = 200
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# How the two spellings end a bash observation (trainer.envs.swe.observations.command_observation, compact.bash).
_EXIT = re.compile(r"(?:\[Command finished with exit code (-?\d+)\]|\[exit (-?\d+)\])\s*\Z")


@dataclass(frozen=True)
class DiffLine:
    kind: str  # file, hunk, add, remove, context
    text: str


def diff_lines(patch: str) -> list[DiffLine]:
    """Each line of a unified diff with its kind, for colouring. Inside a hunk the header's counts say which lines
    belong to it, so a removed line that reads `--- x` is a removal, not a file header."""
    lines = []
    old = new = 0
    for line in patch.splitlines():
        hunk = _HUNK.match(line)
        if (old > 0 or new > 0) and not hunk:
            if line.startswith("+"):
                kind, new = "add", new - 1
            elif line.startswith("-"):
                kind, old = "remove", old - 1
            else:
                # Context, or "\ No newline at end of file" (which counts for neither side).
                kind = "context"
                if not line.startswith("\\"):
                    old, new = old - 1, new - 1
        elif hunk:
            kind = "hunk"
            old = int(hunk.group(1) if hunk.group(1) is not None else 1)
            new = int(hunk.group(2) if hunk.group(2) is not None else 1)
        elif line.startswith("+") and not line.startswith("+++ "):
            kind = "add"
        elif line.startswith("-") and not line.startswith("--- "):
            kind = "remove"
        elif line.startswith(" ") or line.startswith("\\"):
            kind = "context"
        else:
            # diff --git, index, ---/+++, new file mode, rename from ...: the file's header.
            kind = "file"
        lines.append(DiffLine(kind, line))
    return lines


def exit_code(output: str) -> str:
    """The exit code a bash observation ends with, as text; "" for any other output."""
    match = _EXIT.search(output)
    return "" if match is None else (match.group(1) or match.group(2))


def _test_view(test: dict[str, Any], applied: bool) -> dict[str, Any]:
    passed = bool(test.get("passed"))
    # A patch that did not apply leaves the tests unrun (grade.py reports them failed, "not run").
    result = "pass" if passed else ("fail" if applied else "not run")
    message = str(test.get("message") or "")
    if result == "not run" and message == "not run":
        message = ""  # the result column says it
    return {**test, "passed": passed, "result": result, "state": result.replace(" ", "-"), "message": message}


def swe_view(outcome: Any) -> dict[str, Any] | None:
    """What the template shows of a swe outcome; None for a trajectory without one."""
    if not isinstance(outcome, dict) or outcome.get("kind") != "swe":
        return None
    applied = bool(outcome.get("applied"))
    tests = [_test_view(t, applied) for t in outcome.get("tests") or [] if isinstance(t, dict)]
    # A real instance's thousands of PASS_TO_PASS: the page lists TESTS_SHOWN tests, those that did not pass
    # first, in the instance's order; the rest are counted.
    failing = sum(1 for t in tests if not t["passed"])
    room_for_passes, room_for_failures = max(TESTS_SHOWN - failing, 0), TESTS_SHOWN
    shown = []
    for test in tests:
        if test["passed"] and room_for_passes > 0:
            room_for_passes -= 1
        elif not test["passed"] and room_for_failures > 0:
            room_for_failures -= 1
        else:
            continue
        shown.append(test)
    diff = diff_lines(outcome.get("patch") or "")
    passed = sum(1 for t in tests if t["passed"])
    added = sum(1 for line in diff if line.kind == "add")
    removed = sum(1 for line in diff if line.kind == "remove")
    end = outcome.get("end")
    return {
        "end": END_LABELS.get(end, end),
        "end_title": END_TITLES.get(end, ""),
        "turns": outcome.get("turns"),
        "resolved": bool(outcome.get("resolved")),
        "applied": applied,
        "patch": outcome.get("patch") or "",
        "diff": diff,
        "added": added,
        "removed": removed,
        "apply_log": outcome.get("apply_log") or "",
        "tests": tests,
        "tests_shown": shown,
        "tests_hidden": len(tests) - len(shown),
        "tests_hidden_failing": failing - sum(1 for t in shown if not t["passed"]),
        "passed": passed,
        # The row's one-line cell: how it ended, the patch's size, the tests.
        "cell": " · ".join(
            (
                END_LABELS.get(end, str(end)),
                f"+{added} −{removed}" if diff else "no patch",
                f"tests {passed}/{len(tests)}" if applied else "not applied",
            )
        ),
    }


def mark_turns(turn_views: list[Any]) -> None:
    """A swe trajectory's turns as the page shows them: each tool turn's exit code (bash's), for a badge beside its
    status (a bash call that ran is "ok" whatever its exit code); a codeact call whole, with the `>` of its
    `</function>` (trainer.protocols.codeact's call_re ends the call at the stop string `</function`, leaving the
    `>` to the tool output or, for finish, to the prose after it)."""
    for view in turn_views:
        if view.kind == "tool":
            view.exit_code = exit_code(view.text)
            continue
        parts: list[Any] = []
        for part in view.parts:
            if parts and parts[-1].kind == "call" and parts[-1].text.endswith("</function>") and part.kind == "prose":
                part = replace(part, text=part.text.removeprefix(">"))
                if not part.text:
                    continue
            if part.kind == "call" and part.text.endswith("</function"):
                part = replace(part, text=part.text + ">")
            parts.append(part)
        view.parts = parts
