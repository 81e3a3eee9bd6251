"""tool_call_json (ToolRL, Nemotron-Tool-N1): <think>...</think>, then <tool_call>...</tool_call>
holding JSON calls and/or <response>...</response>. Single step by default (the `none` environment:
calls are scored, not executed); in the `function_calling` environment (trainer.envs) each block's
calls run and their results follow it in a <tool_response> block, which is tool text:
`</tool_call>` + RESPONSE_OPEN ... RESPONSE_CLOSE (`wrap_response`).

Two call layouts exist, and each paper parses its own:
- ToolRL (qiancheng0/ToolRL, verl/utils/reward_score/rlla.py): the first <tool_call> block,
  stripped, one JSON object per line ({"name": ..., "parameters": {...}}).
- Tool-N1 (NVlabs/Tool-N1, verl/verl/utils/reward_score/toolcall.py): the last <tool_call> block
  as one JSON value, a list of {"name": ..., "arguments": {...}} or a single object.
"""

import json
import re
from typing import Any, ClassVar, Literal

from trainer.contract import CALL_HEADLINE_METRICS
from trainer.protocols.base import Protocol, register_protocol, tagged_call_re
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback, truncate_output
from trainer.trajectory import ToolExecution

CallStyle = Literal["lines", "list"]

_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_RESPONSE = re.compile(r"<response>(.*?)</response>", re.DOTALL)
# The results of a block's calls, as Qwen2.5's and Hermes' chat templates wrap a tool's result.
RESPONSE_OPEN, RESPONSE_CLOSE = "\n<tool_response>\n", "\n</tool_response>\n"


def wrap_response(text: str) -> str:
    """What follows `</tool_call>` when its calls ran: their results, one JSON line a call."""
    return f"{RESPONSE_OPEN}{text}{RESPONSE_CLOSE}"


def parse_calls_lines(text: str) -> list[Any] | None:
    """ToolRL: the first <tool_call> block, one JSON value per line; None when the block is
    missing or any line fails to parse (ToolRL then gives the minimum correctness reward)."""
    if "<tool_call>" not in text or "</tool_call>" not in text:
        return None
    block = text.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    try:
        return [json.loads(line) for line in block.split("\n")]
    except (json.JSONDecodeError, ValueError):
        return None


def parse_calls_list(text: str) -> list[Any] | None:
    """Tool-N1: the last <tool_call> block as one JSON value; an object becomes a one-call list.
    None when there is no block or it does not parse to a list or object."""
    blocks = _TOOL_CALL.findall(text)
    if not blocks:
        return None
    try:
        value = json.loads(blocks[-1].strip())
    except (json.JSONDecodeError, ValueError):
        return None
    if isinstance(value, str):
        # Tool-N1 parses once more when the block held a JSON string of JSON.
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, ValueError):
            return None
    if isinstance(value, dict):
        return [value]
    return value if isinstance(value, list) else None


@register_protocol
class ToolCallJson(Protocol):
    name: ClassVar[str] = "tool_call_json"
    stop_marker: ClassVar[str | None] = None
    # Only where the function_calling environment ran the block (the rollout records the executions).
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(
        r"(?<=</tool_call>)(?P<tool>\n<tool_response>\n.*?\n</tool_response>\n)", re.DOTALL
    )
    call_re: ClassVar[re.Pattern[str]] = tagged_call_re("tool_call")
    call_language: ClassVar[str] = "json"
    environments: ClassVar[tuple[str, ...]] = ("none", "function_calling")
    headline_metrics: ClassVar[tuple[str, ...]] = CALL_HEADLINE_METRICS

    def parse_calls(self, text: str, *, style: CallStyle = "lines") -> list[Any] | None:
        """The calls in `text`: `lines` is ToolRL's layout, `list` Tool-N1's; None if malformed."""
        return parse_calls_lines(text) if style == "lines" else parse_calls_list(text)

    def extract_call(self, text: str) -> str | None:
        """The raw content of the last <tool_call> block (what a caller would execute)."""
        blocks = _TOOL_CALL.findall(text)
        return blocks[-1].strip() if blocks else None

    def call_end(self) -> str | None:
        # Where a block ends, for the function_calling environment; single step has no stop marker.
        return "</tool_call>"

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        """A block's results (the function_calling environment's): one JSON line a call, cut to the cap."""
        output = result.output if isinstance(result, ToolExecution) else result
        return wrap_response(truncate_output(output.strip(), feedback.max_chars))

    def count_tool_calls(self, response: str) -> int:
        """Calls in the last <tool_call> block, whichever layout parses; 0 when none does."""
        for style in ("list", "lines"):
            calls = self.parse_calls(response, style=style)  # type: ignore[arg-type]
            if calls is not None:
                return len(calls)
        return 0

    def final_answer(self, response: str, *, tool_outputs: int | None = None) -> str | None:
        """The content of the last <response> block: the reply to the user."""
        blocks = _RESPONSE.findall(response)
        return blocks[-1].strip() if blocks else None
