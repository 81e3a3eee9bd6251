"""A software-engineering trajectory's outcome as the rollouts page shows it: how it ended, its patch as a
coloured unified diff, and the hidden tests' results (trainer.contract.SweOutcomeIn)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

END_LABELS = {
    "finished": "finished",
    "max_turns": "turn limit",
    "stuck": "stuck",
    "context_full": "context full",
    "no_call": "no call",
}


@dataclass(frozen=True)
class DiffLine:
    kind: str  # file, hunk, add, remove, context
    text: str


def diff_lines(patch: str) -> list[DiffLine]:
    """Each line of a unified diff with its kind, for colouring."""
    lines = []
    for line in patch.splitlines():
        if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file mode", "deleted file mode")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "remove"
        else:
            kind = "context"
        lines.append(DiffLine(kind, line))
    return lines


def swe_view(outcome: Any) -> dict[str, Any] | None:
    """What the template shows of a swe outcome; None for a trajectory without one."""
    if not isinstance(outcome, dict) or outcome.get("kind") != "swe":
        return None
    tests = outcome.get("tests") or []
    return {
        "end": END_LABELS.get(outcome.get("end"), outcome.get("end")),
        "turns": outcome.get("turns"),
        "resolved": bool(outcome.get("resolved")),
        "applied": bool(outcome.get("applied")),
        "patch": outcome.get("patch") or "",
        "diff": diff_lines(outcome.get("patch") or ""),
        "apply_log": outcome.get("apply_log") or "",
        "tests": tests,
        "passed": sum(1 for t in tests if t.get("passed")),
    }
