"""Reading JSON function calls: a completion's calls and an example's ground-truth calls, normalized to
{"name", "arguments"}, paired call by call, and one completion's call scores against the ground truth.

The calls are read as `trainer.protocols.tool_call_json` reads them: Tool-N1's layout (the last block,
one JSON list) first, then ToolRL's (the first block, one call per line); ``parameters`` and
``arguments`` both name a call's arguments. Multi-turn function calling (protocol ``artist_fc``)
reads every ``<tool>`` block of the model's own text, in order (`trainer.protocols.artist_fc.ArtistFc.calls`).
What each score means is in trainer.metrics.calls, which averages them over a step.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from trainer.contract import (
    EXACT_MATCH,
    FORMAT_ERROR_RATIO,
    NAME_ACCURACY,
    PARAM_ACCURACY,
    SEQUENCE_MATCH,
)
from trainer.protocols.artist_fc import ArtistFc
from trainer.protocols.base import get_protocol
from trainer.protocols.tool_call_json import parse_calls_lines, parse_calls_list


def normalize_calls(calls: Iterable[Any]) -> list[dict[str, Any]] | None:
    """Calls as {"name", "arguments"}; None when one is not an object with a string name and object arguments."""
    out = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return None
        arguments = call.get("arguments", call.get("parameters", {}))
        if not isinstance(arguments, dict):
            return None
        out.append({"name": call["name"], "arguments": arguments})
    return out


def predicted_calls(text: str, protocol: str = "tool_call_json") -> list[dict[str, Any]] | None:
    """The calls a completion's model text makes: [] for a reply without a <tool_call> block, None when its
    block is malformed or it has neither a block nor a <response>; for artist_fc, every <tool> block's
    calls, None when one of them does not parse."""
    if protocol == ArtistFc.name:
        calls, malformed = ArtistFc().calls(text, tool_outputs=0)
        return None if malformed else normalize_calls(calls)
    if "<tool_call>" not in text:
        return [] if "<response>" in text and "</response>" in text else None
    for parse in (parse_calls_list, parse_calls_lines):
        calls = parse(text)
        if calls is not None and (normalized := normalize_calls(calls)) is not None:
            return normalized
    return None


def json_ground_truth(ground_truth: Any) -> Any:
    """A ground truth written as JSON text, a list of calls or an object such as {"calls": [...], "state":
    {...}} (as the rollouts page and the dataset preview show one), as the value it writes; anything else
    as it is. Text that opens like JSON ("[" or "{") and does not parse is a ValueError that says where:
    read as ToolRL's text form it would silently expect a reply with no call."""
    if isinstance(ground_truth, bytes):
        ground_truth = ground_truth.decode("utf-8", errors="replace")
    if not isinstance(ground_truth, str) or ground_truth.lstrip()[:1] not in ("[", "{"):
        return ground_truth
    try:
        return json.loads(ground_truth)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise ValueError(f"the ground truth starts like JSON but is not valid JSON: {exc.msg} ({where})") from exc


def ground_truth_calls(ground_truth: Any) -> list[dict[str, Any]] | None:
    """The example's calls, from a list of calls, ToolRL's text form or a multi-turn ground truth's
    ``"calls"`` ({"calls": [...], "state": {...}}), each also as its JSON text; None for anything else
    (no call metrics)."""
    try:
        ground_truth = json_ground_truth(ground_truth)
    except ValueError:
        return None
    if isinstance(ground_truth, dict) and isinstance(ground_truth.get("calls"), list):
        return normalize_calls(ground_truth["calls"])
    if isinstance(ground_truth, str):
        if "<tool_call>" not in ground_truth:
            return [] if "<response>" in ground_truth else None
        calls = parse_calls_lines(ground_truth)
        return None if calls is None else normalize_calls(calls)
    if isinstance(ground_truth, list):
        return normalize_calls(ground_truth)
    return None


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def same_value(a: Any, b: Any) -> bool:
    """Whether two argument values are equal as JSON (key order aside; 5 and "5" differ)."""
    return _key(a) == _key(b)


def matching_arguments(want: dict[str, Any], got: dict[str, Any]) -> int:
    """How many of `want`'s (key, value) arguments `got` has."""
    return sum(k in got["arguments"] and same_value(got["arguments"][k], v) for k, v in want["arguments"].items())


def pair_calls(
    truth: Sequence[dict[str, Any]], made: Sequence[dict[str, Any]]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any] | None]], list[dict[str, Any]]]:
    """Each ground-truth call, in order, with the unpaired predicted call of its name that has the most
    of its arguments (the first of those on a tie), or None; and the predicted calls left unpaired."""
    unpaired = list(made)
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for want in truth:
        same_name = [c for c in unpaired if c["name"] == want["name"]]
        got = max(same_name, key=lambda c: matching_arguments(want, c), default=None)
        if got is not None:
            unpaired.remove(got)
        pairs.append((want, got))
    return pairs, unpaired


def call_scores(text: str, truth: Sequence[dict[str, Any]], protocol: str = "tool_call_json") -> dict[str, float]:
    """The call metrics of one completion's model text against ground-truth calls (normalized)."""
    made = predicted_calls(text, protocol)
    calls = made or []
    exact = made is not None and Counter((c["name"], _key(c["arguments"])) for c in calls) == Counter(
        (c["name"], _key(c["arguments"])) for c in truth
    )
    names = Counter(c["name"] for c in calls) & Counter(c["name"] for c in truth)
    biggest = max(len(calls), len(truth))
    name_accuracy = sum(names.values()) / biggest if biggest else 1.0
    pairs, unpaired = pair_calls(truth, calls)
    matched = total = 0
    for want, got in pairs:
        if got is None:
            total += max(1, len(want["arguments"]))
            continue
        matched += matching_arguments(want, got)
        total += max(len(want["arguments"]), len(got["arguments"]))
    total += sum(max(1, len(c["arguments"])) for c in unpaired)
    scores = {
        EXACT_MATCH: float(exact),
        NAME_ACCURACY: name_accuracy,
        PARAM_ACCURACY: matched / total if total else 1.0,
        FORMAT_ERROR_RATIO: float(made is None),
    }
    if get_protocol(protocol).multi_turn_calls:
        scores[SEQUENCE_MATCH] = float(made is not None and [c["name"] for c in calls] == [c["name"] for c in truth])
    return scores
