"""Seeded SFT traces for function calling: the tiny model's cold start for the JSON-call minis.

Each trace answers a `trainer.fc_synthetic` request in `tool_call_json`'s syntax, in ToolRL's layout
(`<think>` block, then a `<tool_call>` block with one JSON call per line, arguments as
``parameters``), or with a `<response>` reply where no offered tool serves the request, the shape
ToolRL's ground truth has then. Each trace carries its tools, so the run's template lists them in
the prompt as RL's prompts do (`tool-signatures` for the tiny model).

The spans that carry what must be exact -- the tool's name and each argument's value -- weigh
`content_weight` times the format around them, as the arithmetic traces weigh the copied expression
(trainer.sft_traces).

`python -m trainer sft-traces fc-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import json
from typing import Any

from trainer.fc_synthetic import Level, function_calling_examples

THINK = "<think></think>\n"
REPLY = "<response>I can't do that with these tools.</response>"


def call_line(call: dict[str, Any]) -> str:
    """One call as ToolRL writes it: {"name": ..., "parameters": {...}} on one line."""
    return json.dumps({"name": call["name"], "parameters": call["arguments"]})


def _value_spans(line: str, offset: int, call: dict[str, Any]) -> list[tuple[int, int]]:
    """Where the name and each argument value of `call` lie in its line (shifted by `offset`)."""
    spans = []
    name = json.dumps(call["name"])
    at = line.index(name)
    spans.append((offset + at, offset + at + len(name)))
    cursor = line.index('"parameters"')
    for key, value in call["arguments"].items():
        text = f"{json.dumps(key)}: {json.dumps(value)}"
        at = line.index(text, cursor) + len(json.dumps(key)) + 2
        spans.append((offset + at, offset + at + len(json.dumps(value))))
        cursor = at
    return spans


def function_calling_traces(
    size: int, *, seed: int, level: Level = "mixed", content_weight: float = 4.0
) -> list[dict[str, Any]]:
    """`size` seeded traces (trainer.sft_data rows) on `level` requests, each with the right calls."""
    rows = []
    for example in function_calling_examples(size, seed=seed, level=level, split="sft"):
        calls = example.ground_truth
        spans: list[tuple[int, int]] = []
        if calls:
            response = THINK + "<tool_call>\n"
            for call in calls:
                line = call_line(call)
                spans += _value_spans(line, len(response), call)
                response += line + "\n"
            response += "</tool_call>"
        else:
            response = THINK + REPLY
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
