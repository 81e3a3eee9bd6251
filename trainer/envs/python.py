"""`python`: a call is code, run in the sandbox; its output is fed back in the protocol's wrapper, in
the run's feedback style (ToRL, ZeroTIR, ReTool, ARTIST's math setting; today's tirlab runs)."""

from __future__ import annotations

from typing import ClassVar

from trainer.envs.base import CallContext, Environment, register_environment
from trainer.protocols.base import Protocol
from trainer.protocols.feedback import Feedback
from trainer.trajectory import ToolExecution

NO_CODE_OUTPUT = "SyntaxError: no complete code block"


async def execute_code(code: str | None, protocol: Protocol, context: CallContext) -> ToolExecution:
    """Run `code` (a call's body) in the sandbox, as the protocol's paper sends it there."""
    if code is None:
        # The model wrote the marker without a complete block: a failed call, counted against the budget.
        return ToolExecution(call="", status="error", output=NO_CODE_OUTPUT, stderr=NO_CODE_OUTPUT)
    code = protocol.prepare_code(code)
    result = await context.run(code)
    return ToolExecution(
        call=code,
        status=result.status,
        output=result.stdout + result.stderr,
        duration_ms=result.duration_ms,
        stderr=result.stderr,
    )


@register_environment
class PythonEnvironment(Environment):
    name: ClassVar[str] = "python"
    description: ClassVar[str] = "each call is Python code, run in the sandbox; its output is fed back"

    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        return protocol.stop_strings(calls_made, budget)

    async def run_call(
        self, protocol: Protocol, stopped: str, feedback: Feedback, context: CallContext
    ) -> ToolExecution | None:
        # Under the papers' feedback styles a stop without a complete call runs and reports nothing.
        code = feedback.code_to_run(protocol.extract_call(stopped))
        if code is None and not feedback.reports_missing_call:
            return None
        return await execute_code(code, protocol, context)

    def append_output(
        self, protocol: Protocol, stopped: str, execution: ToolExecution | None, feedback: Feedback
    ) -> str:
        if execution is None:
            return protocol.drop_marker(stopped)
        return protocol.append_output(stopped, execution, feedback=feedback)
