"""`function_calling`: a call is a `<tool_call>` block of JSON calls, run against the offered tools'
implementations in the sandbox (trainer.envs.tools.run); the results come back in a `<tool_response>` block,
one JSON line per call, and the model goes on -- the multi-turn setting of ARTIST's function-calling
experiments, where the called functions return results the model must use.

Generation stops at the end of a call block (`</tool_call>`, or ARTIST's `</tool>`: the protocol's
`call_end`) while the call budget (`tools.max_tool_calls`) lasts, and the results are wrapped as the
protocol wraps them. The block holds one call a line (ToolRL's layout) or one JSON list (Tool-N1's);
each call is checked against the schema the prompt offered (unknown tool, missing or unknown parameter,
wrong type, value outside the enum), and a refused call's line says what is wrong while the others
still run. The side effects of a trajectory's calls are its state (`CallContext.state["tools"]`),
carried from call to call in the sandbox and recorded on each execution. tool_call_json wraps the results
as Qwen2.5's and Hermes' chat templates wrap a tool's result (a `<tool_response>` block), cut to
`tools.output_max_chars` as ToRL cuts outputs.
"""

from __future__ import annotations

from typing import ClassVar

from trainer.envs.base import CallContext, Environment, register_environment
from trainer.envs.tools.run import execute_calls
from trainer.protocols.base import Protocol
from trainer.protocols.feedback import Feedback
from trainer.trajectory import ToolExecution

NO_TOOLS = "Error: this example offers no tools"


def _closed(protocol: Protocol, stopped: str) -> str:
    """`stopped` ending with the call's end (vLLM leaves the stop string out of the text)."""
    end = protocol.call_end() or ""
    return stopped if stopped.endswith(end) else stopped + end


@register_environment
class FunctionCallingEnvironment(Environment):
    name: ClassVar[str] = "function_calling"
    description: ClassVar[str] = "each <tool_call> block runs against the offered tools; results come back"

    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        end = protocol.call_end()
        if end is None or (budget is not None and calls_made >= budget):
            return []
        return [end]

    async def run_call(
        self, protocol: Protocol, stopped: str, feedback: Feedback, context: CallContext
    ) -> ToolExecution | None:
        block = protocol.extract_call(_closed(protocol, stopped))
        if block is None:
            message = f"Error: {protocol.call_end()} closes no call"
            return ToolExecution(call="", status="error", output=message, stderr=message)
        if not context.tools:
            return ToolExecution(call=block, status="error", output=NO_TOOLS, stderr=NO_TOOLS)
        # The trajectory's tool state: what its earlier calls did (bookings, emails, ...), carried call to call.
        execution = await execute_calls(
            block,
            context.tools,
            state=context.state.get("tools"),
            timeout_s=context.timeout_s,
            memory_mb=context.memory_mb,
            run_code=context.run_code,
        )
        context.state["tools"] = execution.state
        return execution

    def append_output(
        self, protocol: Protocol, stopped: str, execution: ToolExecution | None, feedback: Feedback
    ) -> str:
        return _closed(protocol, stopped) + protocol.wrap_output(execution or "", feedback=feedback)
