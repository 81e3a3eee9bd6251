"""codeact (SkyRL-v0's software-engineering agent) and codeact_mini (its compact spelling for the tiny model).

SkyRL-v0 trains OpenHands' CodeAct agent with its tools written as text (docs/swe_sources.md has the sources):
one call a turn,

    <function=execute_bash>
    <parameter=command>ls</parameter>
    </function>

with generation stopped at `</function` (the `>` is completed by the environment) and the result sent
back as the next user message, `EXECUTION RESULT of [execute_bash]:` and the tool's output. tirlab's
rollout is one token sequence, so that user message is framed as Qwen's chat template frames a user
turn (ChatML: `<|im_end|>\\n<|im_start|>user\\n` ... `<|im_end|>\\n<|im_start|>assistant\\n`), the template of
the models SkyRL-v0 trains; all of it is tool text, masked from the loss.

codeact_mini is the same three tools for the tiny model, whose context is 1,024 characters:
`<f=edit><p=cmd>str_replace</p><p=path>f.py</p><p=old>a - b</p><p=new>a + b</p></f>` stops at `</f>`,
and the result comes back as `<r>...</r>`. The names are short spellings of SkyRL-v0's
(`bash` = execute_bash, `edit` = str_replace_editor, `cmd` = command, `old`/`new` = old_str/new_str,
`text` = file_text, `line` = insert_line, `range` = view_range); docs/fidelity.md says what else the mini
changes. Parsing maps either spelling to SkyRL-v0's names, so the environment (trainer.envs.swe) has one
set of tools.

What the environment runs is the last call of the text generated since the previous result; a turn's
observation is the environment's (trainer.envs.swe), the protocol only frames it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from trainer.contract import SWE_HEADLINE_METRICS
from trainer.protocols.base import Protocol, register_protocol
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback
from trainer.trajectory import ToolExecution

EXECUTE_BASH, STR_REPLACE_EDITOR, FINISH = "execute_bash", "str_replace_editor", "finish"
TOOLS = (EXECUTE_BASH, STR_REPLACE_EDITOR, FINISH)


@dataclass(frozen=True)
class ParsedCall:
    """One call as the environment runs it: SkyRL-v0's tool and parameter names, the values as written."""

    tool: str
    params: dict[str, str] = field(default_factory=dict)


class CodeActProtocol(Protocol):
    """What both spellings share: one call a turn, read with the spelling's tags and names."""

    function_tag: ClassVar[str]
    parameter_tag: ClassVar[str]
    # The spelling's names for SkyRL-v0's tools and parameters (identity for codeact).
    tool_names: ClassVar[dict[str, str]] = {}
    param_names: ClassVar[dict[str, str]] = {}
    # What an observation is framed in: the spelling's opening and closing.
    observation_open: ClassVar[str]
    observation_close: ClassVar[str]
    call_language: ClassVar[str] = "text"
    environments: ClassVar[tuple[str, ...]] = ("swe",)
    headline_metrics: ClassVar[tuple[str, ...]] = SWE_HEADLINE_METRICS

    @classmethod
    def _function_re(cls) -> re.Pattern[str]:
        tag = re.escape(cls.function_tag)
        return re.compile(rf"<{tag}=(?P<name>[^>\n]*)>(?P<call>.*?)(?:</{tag}>?|\Z)", re.DOTALL)

    @classmethod
    def _parameter_re(cls) -> re.Pattern[str]:
        tag = re.escape(cls.parameter_tag)
        return re.compile(rf"<{tag}=(?P<name>[^>\n]*)>(?P<value>.*?)</{tag}>", re.DOTALL)

    def extract_call(self, text: str) -> str | None:
        """The last function block generated since the previous result, as written (markers included)."""
        tail = self._after_last_output(text)
        start = tail.rfind(f"<{self.function_tag}=")
        return tail[start:] if start >= 0 else None

    def parse_call(self, block: str) -> ParsedCall | None:
        """A function block as SkyRL-v0's tool and parameter names; None when it is not one."""
        match = self._function_re().search(block)
        if match is None:
            return None
        tool = match.group("name").strip()
        params: dict[str, str] = {}
        for param in self._parameter_re().finditer(match.group("call")):
            name = param.group("name").strip()
            value = param.group("value")
            # A value on its own lines (`<parameter=command>\nls\n</parameter>`) is the text between them.
            if value.startswith("\n"):
                value = value[1:]
            if value.endswith("\n"):
                value = value[:-1]
            params[self.param_names.get(name, name)] = value
        return ParsedCall(tool=self.tool_names.get(tool, tool), params=params)

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        text = result.output if isinstance(result, ToolExecution) else result
        return f"{self.observation_open}{text}{self.observation_close}"

    def close_call(self, stopped: str) -> str:
        """Text that stopped at the marker (vLLM leaves it out) with its call closed: what finish leaves."""
        marker = self.stop_marker or ""
        return stopped if stopped.endswith(marker) else stopped + marker

    def wrap_no_call(self, message: str) -> str:
        """What follows a turn that ended without a call (the model's end of turn): `message` as the next
        observation."""
        return self.wrap_output(message)

    def count_tool_calls(self, response: str) -> int:
        return len(self.tool_spans(response))

    def final_answer(self, response: str, *, tool_outputs: int | None = None) -> str | None:
        """A software-engineering trajectory answers with its patch (the environment's outcome), not text."""
        return None


@register_protocol
class CodeAct(CodeActProtocol):
    name: ClassVar[str] = "codeact"
    stop_marker: ClassVar[str | None] = "</function"
    function_tag: ClassVar[str] = "function"
    parameter_tag: ClassVar[str] = "parameter"
    # The observation as the next user turn of a ChatML conversation, after the completed `</function>`.
    observation_open: ClassVar[str] = "<|im_end|>\n<|im_start|>user\n"
    observation_close: ClassVar[str] = "<|im_end|>\n<|im_start|>assistant\n"
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(
        r"(?P<tool>>?(?:<\|im_end\|>)?\n<\|im_start\|>user\n.*?<\|im_end\|>\n<\|im_start\|>assistant\n)", re.DOTALL
    )
    # The whole function block is the call (what extract_call returns and the environment runs), markers included.
    call_re: ClassVar[re.Pattern[str]] = re.compile(r"(?P<call><function=[^>\n]*>.*?(?:</function|\Z))", re.DOTALL)

    def close_call(self, stopped: str) -> str:
        # vLLM leaves the stop string out; the environment completes `</function` to `</function>`.
        return super().close_call(stopped) + ">"

    def append_output(self, text: str, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        return self.close_call(text) + self.wrap_output(result, feedback=feedback)

    def wrap_no_call(self, message: str) -> str:
        # The model's end of turn (<|im_end|>) is its last generated token already: the user turn follows it.
        return f"\n<|im_start|>user\n{message}{self.observation_close}"

    def output_body(self, tool_text: str) -> str:
        body = tool_text.removeprefix(">").removeprefix("<|im_end|>").removeprefix("\n<|im_start|>user\n")
        return body.removesuffix(self.observation_close)


@register_protocol
class CodeActMini(CodeActProtocol):
    name: ClassVar[str] = "codeact_mini"
    stop_marker: ClassVar[str | None] = "</f>"
    function_tag: ClassVar[str] = "f"
    parameter_tag: ClassVar[str] = "p"
    tool_names: ClassVar[dict[str, str]] = {"bash": EXECUTE_BASH, "edit": STR_REPLACE_EDITOR}
    param_names: ClassVar[dict[str, str]] = {
        "cmd": "command",
        "old": "old_str",
        "new": "new_str",
        "text": "file_text",
        "line": "insert_line",
        "range": "view_range",
    }
    observation_open: ClassVar[str] = "<r>"
    observation_close: ClassVar[str] = "</r>\n"
    tool_output_re: ClassVar[re.Pattern[str] | None] = re.compile(r"(?P<tool><r>.*?</r>\n)", re.DOTALL)
    call_re: ClassVar[re.Pattern[str]] = re.compile(r"(?P<call><f=[^>\n]*>.*?(?:</f>|\Z))", re.DOTALL)
