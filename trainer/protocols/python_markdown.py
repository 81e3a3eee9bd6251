"""python_markdown (ToRL, ZeroTIR, OTC): ```python blocks, executed when generation stops at ```output.

The appended result is "```output\\n{result}\\n```\\n" (ToRL's OBS_START / OBS_END); "```output" is
the stop string, so it is model text and only "\\n{result}\\n```\\n" is masked, as ToRL's mask_info
does (GAIR-NLP/ToRL, verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py).
"""

import re
from typing import ClassVar

from trainer.protocols.base import Protocol, register_protocol
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback
from trainer.trajectory import ToolExecution

OUTPUT_MARKER = "```output"


def extract_program(text: str) -> str | None:
    """ToRL's extract_program(last_only=True): the last ```python block, line by line
    (GAIR-NLP/ToRL verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:79-99 @cb78cf1).

    A block opens on a line starting or ending with ```python and closes on the next line
    starting with ```; if the last block never closed the code is incomplete and nothing runs.
    An empty block is no call (ToRL's `program != ''`, :105); a block of blank lines is code, which
    ToRL runs (whether to run it is the feedback style's choice, `Feedback.code_to_run`).
    """
    program = ""
    open_block = False
    for line in text.split("\n"):
        if line.startswith("```python") or line.endswith("```python"):
            program = ""
            open_block = True
        elif line.startswith("```"):
            open_block = False
        elif open_block:
            program += line + "\n"
    if open_block or not program:
        return None
    return program


@register_protocol
class PythonMarkdown(Protocol):
    name: ClassVar[str] = "python_markdown"
    stop_marker: ClassVar[str | None] = OUTPUT_MARKER
    # Group "tool": what follows the marker up to the closing fence and its newline.
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(r"```output(?P<tool>\n.*?\n```(?:\n|$))", re.DOTALL)
    # As extract_program reads a block: opened by a line starting or ending with ```python,
    # closed by the next line starting with ```.
    call_re: ClassVar[re.Pattern[str]] = re.compile(
        r"(?:^```python[^\n]*|```python$)\n(?P<call>.*?)(?=^```|\Z)", re.DOTALL | re.MULTILINE
    )
    call_language: ClassVar[str] = "python"
    output_opening: ClassVar[str] = OUTPUT_MARKER

    def extract_call(self, text: str) -> str | None:
        # ToRL runs extract_program on the current round's generation only: a block written
        # before an earlier output has already run and must not run again.
        return extract_program(self._strip_marker(self._after_last_output(text)))

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        return f"{OUTPUT_MARKER}\n{feedback.text(result)}\n```\n"

    def output_body(self, tool_text: str) -> str:
        """The output between the marker's line and the closing fence."""
        match = re.fullmatch(r"\n?(?P<body>.*?)\n?```\n?", tool_text, re.DOTALL)
        return match.group("body") if match else tool_text.strip("\n")

    def append_output(self, text: str, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        # The wrapper starts with the marker itself; ToRL also puts the marker on its own line.
        return self.drop_marker(text) + self.wrap_output(result, feedback=feedback)
