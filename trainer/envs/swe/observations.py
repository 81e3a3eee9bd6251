"""SkyRL-v0's observation texts for codeact: how a tool's result, a call that does not parse and a turn without
a call read to the model (docs/swe_sources.md says where each comes from).

SkyRL-v0 trains OpenHands' CodeAct agent on models without native function calling: OpenHands' converter
(openhands/llm/fn_call_converter.py) turns each tool result into a user message that opens with
`EXECUTION RESULT of [<tool>]:`, and the agent adds `[Command finished with exit code N]` after a command's
output; a turn that calls no tool gets a fixed user message asking it to go on.
"""

from __future__ import annotations

from trainer.protocols.codeact import TOOLS

# The fixed reply to a turn without a call (OpenHands' codeact_user_response for SWE-bench runs).
NO_CALL = (
    "Please continue working on the task on whatever approach you think is suitable.\n"
    "If you think you have solved the task, please first send your answer to user through message and then "
    "finish the interaction.\n"
    "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
)


def execution_result(tool: str, output: str) -> str:
    """A tool's result as the next user message."""
    return f"EXECUTION RESULT of [{tool}]:\n{output}"


def bash_output(output: str, exit_code: int) -> str:
    """A command's output with its exit code, as CodeAct shows a command's observation (-1: it did not end)."""
    return f"{output}\n[Command finished with exit code {exit_code}]"


def format_error(tool: str | None) -> str:
    """A call the converter could not read: no function block, or a function that is not one of the tools."""
    if tool is None:
        return "ERROR:\nNo function call was found: write one call as <function=NAME>...</function>."
    return f"ERROR:\nFunction '{tool}' not found in available tools: {list(TOOLS)}"
