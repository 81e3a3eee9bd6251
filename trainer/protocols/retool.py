"""retool (ReTool, verl recipe/retool): <code>```python ...```</code>, results in <interpreter>.

Generation stops at </code>; the result is appended as "<interpreter>\\n{result}\\n</interpreter>\\n"
and the final answer is <answer>\\boxed{...}</answer>. Before running a call, the recipe prints
its last line (`prepare_code`).
"""

import re
from typing import ClassVar

from trainer.protocols.base import Protocol, register_protocol, tagged_call_re
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback
from trainer.trajectory import ToolExecution

_FENCED = re.compile(r"```python(.*?)```", re.DOTALL)


@register_protocol
class ReTool(Protocol):
    name: ClassVar[str] = "retool"
    stop_marker: ClassVar[str | None] = "</code>"
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(
        r"(?P<tool><interpreter>.*?</interpreter>\n?)", re.DOTALL
    )
    call_re: ClassVar[re.Pattern[str]] = tagged_call_re("code")
    call_language: ClassVar[str] = "python"

    def extract_call(self, text: str) -> str | None:
        tail = self._strip_marker(self._after_last_output(text))
        start = tail.rfind("<code>")
        if start < 0:
            return None
        body = tail[start + len("<code>") :]
        end = body.find("</code>")
        if end >= 0:
            body = body[:end]
        # verl's CustomSandboxFusionTool runs the first ```python block of the call, else the raw text.
        fenced = _FENCED.findall(body)
        code = (fenced[0] if fenced else body).strip()
        if "```" in code:
            return None  # an unclosed fence: the code is incomplete
        return code + "\n" if code else None

    def prepare_code(self, code: str) -> str:
        """The recipe's rewrite before running (verl-recipe 48ea0a7 retool/retool.py:42-50): the last
        line that is not the empty string is wrapped in print(...) unless it starts with "print".
        Nothing more decides it: an assignment, an indented line or a comment is wrapped too (and
        then fails to run), a whitespace-only line counts as a line, and `printx = 1` is kept."""
        lines = code.split("\n")
        for i in reversed(range(len(lines))):
            if lines[i] == "":
                continue
            if not lines[i].startswith("print"):
                lines[i] = f"print({lines[i]})"
            break
        return "\n".join(lines)

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        return f"<interpreter>\n{feedback.text(result)}\n</interpreter>\n"
