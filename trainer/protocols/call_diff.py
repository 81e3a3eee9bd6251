"""One completion's JSON calls against its example's ground-truth calls, call by call and argument by
argument: what a function-calling researcher reads on the rollouts page.

The calls are read and paired as `trainer.metrics.calls` reads and pairs them for the call metrics
(`pair_calls`: each ground-truth call, in order, with the unpaired predicted call of its name that has
the most of its arguments). What is left over on both sides is then paired in order as a wrong tool
name (the call metrics count it as a missing and an unexpected call); after that, a ground-truth call
left alone is a missing call, a predicted call an unexpected one. Within a pair each argument is a
match, a wrong value, missing or unexpected; values compare as JSON (key order does not matter; 5 and
"5" differ). A completion whose calls do not parse is a format error: it makes no call, so every
ground-truth call is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from trainer.contract import EXACT_MATCH
from trainer.protocols.calls import call_scores, pair_calls, predicted_calls, same_value

ArgumentStatus = Literal["match", "wrong_value", "missing", "unexpected"]
CallStatus = Literal["match", "differs", "wrong_name", "missing_call", "unexpected_call"]

LABELS: dict[str, str] = {
    "match": "match",
    "wrong_value": "wrong value",
    "missing": "missing parameter",
    "unexpected": "unexpected parameter",
    "differs": "arguments differ",
    "wrong_name": "wrong tool name",
    "missing_call": "missing call",
    "unexpected_call": "unexpected call",
}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class ArgumentDiff:
    """One argument of a call: its values as JSON text, None on the side that lacks the key."""

    key: str
    status: ArgumentStatus
    expected: str | None
    got: str | None

    @property
    def label(self) -> str:
        return LABELS[self.status]


@dataclass(frozen=True)
class CallDiff:
    """A ground-truth call and the predicted call paired with it: `expected` and `got` are their tool
    names, one of them None for a missing or an unexpected call."""

    status: CallStatus
    expected: str | None
    got: str | None
    arguments: tuple[ArgumentDiff, ...]

    @property
    def label(self) -> str:
        return LABELS[self.status]

    @property
    def differences(self) -> int:
        """What is wrong with this call: a missing or unexpected call is one difference, a pair has
        one per argument that does not match."""
        if self.status in ("missing_call", "unexpected_call"):
            return 1
        wrong_name = self.status == "wrong_name"
        return wrong_name + sum(argument.status != "match" for argument in self.arguments)


@dataclass(frozen=True)
class CompletionDiff:
    """Every call of one completion against the ground truth's, in ground-truth order with the
    unexpected calls last. `exact_match` is the call metric's (`calls/exact_match`)."""

    calls: tuple[CallDiff, ...]
    format_error: bool
    exact_match: bool
    expected_calls: int
    predicted_calls: int

    @property
    def differences(self) -> int:
        return sum(call.differences for call in self.calls)


def _pair(want: dict[str, Any], got: dict[str, Any]) -> CallDiff:
    expected, made = want["arguments"], got["arguments"]
    arguments = []
    for key, value in expected.items():
        if key not in made:
            arguments.append(ArgumentDiff(key, "missing", _json(value), None))
        else:
            same = same_value(made[key], value)
            arguments.append(ArgumentDiff(key, "match" if same else "wrong_value", _json(value), _json(made[key])))
    arguments += [ArgumentDiff(key, "unexpected", None, _json(v)) for key, v in made.items() if key not in expected]
    status: CallStatus = "match" if all(a.status == "match" for a in arguments) else "differs"
    if want["name"] != got["name"]:
        status = "wrong_name"
    return CallDiff(status, want["name"], got["name"], tuple(arguments))


def completion_diff(text: str, truth: list[dict[str, Any]], protocol: str = "tool_call_json") -> CompletionDiff:
    """The calls of `text` (the model's own text, in `protocol`'s syntax) against `truth`, ground-truth calls
    as `trainer.metrics.calls.ground_truth_calls` gives them."""
    made = predicted_calls(text, protocol)
    pairs, unpaired = pair_calls(truth, made or [])
    calls: list[CallDiff] = []
    for want, got in pairs:
        if got is None and unpaired:
            # A call of another tool where this one was wanted: a wrong name, its arguments compared.
            got = unpaired.pop(0)
        if got is None:
            arguments = tuple(ArgumentDiff(k, "missing", _json(v), None) for k, v in want["arguments"].items())
            calls.append(CallDiff("missing_call", want["name"], None, arguments))
            continue
        calls.append(_pair(want, got))
    for got in unpaired:
        arguments = tuple(ArgumentDiff(k, "unexpected", None, _json(v)) for k, v in got["arguments"].items())
        calls.append(CallDiff("unexpected_call", None, got["name"], arguments))
    return CompletionDiff(
        calls=tuple(calls),
        format_error=made is None,
        exact_match=call_scores(text, truth, protocol)[EXACT_MATCH] == 1.0,
        expected_calls=len(truth),
        predicted_calls=len(made or []),
    )
