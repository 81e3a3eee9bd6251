"""SFT trace files: traces of a model answering with tool calls and their outputs, for a cold start.

A trace is one JSON object per line (JSONL) in either of two forms:

    {"prompt": [{"role": "user", "content": "What is 47 * 83?"}],      # or the question as a string
     "response": "```python\\nprint(47 * 83)\\n```\\n```output\\n3901\\n```\\n\\\\boxed{3901}",
     "tool_outputs": 1,                       # optional: how many output blocks are tool output (default: all)
     "choice_weight": 1.0,                    # optional: loss weight of the response's first token
     "weighted_spans": [[start, end, weight]],  # optional: loss weights of character spans of the response
     "tools": [{"name": ..., "parameters": {...}}]}  # optional: the tools offered, for templates that list them

    {"messages": [{"role": "system", ...}, {"role": "user", ...},
                  {"role": "assistant", "content": "<code>\\nprint(47 * 83)\\n</code>"},
                  {"role": "tool", "content": "3901"},
                  {"role": "assistant", "content": "<answer>\\\\boxed{3901}</answer>"}]}

The response is written in the run's tool protocol (`tools.protocol`): its calls in the protocol's
syntax, its tool outputs in the protocol's output blocks. In the messages form, the messages
before the first assistant message are the prompt; each "tool" message is the output of the call
the assistant message before it ends with, and is wrapped in the protocol's output block as the
rollout would wrap it. The prompt is rendered with the run's prompt template exactly as RL renders
its prompts; the loss covers the model's own text and the end-of-sequence token, while prompt and
tool-output tokens are masked, as they are in RL (trainer.sft.train.encode_trace).

The dashboard checks uploads record by record with this parser (trainer.data.datasets); a run reads
its traces, a file or a set tirlab generates itself, through trainer.sft.data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.protocols import get_protocol
from trainer.trajectory import Example, ToolExecution


@dataclass(frozen=True)
class SFTRow:
    """One trace: the prompt as an example (rendered with the run's template when trained), the
    response in the protocol's syntax, and its loss weights."""

    example: Example
    response: str
    tool_outputs: int
    choice_weight: float = 1.0
    weighted_spans: tuple[tuple[int, int, float], ...] = ()
    extra_info: dict[str, Any] = field(default_factory=dict)

    @property
    def difficulty(self) -> str | None:
        value = self.extra_info.get("difficulty")
        return None if value is None else str(value)


class SFTDataError(ValueError):
    """SFT traces that cannot be read; the message names the line and what is wrong."""


def jsonl_records(path: Path) -> Iterable[dict]:
    with path.open("rb") as handle:
        head = handle.read(4)
    if head == b"PAR1":
        raise SFTDataError(f"{path}: SFT traces are read from JSONL (one JSON object per line), not parquet")
    # utf-8-sig: editors on Windows start a file with a BOM, which the upload check (trainer.data.datasets) accepts too.
    with path.open(encoding="utf-8-sig", errors="strict") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SFTDataError(f"{path} line {number}: not JSON ({exc.msg})") from None
            yield record


def parse_rows(records: Iterable[Any], *, protocol: str, source: str) -> list[SFTRow]:
    """Rows from JSON records; SFTDataError naming the record and the problem for a bad one."""
    rows = [
        parse_record(record, protocol=protocol, number=number, where=f"{source} row {number}")
        for number, record in enumerate(records, 1)
    ]
    if not rows:
        raise SFTDataError(f"{source}: no traces")
    return rows


def parse_record(record: Any, *, protocol: str, number: int, where: str) -> SFTRow:
    """One trace from its JSON record, the `number`th of its file; SFTDataError starting with
    `where` for a bad one. The dashboard validates uploads record by record with it (trainer.data.datasets)."""
    tools = get_protocol(protocol)
    if not isinstance(record, dict):
        raise SFTDataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "messages" in record:
        prompt, response, outputs = _from_messages(record["messages"], tools, where)
    elif "prompt" in record and "response" in record:
        prompt, response = _prompt(record["prompt"], where), record["response"]
        if not isinstance(response, str) or not response:
            raise SFTDataError(f"{where}: 'response' must be a non-empty string")
        found = len(tools.tool_spans(response))
        outputs = record.get("tool_outputs", found)
        if not isinstance(outputs, int) or isinstance(outputs, bool) or outputs < 0:
            raise SFTDataError(f"{where}: 'tool_outputs' must be a non-negative integer")
        if outputs > found:
            # Written in another protocol's syntax: its tool outputs would be trained on, not masked.
            raise SFTDataError(
                f"{where}: 'tool_outputs' is {outputs} but the {protocol!r} protocol finds {found} tool output "
                "block(s) in the response: are the traces written in another protocol?"
            )
    else:
        raise SFTDataError(f"{where}: expected 'messages', or 'prompt' and 'response'")
    choice = record.get("choice_weight", 1.0)
    if not isinstance(choice, int | float) or isinstance(choice, bool) or choice < 0:
        raise SFTDataError(f"{where}: 'choice_weight' must be a number >= 0")
    spans = []
    for span in record.get("weighted_spans") or []:
        if (
            not isinstance(span, list | tuple)
            or len(span) != 3
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in span)
            or not 0 <= span[0] <= span[1] <= len(response)
            or span[2] < 0
        ):
            raise SFTDataError(
                f"{where}: each weighted span is [start, end, weight] with 0 <= start <= end <= "
                f"len(response) = {len(response)} and weight >= 0, got {span!r}"
            )
        spans.append((int(span[0]), int(span[1]), float(span[2])))
    offered = record.get("tools")
    if offered is not None and not (isinstance(offered, list) and all(isinstance(t, dict) for t in offered)):
        raise SFTDataError(f"{where}: 'tools' must be a list of tool objects")
    extra = record.get("extra_info") or {}
    return SFTRow(
        example=Example(id=f"sft-{number}", prompt=prompt, ground_truth=None, data_source="sft", tools=offered),
        response=response,
        tool_outputs=outputs,
        choice_weight=float(choice),
        weighted_spans=tuple(spans),
        extra_info=extra if isinstance(extra, dict) else {},
    )


def _prompt(value: Any, where: str) -> list[dict[str, str]]:
    if isinstance(value, str) and value:
        return [{"role": "user", "content": value}]
    messages = _messages(value, "prompt", where)
    if not any(m["role"] == "user" for m in messages):
        raise SFTDataError(f"{where}: 'prompt' has no user message")
    return messages


def _messages(value: Any, name: str, where: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise SFTDataError(f"{where}: '{name}' must be a non-empty list of messages")
    messages = []
    for i, message in enumerate(value):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str)
        ):
            raise SFTDataError(f"{where}: {name}[{i}] must be an object with string 'role' and 'content'")
        messages.append({"role": message["role"], "content": message["content"]})
    return messages


def _from_messages(value: Any, tools, where: str) -> tuple[list[dict[str, str]], str, int]:
    messages = _messages(value, "messages", where)
    first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), None)
    if first is None or not any(m["role"] == "user" for m in messages[:first]):
        raise SFTDataError(f"{where}: 'messages' needs a user message, then an assistant message")
    response, outputs = "", 0
    for i, message in enumerate(messages[first:], first):
        if message["role"] == "assistant":
            response += message["content"]
        elif message["role"] == "tool":
            if tools.stop_marker is None:
                raise SFTDataError(
                    f"{where}: messages[{i}] is a tool output, but protocol {tools.name!r} runs no tools"
                )
            code = tools.extract_call(response)
            if code is None:
                raise SFTDataError(
                    f"{where}: messages[{i}] is a tool output, but the assistant text before it does not end "
                    f"with a complete call in the {tools.name!r} protocol"
                )
            response = tools.append_output(response, ToolExecution(call=code, status="ok", output=message["content"]))
            outputs += 1
        else:
            raise SFTDataError(f"{where}: messages[{i}] has role {message['role']!r} after the first assistant message")
    return messages[:first], response, outputs
