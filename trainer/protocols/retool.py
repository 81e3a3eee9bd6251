"""retool (ReTool, verl recipe/retool): <code>```python ...```</code>, results in <interpreter>.

Generation stops at </code>; the result is appended as "<interpreter>\\n{result}\\n</interpreter>\\n"
and the final answer is <answer>\\boxed{...}</answer>.
"""

import re
from typing import ClassVar

from trainer.protocols.base import DEFAULT_MAX_OUTPUT_CHARS, Protocol, observation, tagged_call_re
from trainer.trajectory import ToolExecution

_FENCED = re.compile(r"```python(.*?)```", re.DOTALL)


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

    def wrap_output(self, result: ToolExecution | str, *, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
        return f"<interpreter>\n{observation(result, max_chars=max_chars)}\n</interpreter>\n"
