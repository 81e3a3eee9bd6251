"""ARTIST, function calling (arXiv 2505.01441 §3.2, §4.2): state reward + function reward + format reward.

The ARTIST paper publishes no code; the terms follow its text, and where the text is silent the
reading is ours (marked "our reading"):

- state: R_state = SR_max * State_match / State_total, SR_max = 0.5. State_total is the number of
  the ground truth's state variables; State_match is how many of them the final state holds with the
  ground truth's value (JSON equality: key order aside, 5 == 5.0, True != 1, 5 != "5"). The final
  state is the last execution's `state` (trainer.envs' function_calling environment reports it), {}
  without executions or when the environment keeps none. Our reading for a ground truth with no
  state variable: SR_max when the final state has none either, else 0.
- function: R_function = FR_max * Functions_matched / Functions_total, FR_max = 0.5. Functions_total
  is the number of ground-truth calls; the predicted calls are every <tool> block's calls in the
  model's text, in order. Our reading of "match": as multisets -- each ground-truth call pairs with
  at most one predicted call of the same name and JSON-equal arguments (key order ignored), whatever
  the order of the calls; extra calls cost nothing here (the paper's formula counts matches only).
  Our reading for a ground truth of no call: FR_max when no call was made, else 0.
- format, relaxed: "For the two required tag pairs (reasoning, tool) present in the rollout, a
  reward of 0.025 is given, up to a maximum of 0.1". Our reading: 0.025 for each of the four tags
  <reasoning>, </reasoning>, <tool>, </tool> that the model's text contains.
- format, strict: 0.1 more when (1) all four tags are present, (2) every opening tag is closed by its
  own closing tag before another opens (no nesting, no stray or unclosed tag), and (3) the blocks
  follow reasoning -> tool. Our reading of (3) for several turns: the blocks alternate reasoning,
  tool, reasoning, tool, ..., starting with reasoning, with one reasoning block allowed after the
  last call (before the final reply); text between blocks is allowed.

Our reading: the terms are summed (at most 0.5 + 0.5 + 0.2 = 1.2). Tags are read in the model's own
text: the <tool_result> blocks the environment appended are left out.
`correct` is the full state and function rewards: every state variable right (no variable at all
when the ground truth has none), every ground-truth call matched, and no call beyond them.
"""

import re
from typing import Any

from trainer.protocols.artist_fc import ArtistFc
from trainer.protocols.calls import json_ground_truth
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.rewards.tags import tag_blocks
from trainer.trajectory import RewardResult


class ArtistFcParams(RewardParams):
    """ARTIST function calling: state 0.5, function 0.5 and format 0.2 maxima, fixed by the paper; no parameters."""


SR_MAX = 0.5
FR_MAX = 0.5
TAG_REWARD = 0.025
STRICT_REWARD = 0.1
FORMAT_TAGS = ("<reasoning>", "</reasoning>", "<tool>", "</tool>")
_TAG = re.compile(r"</?(reasoning|tool)>")
# Reasoning and tool blocks alternating from reasoning, optionally ending with a reasoning block.
_ORDER = re.compile(r"(RT)+R?")


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal: objects key by key (order aside), arrays item by item,
    numbers by value (5 == 5.0), booleans only to booleans, anything else by ==."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list | tuple | int | float) or isinstance(b, dict | list | tuple | int | float):
        return False
    return a == b


def _call(value: Any) -> tuple[str, Any] | None:
    """A call as (name, arguments): `arguments` (or `parameters`, as the function_calling environment
    accepts) defaulting to {}; None for anything that is not an object with a string name."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    return value["name"], value.get("arguments", value.get("parameters", {}))


def matched_calls(truth: list[Any], made: list[Any]) -> int:
    """How many ground-truth calls pair with a distinct identical predicted call (multiset matching)."""
    unpaired = [c for c in map(_call, made) if c is not None]
    matched = 0
    for want in map(_call, truth):
        if want is None:
            continue
        for i, got in enumerate(unpaired):
            if got[0] == want[0] and json_equal(got[1], want[1]):
                del unpaired[i]
                matched += 1
                break
    return matched


def format_reward(text: str) -> tuple[float, float]:
    """(relaxed, strict) format rewards of the model's text."""
    relaxed = TAG_REWARD * sum(tag in text for tag in FORMAT_TAGS)
    if relaxed < TAG_REWARD * len(FORMAT_TAGS):
        return relaxed, 0.0
    blocks = tag_blocks(text, _TAG)
    if blocks is None or not _ORDER.fullmatch("".join("R" if name == "reasoning" else "T" for name in blocks)):
        return relaxed, 0.0
    return relaxed, STRICT_REWARD


def ground_truth_parts(ground_truth: Any) -> tuple[list[Any], dict[str, Any]]:
    """The ground truth's calls and state, from {"calls": [...], "state": {...}} or its JSON text."""
    ground_truth = json_ground_truth(ground_truth)
    if not isinstance(ground_truth, dict):
        shown = repr(ground_truth) if len(repr(ground_truth)) <= 60 else repr(ground_truth)[:59] + "…"
        raise ValueError(f'artist_fc needs a ground truth {{"calls": [...], "state": {{...}}}}, not {shown}')
    calls = ground_truth.get("calls") or []
    state = ground_truth.get("state") or {}
    if not isinstance(calls, list) or not isinstance(state, dict):
        raise ValueError(f'artist_fc ground truth: "calls" must be a list and "state" an object, not {ground_truth!r}')
    return calls, state


def final_state(response: Response) -> dict[str, Any]:
    """The state after the response's last execution; {} when there is none or it keeps no state."""
    if response.executions:
        state = response.executions[-1].state
        if state is not None:
            return state
    return {}


def _made_calls(response: Response) -> tuple[list[Any], int]:
    protocol = response.protocol if isinstance(response.protocol, ArtistFc) else ArtistFc()
    return protocol.calls(response.text, tool_outputs=response.tool_outputs)


def _artist_fc(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    truth_calls, truth_state = ground_truth_parts(ground_truth)
    state = final_state(response)
    made, malformed = _made_calls(response)

    state_match = sum(k in state and json_equal(state[k], v) for k, v in truth_state.items())
    if truth_state:
        state_reward = SR_MAX * state_match / len(truth_state)
    else:
        state_reward = SR_MAX if not state else 0.0

    calls_match = matched_calls(truth_calls, made)
    if truth_calls:
        function_reward = FR_MAX * calls_match / len(truth_calls)
    else:
        function_reward = FR_MAX if not made else 0.0

    relaxed, strict = format_reward(response.model_text)
    state_right = state_match == len(truth_state) if truth_state else not state
    correct = state_right and calls_match == len(truth_calls) == len(made)
    return RewardResult(
        total=state_reward + function_reward + relaxed + strict,
        components={"state": state_reward, "function": function_reward, "format": relaxed + strict},
        correct=correct,
        details={
            "state_matched": state_match,
            "state_total": len(truth_state),
            "functions_matched": calls_match,
            "functions_total": len(truth_calls),
            "calls_made": len(made),
            "malformed_blocks": malformed,
            "format_relaxed": relaxed,
            "format_strict": strict,
        },
    )


register_reward(
    "artist_fc",
    params=ArtistFcParams,
    description="State reward 0.5 x state variables right, plus function reward 0.5 x expected calls made, "
    "plus format reward up to 0.2 for <reasoning> and <tool> tags in order (ARTIST, function calling).",
    protocol="artist_fc",
)(per_completion(_artist_fc))
