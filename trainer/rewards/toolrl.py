"""ToolRL: R = R_format + R_correct (+ R_length), as qiancheng0/ToolRL verl/utils/reward_score/rlla.py
computes it (@8cee13e).

R_format is the format maximum when the response has exactly the shape the ground truth calls
for (ToolRL's regexes, each tag once), else the format minimum. R_correct is 0 when the ground
truth has no call; the minimum when the response's calls do not parse; otherwise
(max - min) * S / S_max + min, with the exact-match shortcut to the maximum.

Steps: ToolRL's trainer counts training steps from 1 (`self.global_steps += 1  # we start from
step 1` before the first batch, verl/trainer/ppo/ray_trainer.py:614,625-626) and scores
validation after step k with k (ray_trainer.py:454,719-721); tirlab counts from 0. So tirlab's
step s is ToolRL's step s + 1, in training and in evaluation alike.

Bounds (format, correctness) by `schedule`, at ToolRL's step t, exactly as rlla.py derives them
from its defaults (format 1/0, correctness 3/-3, or 1/-1 with `correct_max1`):
- constant:          format [0, 1], correctness [-3, 3]
- scheduled:         format max max(1, 2 - t/150), min min(-1, -2 + 2t/150);
                     correctness max min(3, 2 + t/150), min max(-3, -2 - t/150)
- max1_step30_max3:  correctness +-1 before step 30, +-3 from it; format bounds halved from step 30

rlla.py's other switches, environment variables there, are parameters here, off by default as
in ToolRL's train_grpo.sh:7-14: with_length, schedule_length, correct_max1, coarse_reward,
refined_reward, intermediate_reward (each documented where it acts below).
"""

import re
from collections import Counter
from typing import Any, Literal

from pydantic import Field, model_validator

from trainer.contract import FieldErrors
from trainer.protocols.calls import json_ground_truth
from trainer.protocols.tool_call_json import parse_calls_lines
from trainer.rewards.base import Response, RewardContext, RewardParams, register_reward
from trainer.trajectory import RewardResult


class ToolRLParams(RewardParams):
    """ToolRL: format reward plus fine-grained tool-call matching reward.

    Step s of a tirlab run is ToolRL's step s + 1 (its trainer counts from 1). The switches are
    rlla.py's environment variables, in snake case, off by default as in ToolRL's train_grpo.sh.
    """

    schedule: Literal["constant", "scheduled", "max1_step30_max3"] = Field(
        "constant",
        description="Reward scale over training: constant, smooth dynamic (SCHEDULEREWARD), or correctness "
        "max 1 until ToolRL step 30 then 3 (MAX1STEP30MAX3).",
    )
    with_length: bool = Field(
        False, description="Add ToolRL's length reward in [0, 1]: words of the <think> block over 512 (WITHLENGTH)."
    )
    schedule_length: bool = Field(
        False,
        description="Length reward target grows from 384 words by 256 every 105 steps instead of 512 "
        "(SCHEDULELENGTH; needs with_length).",
    )
    correct_max1: bool = Field(False, description="Correctness reward in [-1, 1] instead of [-3, 3] (CORRECTMAX1).")
    coarse_reward: bool = Field(
        False, description="Correctness is the maximum for an exact call match, else the minimum (COARSEREWARD)."
    )
    refined_reward: bool = Field(
        False,
        description="Tool names and parameter names score only when they match exactly, not by overlap "
        "(REFINEDREWARD).",
    )
    intermediate_reward: bool = Field(
        False,
        description="Each ground-truth call scores 1 only when a predicted call is identical, instead of per "
        "parameter name and value (INTERMEDIATEREWARD).",
    )

    @model_validator(mode="after")
    def _switches_have_effect(self) -> "ToolRLParams":
        errors: dict[str, list[str]] = {}
        if self.schedule_length and not self.with_length:
            errors["schedule_length"] = ["schedule_length changes the length reward: set with_length too"]
        for name in ("refined_reward", "intermediate_reward"):
            if self.coarse_reward and getattr(self, name):
                errors[name] = [f"coarse_reward scores every inexact match as the minimum, so {name} has no effect"]
        if errors:
            raise FieldErrors(errors)
        return self


FORMAT_MAX, FORMAT_MIN = 1.0, 0.0
CORRECT_MAX, CORRECT_MIN = 3.0, -3.0

# rlla.py's four shapes; re.search with DOTALL, anchored, so ".*?" may span anything.
_SHAPES = {
    (False, True): r"^<think>.*?</think>\n<response>.*?</response>$",
    (True, False): r"^<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>$",
    (True, True): r"^<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>\n<response>.*?</response>$",
    (False, False): r"^<think>.*?</think>$",
}


def bounds(schedule: str, step: int, *, correct_max1: bool = False) -> tuple[tuple[float, float], tuple[float, float]]:
    """((format_min, format_max), (correct_min, correct_max)) at ToolRL's step `step`."""
    # CORRECTMAX1 narrows correctness to [-1, 1] before any schedule (rlla.py:277-283).
    c_max, c_min = (1.0, -1.0) if correct_max1 else (CORRECT_MAX, CORRECT_MIN)
    f_max, f_min = FORMAT_MAX, FORMAT_MIN
    if schedule == "max1_step30_max3":  # rlla.py:45-52, 203-210
        if step >= 30:
            f_max, f_min = f_max / 2, f_min / 2
        else:
            c_max, c_min = c_max / 3, c_min / 3
    elif schedule == "scheduled":  # rlla.py:55-62, 212-219
        f_max = max(1.0, 2 - (2 - f_max) * step / 150)
        f_min = min(-1.0, -2 + (2 + f_min) * step / 150)
        c_max = min(3.0, (c_max - 2) * step / 150 + 2)
        c_min = max(-3.0, (c_min + 2) * step / 150 - 2)
    return (f_min, f_max), (c_min, c_max)


def match_score(a: list[Any], b: list[Any], *, refined: bool = False) -> float:
    """1 for equal lists, 0 if either is empty, else |A ∩ B| / (|A| + |B| - |A ∩ B|) as multisets.

    `refined` (REFINEDREWARD, rlla.py:26-29): anything but equal lists scores 0.
    """
    if a == b:
        return 1.0
    if refined or not a or not b:
        return 0.0
    ca, cb = Counter(a), Counter(b)
    inter = sum(min(ca[k], cb[k]) for k in ca.keys() & cb.keys())
    union = len(a) + len(b) - inter
    return inter / union if union > 0 else 0.0


def calls_score(
    gt_calls: list[dict[str, Any]], pred_calls: list[Any], *, refined: bool = False, intermediate: bool = False
) -> tuple[float, float]:
    """(S, S_max) of rlla.py's compute_tool_call_reward (rlla.py:142-192). Raises on a malformed
    predicted call (not an object, no name, or no parameters where they are read) as rlla.py
    does, which the caller scores as the minimum.

    `intermediate` (INTERMEDIATEREWARD, rlla.py:153-175): a ground-truth call earns 1, and only
    from an identical predicted call; S_max counts 1 per call instead of 1 + its parameters.
    """
    score = match_score([c["name"] for c in gt_calls], [c["name"] for c in pred_calls], refined=refined)
    s_max = 1.0
    used: set[int] = set()
    for gt in gt_calls:
        gt_params = gt["parameters"]
        s_max += 1.0 if intermediate else 1.0 + len(gt_params)
        best_score, best_index = 0.0, -1
        for i, pred in enumerate(pred_calls):
            if i in used or pred["name"] != gt["name"]:
                continue
            if intermediate:
                if pred == gt:
                    best_score, best_index = 1.0, i
                    break
                continue
            pred_params = pred["parameters"]
            value = match_score(list(gt_params.keys()), list(pred_params.keys()), refined=refined)
            value += sum(1.0 for k, v in gt_params.items() if k in pred_params and pred_params[k] == v)
            if value > best_score:
                best_score, best_index = value, i
        if best_index >= 0:
            used.add(best_index)
            score += best_score
    return score, s_max


def length_reward(text: str, step: int, *, schedule_length: bool) -> float:
    """rlla.py's customize_length_reward_func (rlla.py:101-128) on [0, 1]: words of the last
    <think> block over a target length, rounded to 2 places and capped at 1; 0 without the tags.
    The target is 512 words, or with `schedule_length` 384 growing by 256 every 105 steps."""
    if "<think>" not in text or "</think>" not in text:
        return 0.0
    think = text.split("<think>")[-1].split("</think>")[0].strip()
    target = (640 - 384) * step / 105 + 384 if schedule_length else 512
    return min(1.0, round(len(think.split()) / target, 2))


def parse_ground_truth(ground_truth: Any) -> tuple[list[dict[str, Any]], bool, bool]:
    """(calls, has_tool_call, has_response) from ToolRL's text form or a list of calls, the list also as
    its JSON text (as the rollouts page shows it: the same calls score the same in either form).

    A list means the answer is those calls (shape think + tool_call), or, when empty, a plain
    reply (shape think + response), which is how ToolRL's data writes a no-call answer.
    """
    ground_truth = json_ground_truth(ground_truth)
    if isinstance(ground_truth, str):
        has_call, has_response = "<tool_call>" in ground_truth, "<response>" in ground_truth
        if not has_call:
            return [], False, has_response
        calls = parse_calls_lines(ground_truth)
        if calls is None or not all(isinstance(c, dict) and "name" in c for c in calls):
            raise ValueError("ToolRL ground truth: the <tool_call> block must hold one JSON call per line")
        return [_with_parameters(c) for c in calls], True, has_response
    if isinstance(ground_truth, list):
        if not all(isinstance(c, dict) and "name" in c for c in ground_truth):
            raise ValueError("ToolRL ground truth: each call must be an object with a name")
        calls = [_with_parameters(c) for c in ground_truth]
        return calls, bool(calls), not calls
    kind = "a JSON object" if isinstance(ground_truth, dict) else type(ground_truth).__name__
    raise ValueError(
        "ToolRL ground truth must be its text form (a <tool_call> block of one JSON call a line, and/or a "
        f"<response>) or a list of calls, not {kind}"
    )


# rlla.py reads a ground truth with neither tag as a reply of only <think>…</think> (its fourth shape);
# said beside the score, since no call is then expected and correctness is 0 whatever the calls.
NO_TAGS_NOTE = (
    "the ground truth has no <tool_call> and no <response>: ToolRL expects a reply of only <think>...</think> "
    "and scores no calls; give the calls as a JSON list or in a <tool_call> block"
)


def _with_parameters(call: dict[str, Any]) -> dict[str, Any]:
    # Ground truths written for Tool-N1 name the arguments "arguments"; ToolRL's are "parameters".
    call = dict(call)
    if "parameters" not in call and "arguments" in call:
        call["parameters"] = call.pop("arguments")
    call.setdefault("parameters", {})
    return call


def format_ok(response: str, has_call: bool, has_response: bool) -> bool:
    """Whether the response has exactly the ground truth's shape, each of its tags once."""
    if not re.search(_SHAPES[(has_call, has_response)], response, re.DOTALL):
        return False
    tags = (["<tool_call>", "</tool_call>"] if has_call else []) + (
        ["<response>", "</response>"] if has_response else []
    )
    return all(response.count(tag) == 1 for tag in tags)


@register_reward(
    "toolrl",
    params=ToolRLParams,
    description="Format reward plus fine-grained matching of tool names, parameter names and values "
    "against the ground-truth calls (ToolRL).",
    protocol="tool_call_json",
)
def toolrl(responses: list[Response], ground_truth: Any, ctx: RewardContext) -> list[RewardResult]:
    params = ctx.params
    step = ctx.step + 1  # ToolRL's global_steps starts at 1 (ray_trainer.py:625-626)
    (f_min, f_max), (c_min, c_max) = bounds(params["schedule"], step, correct_max1=params["correct_max1"])
    gt_calls, has_call, has_response = parse_ground_truth(ground_truth)
    results = []
    for r in responses:
        # rlla.py scores the assistant text stripped of the chat template and surrounding space.
        text = r.text.strip()
        fmt = format_ok(text, has_call, has_response)
        details: dict[str, Any] = {} if has_call or has_response else {"ground_truth": NO_TAGS_NOTE}
        if not has_call:
            correctness = 0.0
            exact = False
        else:
            pred = parse_calls_lines(text)
            exact = pred == gt_calls
            if pred is None:
                correctness = c_min
            elif exact:
                correctness = c_max
            elif params["coarse_reward"]:
                correctness = c_min  # COARSEREWARD: all or nothing (rlla.py:137-140)
            else:
                try:
                    s, s_max = calls_score(
                        gt_calls, pred, refined=params["refined_reward"], intermediate=params["intermediate_reward"]
                    )
                except (KeyError, TypeError, AttributeError):
                    correctness = c_min  # rlla.py's bare except around a malformed call
                else:
                    correctness = (c_max - c_min) * s / s_max + c_min
                    details.update(score=s, max_score=s_max)
        format_reward = f_max if fmt else f_min
        components = {"format": format_reward, "correctness": correctness}
        if params["with_length"]:  # WITHLENGTH (rlla.py:297-301)
            components["length"] = length_reward(text, step, schedule_length=params["schedule_length"])
        results.append(
            RewardResult(
                total=sum(components.values()),
                components=components,
                correct=exact if has_call else fmt,
                details=details,
            )
        )
    return results
