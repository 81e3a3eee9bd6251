"""`function_calling`: a call is a `<tool_call>` block of JSON calls, run against the offered tools'
implementations in the sandbox (trainer.fc_tools); the results come back in a `<tool_response>` block,
one JSON line per call, and the model goes on -- the multi-turn setting of ARTIST's function-calling
experiments, where the called functions return results the model must use.

Generation stops at `</tool_call>` while the call budget (`tools.max_tool_calls`) lasts. The block holds
one call a line (ToolRL's layout) or one JSON list (Tool-N1's); each call is checked against the schema
the prompt offered (unknown tool, missing or unknown parameter, wrong type, value outside the enum), and
a refused call's line says what is wrong while the others still run. The results are wrapped as
Qwen2.5's and Hermes' chat templates wrap a tool's result (trainer.protocols.tool_call_json.wrap_response)
and cut to `tools.output_max_chars` as ToRL cuts outputs.
"""

from __future__ import annotations

from typing import ClassVar

from trainer.envs.base import CallContext, Environment
from trainer.fc_tools import execute_calls
from trainer.protocols import Feedback, Protocol, truncate_output
from trainer.protocols.tool_call_json import wrap_response
from trainer.trajectory import ToolExecution

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
NO_TOOLS = "Error: this example offers no tools"


def last_call_block(stopped: str) -> str | None:
    """The body of the `<tool_call>` block `stopped` ends with; None when it has no opening tag."""
    body = stopped[: -len(CALL_CLOSE)] if stopped.endswith(CALL_CLOSE) else stopped
    if CALL_OPEN not in body:
        return None
    return body.rsplit(CALL_OPEN, 1)[1]


class FunctionCallingEnvironment(Environment):
    name: ClassVar[str] = "function_calling"
    protocols: ClassVar[tuple[str, ...]] = ("tool_call_json",)
    description: ClassVar[str] = "each <tool_call> block runs against the offered tools; results come back"

    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        if budget is not None and calls_made >= budget:
            return []
        return [CALL_CLOSE]

    async def run_call(
        self, protocol: Protocol, stopped: str, feedback: Feedback, context: CallContext
    ) -> ToolExecution | None:
        block = last_call_block(stopped)
        if block is None:
            message = f"Error: {CALL_CLOSE} without {CALL_OPEN}"
            return ToolExecution(call="", status="error", output=message, stderr=message)
        if not context.tools:
            return ToolExecution(call=block, status="error", output=NO_TOOLS, stderr=NO_TOOLS)
        return await execute_calls(
            block, context.tools, timeout_s=context.timeout_s, memory_mb=context.memory_mb, run_code=context.run_code
        )

    def append_output(
        self, protocol: Protocol, stopped: str, execution: ToolExecution | None, feedback: Feedback
    ) -> str:
        if not stopped.endswith(CALL_CLOSE):
            stopped += CALL_CLOSE  # vLLM leaves the stop string out of the text
        output = "" if execution is None else execution.output
        return stopped + wrap_response(truncate_output(output.strip(), feedback.max_chars))
