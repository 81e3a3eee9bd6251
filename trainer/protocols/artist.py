"""artist (ARTIST): reasoning in <think>, code in <python>...</python>, results in <output>,
the final answer in <answer>...</answer>.

Generation stops at </python>; the result is appended as "<output>\\n{result}\\n</output>\\n".
"""

import re
from typing import ClassVar

from trainer.answers import last_boxed
from trainer.protocols.base import Protocol, register_protocol, tagged_call_re
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback
from trainer.trajectory import ToolExecution

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def answer_block(text: str) -> str | None:
    """The content of the last <answer>...</answer>, or None."""
    blocks = _ANSWER.findall(text)
    return blocks[-1].strip() if blocks else None


@register_protocol
class Artist(Protocol):
    name: ClassVar[str] = "artist"
    stop_marker: ClassVar[str | None] = "</python>"
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(r"(?P<tool><output>.*?</output>\n?)", re.DOTALL)
    call_re: ClassVar[re.Pattern[str]] = tagged_call_re("python")
    call_language: ClassVar[str] = "python"

    def extract_call(self, text: str) -> str | None:
        tail = self._strip_marker(self._after_last_output(text))
        start = tail.rfind("<python>")
        if start < 0:
            return None
        body = tail[start + len("<python>") :]
        end = body.find("</python>")
        code = (body[:end] if end >= 0 else body).strip()
        # Models often fence the code inside the tag; the fence is not Python.
        code = re.sub(r"^```(?:python)?\s*\n|\n?```\s*$", "", code).strip()
        return code + "\n" if code else None

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        return f"<output>\n{feedback.text(result)}\n</output>\n"

    def final_answer(self, response: str, *, tool_outputs: int | None = None) -> str | None:
        """The last <answer> of the model's text: its \\boxed{} content if it has one, else the
        whole content."""
        block = answer_block(self.model_text(response, tool_outputs=tool_outputs))
        if block is None:
            return None
        boxed = last_boxed(block)
        return boxed if boxed is not None else (block or None)
