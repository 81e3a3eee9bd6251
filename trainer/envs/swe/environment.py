"""`swe`: SkyRL-v0's software-engineering environment -- the model edits a repository with three tools, and the
reward is "the hidden tests pass".

Each trajectory gets its own copy of the instance's repository (`CallContext.task`, a row of
trainer.data.swe_rows with its files), kept as text between calls (trainer.envs.swe.workspace). One call a
turn (the protocol's, trainer.protocols.codeact): `str_replace_editor` edits the text in place,
`execute_bash` runs in the sandbox with the repository written into its working directory (network, time,
memory and process limits; nothing outlives the call), `finish` ends the trajectory. A turn without a call gets
SkyRL-v0's "please continue" message. The trajectory ends with finish, at the turn limit (`tools.max_tool_calls`:
SkyRL-v0's max iterations, a turn without a call counting as one), when the stuck detector fires, or at the
response limit; then its patch is taken and graded as SWE-bench grades it (trainer.envs.swe.grade), and the
result is the trajectory's outcome (trainer.contract.TrajectoryIn.outcome), which the swe reward reads.

The observations are SkyRL-v0's for `codeact` and their compact spelling for `codeact_mini`
(trainer.envs.swe.compact).
"""

from __future__ import annotations

from typing import Any, ClassVar

from trainer.envs.base import CallContext, Environment, register_environment
from trainer.envs.swe import compact, observations
from trainer.envs.swe.bash import execute_bash
from trainer.envs.swe.editor import str_replace_editor
from trainer.envs.swe.grade import grade_workspace
from trainer.envs.swe.stuck import is_stuck
from trainer.envs.swe.workspace import Workspace
from trainer.protocols.base import Protocol
from trainer.protocols.codeact import EXECUTE_BASH, FINISH, STR_REPLACE_EDITOR, CodeActProtocol, ParsedCall
from trainer.protocols.feedback import Feedback
from trainer.trajectory import ToolExecution


class SweTaskError(ValueError):
    """A trajectory of the swe environment without a runnable instance."""


def workspace_root(instance: dict[str, Any], protocol: Protocol) -> str:
    """Where the model sees the repository: `/workspace/<repo>` as in SkyRL-v0's runtime, relative paths for the
    mini (its one file, in as few characters as possible)."""
    if _compact(protocol):
        return ""
    return "/workspace/" + str(instance.get("repo") or "repo").rstrip("/").split("/")[-1]


def _state(context: CallContext, protocol: Protocol) -> dict[str, Any]:
    swe = context.state.get("swe")
    if swe is None:
        task = context.task
        if not task or not isinstance(task.get("files"), dict):
            raise SweTaskError(
                "the swe environment runs an instance whose repository it has (instance['files']); this example "
                "has none -- real SWE-Gym / SWE-bench rows need their container image (trainer.data.swe_rows)"
            )
        swe = context.state["swe"] = {
            "workspace": Workspace.from_files(task["files"], root=workspace_root(task, protocol)),
            "turns": 0,
            "calls": 0,
            "format_errors": 0,
            "end": None,
            "history": [],
            "no_call_replies": 0,
        }
    return swe


def _compact(protocol: Protocol) -> bool:
    return protocol.name == "codeact_mini"


@register_environment
class SweEnvironment(Environment):
    name: ClassVar[str] = "swe"
    description: ClassVar[str] = (
        "software engineering (SkyRL-v0): bash, an editor and finish on the instance's repository; "
        "the patch is graded by its hidden tests"
    )

    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        # One call a turn; the turn limit is the environment's (`finished`, `on_no_call`), counted with call-less turns.
        return [protocol.stop_marker] if protocol.stop_marker else []

    async def run_call(
        self, protocol: Protocol, stopped: str, feedback: Feedback, context: CallContext
    ) -> ToolExecution | None:
        assert isinstance(protocol, CodeActProtocol), protocol.name
        swe = _state(context, protocol)
        swe["turns"] += 1
        swe["calls"] += 1
        block = protocol.extract_call(protocol.close_call(stopped)) or ""
        call = protocol.parse_call(block)
        text, status, seen, refused = await self._run(protocol, call, swe, context)
        if call is not None and call.tool == FINISH and not refused:
            swe["end"] = "finished"
        else:
            # OpenHands' stuck detector compares the action, the observation (a command's by command and exit
            # code) and whether the observation is a refusal (trainer.envs.swe.stuck).
            # The action is the turn's text: the thought and the call, generated since the last observation.
            swe["history"].append((protocol._after_last_output(stopped), seen, refused))
            if is_stuck(swe["history"]):
                swe["end"] = "stuck"
            elif context.max_calls is not None and swe["turns"] >= context.max_calls:
                swe["end"] = "max_turns"
        return ToolExecution(call=block, status=status, output=text)

    async def _run(
        self, protocol: CodeActProtocol, call: ParsedCall | None, swe: dict[str, Any], context: CallContext
    ) -> tuple[str, str, str, bool]:
        """One call: its observation, its status ("ok", or "error" for a refused or failed call), what the stuck
        detector compares of the observation, and whether the converter refused the call."""
        short = _compact(protocol)
        workspace: Workspace = swe["workspace"]
        if call is None:
            params, refusal = {}, observations.format_error(None)
        else:
            params, refusal = observations.validate_call(call.tool, call.params)
        if refusal is not None:
            # A refused call is an ErrorObservation: its message, without the EXECUTION RESULT line.
            swe["format_errors"] += 1
            return (compact.error(refusal) if short else refusal), "error", refusal, True
        assert call is not None
        if call.tool == FINISH:
            return "", "ok", "", False
        if call.tool == EXECUTE_BASH:
            command = str(params.get("command", ""))
            result = await execute_bash(
                workspace, command, is_input=str(params.get("is_input", "")).lower() == "true", context=context
            )
            status = "ok" if result.status in ("ok", "error") else result.status
            seen = f"{command}\n{result.exit_code}"
            if short:
                return compact.bash(result.output, result.exit_code), status, seen, False
            return observations.execution_result(EXECUTE_BASH, result.text), status, seen, False
        # validate_call kept only the editor's own parameters, typed.
        edited = str_replace_editor(workspace, **params)
        status = "error" if edited.error else "ok"
        if short:
            text = compact.error(edited.text) if edited.error else _compact_editor(workspace, params)
            return text, status, edited.text, False
        return observations.execution_result(STR_REPLACE_EDITOR, edited.text), status, edited.text, False

    def append_output(
        self, protocol: Protocol, stopped: str, execution: ToolExecution | None, feedback: Feedback
    ) -> str:
        assert isinstance(protocol, CodeActProtocol), protocol.name
        if _is_finish(protocol, stopped):
            # finish: the call is completed and nothing follows; the trajectory ends here.
            return protocol.close_call(stopped)
        return protocol.append_output(stopped, execution or "", feedback=feedback)

    def on_no_call(self, protocol: Protocol, context: CallContext) -> str | None:
        assert isinstance(protocol, CodeActProtocol), protocol.name
        swe = _state(context, protocol)
        swe["turns"] += 1
        if context.max_calls is not None and swe["turns"] >= context.max_calls:
            swe["end"] = "max_turns"
            return None
        if _compact(protocol):
            return protocol.wrap_no_call(compact.NO_CALL)
        swe["no_call_replies"] += 1
        return protocol.wrap_no_call(observations.no_call_message(swe["no_call_replies"] - 1))

    def finished(self, context: CallContext) -> bool:
        swe = context.state.get("swe")
        return swe is not None and swe["end"] is not None

    async def outcome(self, protocol: Protocol, context: CallContext, *, truncated: bool) -> dict[str, Any] | None:
        swe = _state(context, protocol)
        end = swe["end"] or ("context_full" if truncated else "max_turns")
        graded = await grade_workspace(swe["workspace"], context.task or {}, context=context)
        return {
            "kind": "swe",
            "end": end,
            "turns": swe["turns"],
            "calls": swe["calls"],
            "format_errors": swe["format_errors"],
            **graded.as_outcome(),
        }


def _is_finish(protocol: CodeActProtocol, stopped: str) -> bool:
    call = protocol.parse_call(protocol.extract_call(protocol.close_call(stopped)) or "")
    return call is not None and call.tool == FINISH


def _compact_editor(workspace: Workspace, params: dict[str, str]) -> str:
    """The mini's editor observation: the file itself for a view (no `cat -n` numbering), `edited` for a change."""
    if params.get("command") == "view":
        return workspace.files.get(params.get("path", ""), "")
    return compact.EDITED
