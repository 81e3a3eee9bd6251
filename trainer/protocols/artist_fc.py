"""artist_fc (ARTIST's multi-turn function calling, arXiv 2505.01441 §3.2, §4.2): reasoning in
<reasoning>...</reasoning>, function calls in <tool>...</tool>, and "the output of each function
call in tool_result tags" -- failure messages included.

Generation stops at </tool>; the block's results follow it as "\\n<tool_result>\\n{output}\\n</tool_result>\\n",
which is tool text (masked from the loss). A <tool> block holds JSON calls, one object a line
({"name": ..., "arguments": {...}}) or one JSON list of them; the paper publishes no code, so this
layout is ours (the one trainer.envs' function_calling environment runs). The final answer is the
model's text after its last tool output: in the paper's multi-turn tasks the model ends with a reply
to the user, not a boxed value.
"""

import json
import re
from typing import Any, ClassVar

from trainer.contract import MULTI_TURN_HEADLINE_METRICS
from trainer.protocols.base import Protocol, register_protocol, tagged_call_re
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback, truncate_output
from trainer.trajectory import ToolExecution

CALL_OPEN, CALL_CLOSE = "<tool>", "</tool>"
RESULT_OPEN, RESULT_CLOSE = "\n<tool_result>\n", "\n</tool_result>\n"

_TOOL_BLOCK = re.compile(r"<tool>(.*?)</tool>", re.DOTALL)
# A ``` fence around a block's body (models often fence JSON inside the tag); the fence is not JSON.
_FENCE = re.compile(r"^```[^\n]*\n|\n?```\s*$")


def block_body(body: str) -> str:
    """A <tool> block's body, stripped and without a ``` fence around it."""
    return _FENCE.sub("", body.strip()).strip()


def parse_call_body(body: str) -> list[Any] | None:
    """The JSON calls of a <tool> block's body: one JSON list (an object alone is a one-call list),
    or one JSON value per non-empty line; None when the body is empty or neither layout parses."""
    body = block_body(body)
    if not body:
        return None
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        value = None
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value]
    try:
        return [json.loads(line) for line in body.split("\n") if line.strip()]
    except (json.JSONDecodeError, ValueError):
        return None


@register_protocol
class ArtistFc(Protocol):
    name: ClassVar[str] = "artist_fc"
    stop_marker: ClassVar[str | None] = CALL_CLOSE
    # The block appended right after </tool>; a <tool_result> the model writes elsewhere is its own text.
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(
        r"(?<=</tool>)(?P<tool>\n<tool_result>\n.*?\n</tool_result>\n)", re.DOTALL
    )
    call_re: ClassVar[re.Pattern[str]] = tagged_call_re("tool")
    call_language: ClassVar[str] = "json"
    environments: ClassVar[tuple[str, ...]] = ("function_calling",)
    multi_turn_calls: ClassVar[bool] = True
    headline_metrics: ClassVar[tuple[str, ...]] = MULTI_TURN_HEADLINE_METRICS

    def extract_call(self, text: str) -> str | None:
        """The stripped body of the last <tool> block since the last tool output (closed, or cut at
        the stop marker); None without one, or when it is empty."""
        tail = self._strip_marker(self._after_last_output(text))
        start = tail.rfind(CALL_OPEN)
        if start < 0:
            return None
        body = tail[start + len(CALL_OPEN) :]
        end = body.find(CALL_CLOSE)
        return block_body(body[:end] if end >= 0 else body) or None

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        """The block's results as the environment reported them (one line a call, errors included),
        cut to `feedback.max_chars` as ToRL cuts outputs."""
        output = result.output if isinstance(result, ToolExecution) else result
        return f"{RESULT_OPEN}{truncate_output((output or '').strip(), feedback.max_chars)}{RESULT_CLOSE}"

    def calls(self, response: str, *, tool_outputs: int | None = None) -> tuple[list[Any], int]:
        """Every closed <tool> block's calls in the model's text, in order, and how many blocks did
        not parse (they contribute no call)."""
        calls: list[Any] = []
        malformed = 0
        for body in _TOOL_BLOCK.findall(self.model_text(response, tool_outputs=tool_outputs)):
            parsed = parse_call_body(body)
            if parsed is None:
                malformed += 1
            else:
                calls.extend(parsed)
        return calls, malformed

    def final_answer(self, response: str, *, tool_outputs: int | None = None) -> str | None:
        """The model's text after its last </tool> (or a </tool_result> it wrote itself), stripped;
        the whole model text when it made no call; None when that is empty."""
        text = self.model_text(response, tool_outputs=tool_outputs)
        cut = max(
            (text.rfind(mark) + len(mark) for mark in (CALL_CLOSE, RESULT_CLOSE.strip()) if mark in text), default=0
        )
        return text[cut:].strip() or None
