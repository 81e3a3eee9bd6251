"""One trajectory as the rollouts page reads it: a row of a GRPO group (reward, its components, calls,
answer against expected, status) that opens into the trajectory's turns, tool calls and their outputs
as turns of their own.

The turns come as the trainer reported them (trainer.report.trajectories): model text with the tool
outputs between. A tool output is shown without its protocol's wrapper (`Protocol.output_body`), with
the wrapper's opening that the model wrote (python_markdown's ```output) moved from the end of the
model's turn to the output; the call that ran is shown with the output only when the model turn above
shows no call of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trainer.protocols import Protocol, TextPart
from trainer.protocols.call_diff import CompletionDiff, completion_diff
from trainer.protocols.calls import ground_truth_calls, predicted_calls
from webapp.runs.models import Trajectory

# The answer and expected cells of a row show this much; the opened trajectory shows all.
CELL_CHARS = 120


@dataclass
class TurnView:
    kind: str
    parts: list[TextPart] = field(default_factory=list)  # model turns: prose and calls
    text: str = ""  # tool turns: the output, without the protocol's wrapper
    call: str = ""  # tool turns: the code or call, when the model turn above does not show it
    opening: str = ""  # tool turns: the wrapper's opening the model wrote (```output)
    status: str = ""
    duration_ms: float | None = None


def turn_views(turns: list[dict], protocol: Protocol) -> list[TurnView]:
    views: list[TurnView] = []
    for index, turn in enumerate(turns):
        text = turn.get("text", "")
        if turn.get("kind") == "tool":
            above = views[-1] if views and views[-1].kind == "model" else None
            shows_call = above is not None and any(part.kind == "call" for part in above.parts)
            views.append(
                TurnView(
                    kind="tool",
                    text=protocol.output_body(text),
                    call="" if shows_call else turn.get("call") or "",
                    opening=protocol.output_opening if _opens_output(turns, index - 1, protocol) else "",
                    status=turn.get("status") or "",
                    duration_ms=turn.get("duration_ms"),
                )
            )
        else:
            if _opens_output(turns, index, protocol):
                text = text.rstrip()[: -len(protocol.output_opening)]
            views.append(TurnView(kind="model", parts=protocol.call_parts(text)))
    return views


def _opens_output(turns: list[dict], index: int, protocol: Protocol) -> bool:
    """Whether model turn `index` ends with the opening of the tool output that follows it."""
    if not protocol.output_opening or index < 0 or index + 1 >= len(turns):
        return False
    turn, following = turns[index], turns[index + 1]
    return (
        turn.get("kind") != "tool"
        and following.get("kind") == "tool"
        and turn.get("text", "").rstrip().endswith(protocol.output_opening)
    )


def as_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def call_signature(call: dict[str, Any]) -> str:
    """A call on one line, as a researcher writes it: name(key=value, ...), values as JSON."""
    arguments = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call["arguments"].items())
    return f"{call['name']}({arguments})"


def calls_text(calls: list[dict[str, Any]]) -> str:
    return "; ".join(call_signature(call) for call in calls) if calls else "no call (a reply)"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _model_text(trajectory: Trajectory) -> str:
    return "".join(turn.get("text", "") for turn in trajectory.turns if turn.get("kind") != "tool")


def call_diff(trajectory: Trajectory, protocol: Protocol) -> CompletionDiff | None:
    """The trajectory's JSON calls against its ground truth's, where the run's calls are JSON and the
    ground truth is calls (the call metrics' reading of both); None elsewhere."""
    if not protocol.json_calls:
        return None
    truth = ground_truth_calls(trajectory.ground_truth)
    if truth is None:
        return None
    return completion_diff(_model_text(trajectory), truth, protocol.name)


def answer_text(trajectory: Trajectory, protocol: Protocol) -> str:
    """The trajectory's answer: the final answer; for a reply that only calls tools, the calls it made."""
    if trajectory.final_answer:
        return trajectory.final_answer
    if protocol.json_calls:
        made = predicted_calls(_model_text(trajectory), protocol.name)
        if made:
            return calls_text(made)
    return ""


def expected_text(ground_truth: Any) -> str:
    """The expected answer: calls as name(arguments) where the ground truth is calls (a multi-turn
    ground truth's end state apart: `ground_truth_state`), else the ground truth's text."""
    truth = ground_truth_calls(ground_truth)
    return calls_text(truth) if truth is not None else as_text(ground_truth)


def cell(text: str) -> str:
    """`text` on one line, cut to CELL_CHARS: a row's cell."""
    return _cut(text)


def ground_truth_state(ground_truth: Any) -> str:
    """A multi-turn ground truth's expected end state, as indented JSON; "" where it has none."""
    if isinstance(ground_truth, dict) and "state" in ground_truth:
        return json.dumps(ground_truth["state"], ensure_ascii=False, indent=2)
    return ""


def calls_made(trajectory: Trajectory, diff: CompletionDiff | None) -> str:
    """The row's calls: made against expected where the calls are read against a ground truth, else
    the calls that ran."""
    if diff is not None:
        made = "–" if diff.format_error else str(diff.predicted_calls)
        return f"{made} / {diff.expected_calls}"
    return str(trajectory.tool_call_count)


def component_columns(trajectories: list[Trajectory]) -> list[str]:
    """The reward components of a group, a column each (in the order the reward gave them), each
    trajectory's values set as `component_values` in that order (None where it has no such part)."""
    names: dict[str, None] = {}
    for trajectory in trajectories:
        names.update(dict.fromkeys(trajectory.reward_components or {}))
    for trajectory in trajectories:
        trajectory.component_values = [(trajectory.reward_components or {}).get(name) for name in names]
    return list(names)


def mark_best_and_worst(trajectories: list[Trajectory]) -> tuple[Trajectory | None, Trajectory | None]:
    """The group's best and worst sample by reward (the first of equals), each marked on its row; none
    when every sample got the same reward (then the group gives no gradient)."""
    for trajectory in trajectories:
        trajectory.rank = ""
    if not trajectories:
        return None, None
    best = max(trajectories, key=lambda t: t.reward)
    worst = min(trajectories, key=lambda t: t.reward)
    if best.reward == worst.reward:
        return None, None
    best.rank, worst.rank = "best", "worst"
    return best, worst
