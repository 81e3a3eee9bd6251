"""Seeded SFT traces for function calling: the tiny model's cold start for the JSON-call minis.

Each trace answers a `trainer.fc_synthetic` request in `tool_call_json`'s syntax, in one of the two
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
(trainer.sft_traces).

`python -m trainer sft-traces fc-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from trainer.fc_synthetic import Level, function_calling_examples

Layout = Literal["lines", "list"]

THINK = "<think></think>\n"
# The 'fc-mini-sft' traces, tirlab/tiny-char-fc's SFT (trainer.models.tiny_fc).
FC_MINI: dict[str, Any] = {"size": 40_000, "seed": 0, "level": "mixed", "content_weight": 4.0}
# The 'fc-n1-mini-sft' traces: Tool-N1's layout, for 'tirlab/tiny-char-fc-n1' (trainer.models.tiny_fc), which
# starts from tirlab/tiny-char-fc and so only has the layout to learn.
FC_N1_MINI: dict[str, Any] = {"size": 4_800, "seed": 1, "level": "mixed", "content_weight": 4.0, "layout": "list"}
REPLY = "<response>I can't do that with these tools.</response>"


def call_line(call: dict[str, Any], arguments: str = "parameters") -> str:
    """One call as one JSON object: {"name": ..., "parameters": {...}} as ToolRL writes it, or with
    `arguments` naming the arguments' key ("arguments" for Tool-N1)."""
    return json.dumps({"name": call["name"], arguments: call["arguments"]})


def _value_spans(line: str, offset: int, call: dict[str, Any]) -> list[tuple[int, int]]:
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


def _lines_response(calls: list[dict[str, Any]]) -> tuple[str, list[tuple[int, int]]]:
    if not calls:
        return THINK + REPLY, []
    response, spans = THINK + "<tool_call>\n", []
    for call in calls:
        line = call_line(call)
        spans += _value_spans(line, len(response), call)
        response += line + "\n"
    return response + "</tool_call>", spans


def _list_response(calls: list[dict[str, Any]]) -> tuple[str, list[tuple[int, int]]]:
    response, spans = THINK + "<tool_call>[", []
    for index, call in enumerate(calls):
        response += ", " if index else ""
        item = call_line(call, "arguments")
        spans += _value_spans(item, len(response), call)
        response += item
    return response + "]</tool_call>", spans


def function_calling_traces(
    size: int, *, seed: int, level: Level = "mixed", content_weight: float = 4.0, layout: Layout = "lines"
) -> list[dict[str, Any]]:
    """`size` seeded traces (trainer.sft_data rows) on `level` requests, each with the right calls in
    `layout` (see the module)."""
    if layout not in ("lines", "list"):
        raise ValueError(f"layout must be 'lines' or 'list', got {layout!r}")
    respond = _lines_response if layout == "lines" else _list_response
    rows = []
    for example in function_calling_examples(size, seed=seed, level=level, split="sft"):
        response, spans = respond(example.ground_truth)
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
