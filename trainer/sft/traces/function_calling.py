"""Seeded SFT traces for function calling: the tiny model's cold start for the JSON-call minis.

Each trace answers a `trainer.data.function_calling` request in `tool_call_json`'s syntax, in one of the two
papers' layouts (trainer.protocols.tool_call_json):

- ``lines``, ToolRL's: a `<think>` block, then a `<tool_call>` block with one JSON call per line,
  arguments as ``parameters``; where no offered tool serves the request, a `<response>` reply, the
  shape ToolRL's ground truth has then;
- ``list``, Tool-N1's: a `<think>` block, then one JSON list of ``{"name", "arguments"}`` in the
  `<tool_call>` block; no call is the empty list said, `<tool_call>[]</tool_call>` (Tool-N1's reward
  scores a reply without a block 0, trainer.rewards.tool_n1).

Each trace carries its tools, so the run's template lists them in the prompt as RL's prompts do
(`tool-signatures` for the tiny model).

The spans that carry what must be exact -- the tool's name and each argument's value -- weigh
`content_weight` times the format around them, as the arithmetic traces weigh the copied expression
(trainer.sft.traces.arithmetic).

`python -m trainer sft-traces fc-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any, Literal

from trainer.data.function_calling import Level, function_calling_examples

Layout = Literal["lines", "list"]

THINK = "<think></think>\n"
# The 'fc-mini-sft' traces, tirlab/tiny-char-fc's SFT (trainer.models.tiny.function_calling).
FC_MINI: dict[str, Any] = {"size": 40_000, "seed": 0, "level": "mixed", "content_weight": 4.0}
# What the minis' cold starts get wrong on purpose (FLAWS below), each with the share of the traces it can apply to.
MINI_FLAWS: dict[str, float] = {"no_think": 0.3, "python_calls": 0.4, "first_call_only": 0.5}
# The 'toolrl-mini-sft' traces, for 'tirlab/tiny-char-toolrl' (trainer.models.tiny.function_calling): ToolRL's layout,
# with flaws.
TOOLRL_MINI: dict[str, Any] = {"size": 4_800, "seed": 2, "level": "mixed", "content_weight": 4.0, "flaws": MINI_FLAWS}
# The 'tool-n1-mini-sft' traces, for 'tirlab/tiny-char-tool-n1': Tool-N1's layout, with the same flaws.
TOOL_N1_MINI: dict[str, Any] = {
    "size": 4_800,
    "seed": 1,
    "level": "mixed",
    "content_weight": 4.0,
    "layout": "list",
    "flaws": MINI_FLAWS,
}
REPLY = "<response>I can't do that with these tools.</response>"
# What a trace set can get wrong on purpose, each the share of the traces it can apply to: the cold start
# of a mini must leave RL something to fix, as the instruction-tuned models ToolRL and Tool-N1 start from
# do (ToolRL, section 4: format errors and wrong or missing calls before RL).
# - "no_think": the <think> block left out (both papers' format checks refuse it);
# - "python_calls": the calls written as Python, `get_weather(city="Oslo")`, not JSON (they do not parse: a
#   format error, and no call made);
# - "first_call_only": a request that needs two calls answered with the first (a missing call).
FLAWS = ("no_think", "python_calls", "first_call_only")


def call_line(call: dict[str, Any], arguments: str = "parameters") -> str:
    """One call as one JSON object: {"name": ..., "parameters": {...}} as ToolRL writes it, or with
    `arguments` naming the arguments' key ("arguments" for Tool-N1)."""
    return json.dumps({"name": call["name"], arguments: call["arguments"]})


def value_spans(line: str, offset: int, call: dict[str, Any]) -> list[tuple[int, int]]:
    """Where the name and each argument value of `call` lie in its line (shifted by `offset`)."""
    spans = []
    name = json.dumps(call["name"])
    at = line.index(name)
    spans.append((offset + at, offset + at + len(name)))
    cursor = line.index('"', at + len(name) + 1)  # the arguments' key
    for key, value in call["arguments"].items():
        text = f"{json.dumps(key)}: {json.dumps(value)}"
        at = line.index(text, cursor) + len(json.dumps(key)) + 2
        spans.append((offset + at, offset + at + len(json.dumps(value))))
        cursor = at
    return spans


def python_call(call: dict[str, Any]) -> str:
    """One call as Python, `name(key=value, ...)`, values as JSON literals: what a model that has not
    learned the JSON layout writes."""
    return f"{call['name']}(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in call["arguments"].items()) + ")"


def _python_spans(line: str, offset: int, call: dict[str, Any]) -> list[tuple[int, int]]:
    spans = [(offset, offset + len(call["name"]))]
    cursor = len(call["name"])
    for key, value in call["arguments"].items():
        at = line.index(f"{key}={json.dumps(value)}", cursor) + len(key) + 1
        spans.append((offset + at, offset + at + len(json.dumps(value))))
        cursor = at
    return spans


def _lines_response(
    calls: list[dict[str, Any]], think: str = THINK, python: bool = False
) -> tuple[str, list[tuple[int, int]]]:
    if not calls:
        return think + REPLY, []
    response, spans = think + "<tool_call>\n", []
    for call in calls:
        line = python_call(call) if python else call_line(call)
        spans += (_python_spans if python else value_spans)(line, len(response), call)
        response += line + "\n"
    return response + "</tool_call>", spans


def _list_response(
    calls: list[dict[str, Any]], think: str = THINK, python: bool = False
) -> tuple[str, list[tuple[int, int]]]:
    response, spans = think + "<tool_call>[", []
    for index, call in enumerate(calls):
        response += ", " if index else ""
        item = python_call(call) if python else call_line(call, "arguments")
        spans += (_python_spans if python else value_spans)(item, len(response), call)
        response += item
    return response + "]</tool_call>", spans


def function_calling_traces(
    size: int,
    *,
    seed: int,
    level: Level = "mixed",
    content_weight: float = 4.0,
    layout: Layout = "lines",
    flaws: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """`size` seeded traces (trainer.data.sft_traces rows) on `level` requests, each with the right calls in
    `layout` (see the module), except where `flaws` (FLAWS, each with the share of the traces it can
    apply to) write them wrong on purpose."""
    if layout not in ("lines", "list"):
        raise ValueError(f"layout must be 'lines' or 'list', got {layout!r}")
    flaws = dict(flaws or {})
    if unknown := sorted(set(flaws) - set(FLAWS)):
        raise ValueError(f"unknown flaws {unknown}; expected some of {', '.join(FLAWS)}")
    respond = _lines_response if layout == "lines" else _list_response
    # The flaws' own stream, so that a trace set without them is the one it was before they existed.
    draw = random.Random(f"fc-traces-flaws-{seed}")
    rows = []
    for example in function_calling_examples(size, seed=seed, level=level, split="sft"):
        calls, think, python = list(example.ground_truth), THINK, False
        if draw.random() < flaws.get("no_think", 0.0):
            think = ""
        if calls and draw.random() < flaws.get("python_calls", 0.0):
            python = True
        if len(calls) > 1 and draw.random() < flaws.get("first_call_only", 0.0):
            calls = calls[:1]
        response, spans = respond(calls, think, python)
        rows.append(
            {
                "prompt": example.prompt,
                "tools": example.tools,
                "response": response,
                "tool_outputs": 0,
                "weighted_spans": [[a, b, content_weight] for a, b in spans] if content_weight != 1.0 else [],
                "extra_info": dict(example.extra_info or {}),
            }
        )
    return rows
