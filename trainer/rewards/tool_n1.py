"""Nemotron-Tool-N1: 1 when the format is right and the calls match the ground truth exactly, else 0.

As NVlabs/Tool-N1 verl/verl/utils/reward_score/toolcall.py (compute_score_v0) computes it: the
last <tool_call> block parses (a list, or one object), the response contains <think> and
</think>, every call is an object with "name" and "arguments", and the multisets of
(name, json.dumps(arguments, sort_keys=True)) are equal: call order and argument key order do
not matter, values and types do.

A ground truth with no call is matched only by an empty call list, <tool_call>[]</tool_call>:
in toolcall.py a response without any <tool_call> block extracts None and scores 0 whatever the
ground truth, so "makes no call" has to be said with an empty list.
"""

import json
from collections import Counter
from typing import Any

from trainer.protocols.calls import ground_truth_calls, json_ground_truth
from trainer.protocols.tool_call_json import parse_calls_list
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.trajectory import RewardResult


class ToolN1Params(RewardParams):
    """Nemotron-Tool-N1: binary format-and-exact-match reward; no parameters."""


def _gt_calls(ground_truth: Any) -> list[Any]:
    if isinstance(ground_truth, str) and ("<tool_call>" in ground_truth or "<response>" in ground_truth):
        # ToolRL's text form (rlla_4k's ground truth: one {"name", "parameters"} a line, or a reply):
        # Tool-N1's reward on ToolRL's data compares the calls it holds.
        calls = ground_truth_calls(ground_truth)
        if calls is None:
            raise ValueError("ToolRL ground truth whose <tool_call> block does not parse as one JSON call a line")
        return calls
    value = json_ground_truth(ground_truth)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(
            "Tool-N1 ground truth must be a JSON list of {name, arguments} calls (or ToolRL's text form), "
            f"not {_shown(value)}"
        )
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _canonical(calls: list[dict[str, Any]]) -> Counter[tuple[Any, str]]:
    return Counter((c["name"], json.dumps(c["arguments"], sort_keys=True)) for c in calls)


def calls_match(pred: list[Any], gt: list[Any]) -> bool:
    """toolcall.py's validate_result(...) == 2: equal multisets of (name, canonical arguments)."""
    if not pred or not gt:
        return len(pred) == len(gt)
    try:
        return _canonical(pred) == _canonical(gt)
    except (TypeError, KeyError):
        return False


def _tool_n1(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    gt = _gt_calls(ground_truth)
    text = response.text
    calls = parse_calls_list(text)
    thinks = "<think>" in text and "</think>" in text
    well_formed = (
        calls is not None and thinks and all(isinstance(c, dict) and "name" in c and "arguments" in c for c in calls)
    )
    match = well_formed and calls_match(calls or [], gt)
    return RewardResult(
        total=1.0 if match else 0.0,
        components={"format": 1.0 if well_formed else 0.0, "match": 1.0 if match else 0.0},
        correct=match,
        details={"calls": calls},
    )


register_reward(
    "tool_n1",
    params=ToolN1Params,
    description="1 only if the reasoning format is valid and the tool calls match the ground truth exactly, "
    "0 otherwise (Nemotron-Tool-N1).",
    protocol="tool_call_json",
)(per_completion(_tool_n1))
