"""SkyRL-v0's observation texts for codeact: how a tool's result, a refused call and a turn without a call read to
the model. docs/swe_sources.md cites each; `sky` is NovaSky-AI/SkyRL @a0d50c4, `oh` its SkyRL-OpenHands submodule
@6f3ba323.

SkyRL-v0 runs OpenHands' CodeAct agent on models without native function calling: the converter turns each tool
result into a user message opening `EXECUTION RESULT of [<tool>]:` (oh openhands/llm/fn_call_converter.py:452-468);
a command's observation is its output, then its PS1 metadata and exit code
(oh openhands/events/observation/commands.py:156-164); a call the converter refuses becomes an ErrorObservation,
a plain user message with `[Error occurred in processing last action]` after it (oh openhands/controller/
agent_controller.py:683-696, openhands/core/message_utils.py:321-324); a turn with no call gets the fixed
`codeact_user_response` (sky verl/workers/agentic/codeact.py:204-251).
"""

from __future__ import annotations

import json
from typing import Any

EXECUTE_BASH, STR_REPLACE_EDITOR, FINISH = "execute_bash", "str_replace_editor", "finish"
# The tools SkyRL-v0's agent offers, in its order (sky codeact.py:310-314; oh function_calling.py:606-621).
OFFERED_TOOLS = (EXECUTE_BASH, FINISH, STR_REPLACE_EDITOR)
# Each tool's parameters as its schema declares them: (type, enum) (oh function_calling.py:40-58, 235-275, 458-464).
PARAMETERS: dict[str, dict[str, tuple[str, list[str] | None]]] = {
    EXECUTE_BASH: {"command": ("string", None), "is_input": ("string", ["true", "false"])},
    STR_REPLACE_EDITOR: {
        "command": ("string", ["view", "create", "str_replace", "insert", "undo_edit"]),
        "path": ("string", None),
        "file_text": ("string", None),
        "old_str": ("string", None),
        "new_str": ("string", None),
        "insert_line": ("integer", None),
        "view_range": ("array", None),
    },
    FINISH: {},
}
REQUIRED = {EXECUTE_BASH: ("command",), STR_REPLACE_EDITOR: ("command", "path"), FINISH: ()}

# sky codeact.py:217-222 (no <solution> request in SWE runs); the give-up line from the third user message on
# (codeact.py:240-250: two user messages so far -- the task and one earlier reply).
NO_CALL = (
    "Please continue working on the task on whatever approach you think is suitable.\n"
    "If you think you have solved the task, please first send your answer to user through message and then "
    "finish the interaction.\n"
    "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
)
GIVE_UP = 'If you want to give up, use the "finish" tool to finish the interaction.\n'
# openhands/events/serialization/event.py:133-146 with LLMConfig.max_message_chars (llm_config.py:68-70).
MAX_MESSAGE_CHARS = 30_000
TRUNCATED = "\n[... Observation truncated due to length ...]\n"


def execution_result(tool: str, output: str) -> str:
    """A tool's result as the next user message (fn_call_converter.py:455)."""
    return f"EXECUTION RESULT of [{tool}]:\n{output}"


def no_call_message(replies_before: int) -> str:
    """The reply to a turn without a call, `replies_before` such replies already given in the trajectory."""
    return NO_CALL + (GIVE_UP if replies_before >= 1 else "")


def truncate_content(content: str, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """An observation too long for the prompt keeps its head and tail (event.py:133-146)."""
    if len(content) <= max_chars:
        return content
    half = max_chars // 2
    return content[:half] + TRUNCATED + content[-half:]


def error_observation(message: str) -> str:
    """What the model reads for an ErrorObservation (message_utils.py:321-324)."""
    return f"{truncate_content(message)}\n[Error occurred in processing last action]"


def command_observation(
    output: str,
    exit_code: int,
    *,
    working_dir: str | None = None,
    python: str | None = None,
    suffix: str | None = None,
) -> str:
    """CmdOutputObservation.to_agent_observation (commands.py:156-164) as the runtime fills it for a command
    that ended (oh openhands/runtime/utils/bash.py:307-355): the output stripped, `[The command completed with exit
    code N.]`, the PS1's working directory and `which python`, and `[Command finished with exit code N]`; for
    one that did not end (exit code -1), `suffix` says why and no metadata follows."""
    if suffix is None:
        suffix = f"\n[The command completed with exit code {exit_code}.]" if exit_code != -1 else ""
    text = f"{output.strip()}{suffix}"
    if exit_code != -1 and working_dir:
        text += f"\n[Current working directory: {working_dir}]"
    if exit_code != -1 and python:
        text += f"\n[Python interpreter: {python}]"
    if exit_code != -1:
        text += f"\n[Command finished with exit code {exit_code}]"
    return truncate_content(text)


def timed_out(seconds: float) -> str:
    """The suffix of a command stopped at its time limit (bash.py:391-424)."""
    return (
        f"\n[The command timed out after {seconds:g} seconds. "
        "You may wait longer to see additional output by sending empty command '', "
        "send other commands to interact with the current process, "
        "or send keys to interrupt/kill the command.]"
    )


def function_not_found(tool: str) -> str:
    """The converter's refusal of a function that is not offered (fn_call_converter.py:706-710)."""
    return f"Function '{tool}' not found in available tools: {list(OFFERED_TOOLS)}"


def format_error(tool: str | None) -> str:
    """A call the converter could not read, as the model reads it. OpenHands takes a turn without a well-formed
    function block for a message (no call: `no_call_message`); tirlab's parser refuses such a block instead."""
    if tool is None:
        return error_observation("No function call was found: write one call as <function=NAME>...</function>.")
    return error_observation(function_not_found(tool))


def validate_call(tool: str, params: dict[str, str]) -> tuple[dict[str, Any], str | None]:
    """The converter's checks and conversions of a call's parameters (fn_call_converter.py:476-549, values
    stripped at :500): the typed parameters, and the ErrorObservation text when it refuses the call."""
    if tool not in PARAMETERS:
        return {}, error_observation(function_not_found(tool))
    schema, typed = PARAMETERS[tool], {}
    for name, raw in params.items():
        value: Any = raw.strip()
        if schema and name not in schema:
            allowed = "{" + ", ".join(repr(p) for p in schema) + "}"
            return {}, error_observation(
                f"Parameter '{name}' is not allowed for function '{tool}'. Allowed parameters: {allowed}"
            )
        kind, enum = schema.get(name, ("string", None))
        try:
            value = int(value) if kind == "integer" else json.loads(value) if kind == "array" else value
        except ValueError:
            article = "an integer" if kind == "integer" else "an array"
            return {}, error_observation(f"Parameter '{name}' is expected to be {article}.")
        if enum is not None and value not in enum:
            return {}, error_observation(f"Parameter '{name}' is expected to be one of {enum}.")
        typed[name] = value
    missing = [name for name in REQUIRED[tool] if name not in typed]
    if missing:
        names = "{" + ", ".join(repr(m) for m in missing) + "}"
        return {}, error_observation(f"Missing required parameters for function '{tool}': {names}")
    return typed, None
