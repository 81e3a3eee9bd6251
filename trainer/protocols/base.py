"""What every tool protocol shares: stop strings under a call budget, output wrapping (the text
inside comes from trainer.protocols.feedback), and splitting a finished response into model text
(trained on) and tool output (masked from the loss).

A protocol object is stateless; the rollout loop keeps the text and the count of calls made.
The convention for a generation that stopped at the tool marker: backends differ on whether the
stop string is kept in the returned text (vLLM drops it, HF `stop_strings` keeps it), so
`append_output` completes the marker when it is missing before appending the wrapped result.
The marker itself is model text (the model generated it); everything the protocol appends after
it is tool text.
"""

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar

from trainer.answers import last_boxed
from trainer.contract import HEADLINE_METRICS
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback
from trainer.registry import Registry
from trainer.trajectory import ToolExecution

SegmentKind = Literal["model", "tool"]
PartKind = Literal["prose", "call"]


@dataclass(frozen=True)
class Segment:
    """A run of a response: `model` text is trained on, `tool` text is masked from the loss."""

    kind: SegmentKind
    text: str


@dataclass(frozen=True)
class TextPart:
    """A run of model text: `call` is the body of a tool call (the code or JSON it carries),
    `prose` is everything else, the call's own markers included."""

    kind: PartKind
    text: str


def tagged_call_re(tag: str) -> re.Pattern[str]:
    """A call between <tag> and </tag>; group "call" is its body, up to its last newline, without a
    ``` fence around it (models often fence code inside the tag). An unclosed call (a truncated
    response) runs to the end. The lookahead is of bounded length: a long text is scanned in linear time."""
    return re.compile(rf"<{tag}>\n?(?:```[^\n]*\n)?(?P<call>.*?\n?)(?=(?:```)?\n?</{tag}>|\Z)", re.DOTALL)


# A tool output as a tag-wrapping protocol inserts it: <tag>, the output, </tag>, blank lines around.
_TAGGED_OUTPUT = re.compile(r"\A\s*<(?P<tag>[\w-]+)>\n?(?P<body>.*?)\n?</(?P=tag)>\s*\Z", re.DOTALL)


def output_failed(text: str) -> bool:
    """Whether a wrapped tool output reports a failure (ToRL's test: the word "Error")."""
    return "Error" in text


class Protocol(ABC):
    """Base of the tool protocols. Subclasses set the class attributes and the two regexes."""

    name: ClassVar[str]
    # The string generation stops at to run a tool; None for protocols whose calls are not executed.
    stop_marker: ClassVar[str | None]
    # Where the protocol's inserted tool text lies; group "tool" is the masked part.
    tool_output_re: ClassVar[re.Pattern[str] | None]
    # Where a call lies in model text; group "call" is its body, without the markers.
    call_re: ClassVar[re.Pattern[str]]
    # The language of a call's body, for highlighting it: "python" or "json" (JSON calls are read
    # against ground-truth calls: trainer.protocols.calls).
    call_language: ClassVar[str]
    # The environments that can run its calls (trainer.envs); the first is the default.
    environments: ClassVar[tuple[str, ...]] = ("python",)
    # Every call block of the model's text is read, in order (multi-turn function calling), rather than one.
    multi_turn_calls: ClassVar[bool] = False
    # The metrics a run page draws first.
    headline_metrics: ClassVar[tuple[str, ...]] = HEADLINE_METRICS
    # The start of a tool output's wrapper where it is model text (the stop marker opens the output):
    # shown with the output it opens, not at the end of the model's turn. "" where the marker closes the call.
    output_opening: ClassVar[str] = ""

    @property
    def json_calls(self) -> bool:
        """Whether its calls are JSON function calls, scored against ground-truth calls."""
        return self.call_language == "json"

    def stop_strings(self, calls_made: int, budget: int | None) -> list[str]:
        """Stop strings for the next generation: none once `budget` calls were made (ToRL: after
        C calls the model is no longer stopped at the tool marker, so further code is not run).
        A budget of None means no limit."""
        if self.stop_marker is None:
            return []
        if budget is not None and calls_made >= budget:
            return []
        return [self.stop_marker]

    def call_end(self) -> str | None:
        """The string a call ends with, where an environment that runs calls stops generation: the
        stop marker, or for a single-step protocol (no marker) the end of its call block."""
        return self.stop_marker

    @abstractmethod
    def extract_call(self, text: str) -> str | None:
        """The call to execute from text that just stopped at the tool marker, or None."""

    def prepare_code(self, code: str) -> str:
        """The code sent to the sandbox for a call's code (the call as written, unless the
        protocol's paper rewrites it before running it)."""
        return code

    @abstractmethod
    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        """The text appended after the stop marker for one execution, its result in `feedback`'s style."""

    def append_output(self, text: str, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        """`text` (stopped at the marker, with or without it) followed by the wrapped result."""
        if self.stop_marker is None:
            raise ValueError(f"protocol {self.name!r} does not execute calls")
        if not text.endswith(self.stop_marker):
            text += self.stop_marker
        return text + self.wrap_output(result, feedback=feedback)

    def drop_marker(self, text: str) -> str:
        """`text` (stopped at the marker, with or without it) as ToRL continues it after a stop
        without a complete call: the marker dropped, a newline added when the text does not end
        with one, nothing else (GAIR-NLP/ToRL verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:333-347
        @cb78cf1: vLLM leaves the stop string out of the text)."""
        text = self._strip_marker(text)
        return text if text.endswith("\n") else text + "\n"

    def tool_spans(self, response: str, *, tool_outputs: int | None = None) -> list[tuple[int, int]]:
        """(start, end) of each inserted tool output, in order. `tool_outputs` caps how many
        blocks are real: after the budget a model may write an output block itself, and that
        text is the model's (a Completion knows its executions; text alone does not)."""
        if self.tool_output_re is None:
            return []
        spans = [m.span("tool") for m in self.tool_output_re.finditer(response)]
        return spans if tool_outputs is None else spans[: max(tool_outputs, 0)]

    def segments(self, response: str, *, tool_outputs: int | None = None) -> list[Segment]:
        """The response as alternating model / tool runs (empty runs left out)."""
        result: list[Segment] = []
        pos = 0
        for start, end in self.tool_spans(response, tool_outputs=tool_outputs):
            if start > pos:
                result.append(Segment("model", response[pos:start]))
            result.append(Segment("tool", response[start:end]))
            pos = end
        if pos < len(response):
            result.append(Segment("model", response[pos:]))
        return result

    def call_parts(self, text: str) -> list[TextPart]:
        """Model text as prose and call parts (empty ones left out); joined, they give back `text`."""
        parts: list[TextPart] = []
        pos = 0
        for match in self.call_re.finditer(text):
            start, end = match.span("call")
            if start == end:
                continue
            if start > pos:
                parts.append(TextPart("prose", text[pos:start]))
            parts.append(TextPart("call", text[start:end]))
            pos = end
        if pos < len(text):
            parts.append(TextPart("prose", text[pos:]))
        return parts

    def output_body(self, tool_text: str) -> str:
        """A tool output as inserted (one `tool` segment), without the protocol's wrapper: what the
        tool printed, as the rollouts page shows it in the output's box."""
        match = _TAGGED_OUTPUT.match(tool_text)
        return match.group("body") if match else tool_text.strip("\n")

    def model_text(self, response: str, *, tool_outputs: int | None = None) -> str:
        """The response without its tool outputs: what the model wrote."""
        return "".join(s.text for s in self.segments(response, tool_outputs=tool_outputs) if s.kind == "model")

    def tool_texts(self, response: str, *, tool_outputs: int | None = None) -> list[str]:
        """Each inserted tool output, as the model saw it."""
        return [response[a:b] for a, b in self.tool_spans(response, tool_outputs=tool_outputs)]

    def count_tool_calls(self, response: str) -> int:
        """Calls the response made: for executing protocols, the outputs inserted."""
        return len(self.tool_spans(response))

    def final_answer(self, response: str, *, tool_outputs: int | None = None) -> str | None:
        """The model's final answer: the last \\boxed{} of the model's own text, never of tool output."""
        return last_boxed(self.model_text(response, tool_outputs=tool_outputs))

    def _after_last_output(self, text: str) -> str:
        """The text generated since the last tool output: where the next call must be."""
        spans = self.tool_spans(text)
        return text[spans[-1][1] :] if spans else text

    def _strip_marker(self, text: str) -> str:
        if self.stop_marker and text.endswith(self.stop_marker):
            return text[: -len(self.stop_marker)]
        return text


P = TypeVar("P", bound=type[Protocol])
PROTOCOLS: Registry[Protocol] = Registry("protocol", "trainer.protocols")


def register_protocol(cls: P) -> P:
    """Register the protocol class `cls` under its `name` (a class decorator, in the protocol's own module)."""
    PROTOCOLS.register(cls.name, cls())
    return cls


def get_protocol(name: str) -> Protocol:
    """The protocol called `name`; UnknownName (a ValueError listing the names) otherwise."""
    return PROTOCOLS.get(name)


def default_environment(protocol: str) -> str:
    """The environment a protocol's calls run in when `tools.environment` is not given."""
    return get_protocol(protocol).environments[0]


def headline_metrics(protocol: str | None) -> tuple[str, ...]:
    """The metrics a run page draws first: its protocol's, or the code tools' for a run without a known one."""
    return get_protocol(protocol).headline_metrics if protocol in PROTOCOLS else HEADLINE_METRICS
