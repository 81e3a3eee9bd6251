"""Executing JSON function calls against the catalogue's tool implementations, in the sandbox.

A call's arguments are model-written, so the tools run where model code runs: `call_program` is the
implementations' source (trainer/envs/tools/catalogue.py, standard library only) with the calls and the
offered schemas appended as data, and `execute_calls` runs it with the sandbox's limits. Each call
gives one JSON line, its result or the error that refused it; the execution's status is "ok" when
every call succeeded and "error" when one did not (or the block did not parse, which runs nothing).
The state the calls leave (their side effects, trainer.envs.tools.catalogue.STATE_OF) comes back as the
execution's `state`, not in its output: it is what a multi-turn task is judged on, not what the model
reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sandbox
from trainer.protocols.calls import predicted_calls
from trainer.trajectory import ToolExecution

IMPLEMENTATIONS_SOURCE = Path(__file__).with_name("catalogue.py").read_text()
MALFORMED = 'Error: the <tool_call> block is not JSON calls ({"name": ..., "arguments": {...}})'


STATE_LINE = "#state "  # trainer.envs.tools.catalogue.STATE_LINE


def call_program(
    calls: list[dict[str, Any]], tools: list[dict[str, Any]], state: dict[str, Any] | None = None
) -> str:
    """The snippet that runs `calls` against the implementations, checked against the offered `tools`,
    from `state` (the side effects of the trajectory's earlier calls)."""
    data = (
        f"run_calls(json.loads({json.dumps(tools)!r}), json.loads({json.dumps(calls)!r}), "
        f"json.loads({json.dumps(state or {})!r}))\n"
    )
    return f"{IMPLEMENTATIONS_SOURCE}\n\n{data}"


def split_state(stdout: str, before: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The calls' result lines, and the state the program's last line reports (`before` when it did not
    get that far: a timeout, a crash)."""
    lines = stdout.strip().split("\n")
    if lines and lines[-1].startswith(STATE_LINE):
        try:
            return "\n".join(lines[:-1]), json.loads(lines[-1][len(STATE_LINE) :])
        except json.JSONDecodeError:
            pass
    return stdout.strip(), dict(before)


async def execute_calls(
    text: str,
    tools: list[dict[str, Any]],
    *,
    state: dict[str, Any] | None = None,
    timeout_s: float = 10.0,
    memory_mb: int = 256,
    run_code: Any = None,
) -> ToolExecution:
    """Run the calls of `text` (a response, or a call block's body in either paper's layout) in the sandbox
    (`run_code`, default `sandbox.arun`), from `state`; the execution's `state` is the state after them."""
    before = dict(state or {})
    calls = predicted_calls(text if "<tool_call>" in text else f"<tool_call>{text}</tool_call>")
    if calls is None:
        return ToolExecution(call=text, status="error", output=MALFORMED, stderr=MALFORMED, state=before)
    program = call_program(calls, tools, before)
    run = run_code if run_code is not None else sandbox.arun
    result = await run(program, timeout_s=timeout_s, memory_mb=memory_mb)
    status = "ok" if result.status == "ok" else "error" if result.status == "error" and result.stdout else result.status
    output, after = split_state(result.stdout, before)
    return ToolExecution(
        call=json.dumps(calls), status=status, output=output, duration_ms=result.duration_ms,
        stderr=result.stderr, state=after,
    )  # fmt: skip
