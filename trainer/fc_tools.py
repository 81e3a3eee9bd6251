"""Executing JSON function calls against the catalogue's tool implementations, in the sandbox.

A call's arguments are model-written, so the tools run where model code runs: `call_program` is the
implementations' source (trainer/fc_tool_impls.py, standard library only) with the calls and the
offered schemas appended as data, and `execute_calls` runs it with the sandbox's limits. Each call
gives one JSON line, its result or the error that refused it; the execution's status is "ok" when
every call succeeded and "error" when one did not (or the block did not parse, which runs nothing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sandbox
from trainer.call_metrics import predicted_calls
from trainer.trajectory import ToolExecution

IMPLEMENTATIONS_SOURCE = Path(__file__).with_name("fc_tool_impls.py").read_text()
MALFORMED = 'Error: the <tool_call> block is not JSON calls ({"name": ..., "arguments": {...}})'


def call_program(calls: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The snippet that runs `calls` against the implementations, checked against the offered `tools`."""
    data = f"run_calls(json.loads({json.dumps(tools)!r}), json.loads({json.dumps(calls)!r}))\n"
    return f"{IMPLEMENTATIONS_SOURCE}\n\n{data}"


async def execute_calls(
    text: str, tools: list[dict[str, Any]], *, timeout_s: float = 10.0, memory_mb: int = 256, run_code: Any = None
) -> ToolExecution:
    """Run the calls of `text` (a response, or a <tool_call> block in either paper's layout) in the sandbox
    (`run_code`, default `sandbox.arun`)."""
    calls = predicted_calls(text if "<tool_call>" in text else f"<tool_call>{text}</tool_call>")
    if calls is None:
        return ToolExecution(call=text, status="error", output=MALFORMED, stderr=MALFORMED)
    program = call_program(calls, tools)
    run = run_code if run_code is not None else sandbox.arun
    result = await run(program, timeout_s=timeout_s, memory_mb=memory_mb)
    status = "ok" if result.status == "ok" else "error" if result.status == "error" and result.stdout else result.status
    return ToolExecution(
        call=json.dumps(calls), status=status, output=result.stdout.strip(), duration_ms=result.duration_ms,
        stderr=result.stderr,
    )  # fmt: skip
