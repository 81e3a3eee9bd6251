"""Tool protocols: how a tool call starts and ends in model text, how its result is inserted,
and which parts of a finished response are the model's."""

from trainer.protocols.artist import Artist
from trainer.protocols.artist_fc import ArtistFc
from trainer.protocols.base import Protocol, Segment, TextPart, output_failed
from trainer.protocols.feedback import (
    DEFAULT_MAX_OUTPUT_CHARS,
    EMPTY_OUTPUT,
    FEEDBACK_STYLES,
    TIRLAB_FEEDBACK,
    Feedback,
    FeedbackStyle,
    truncate_output,
)
from trainer.protocols.python_markdown import PythonMarkdown
from trainer.protocols.retool import ReTool
from trainer.protocols.tool_call_json import ToolCallJson

_PROTOCOLS: dict[str, Protocol] = {
    p.name: p for p in (PythonMarkdown(), ReTool(), Artist(), ToolCallJson(), ArtistFc())
}

PROTOCOL_NAMES: tuple[str, ...] = tuple(_PROTOCOLS)


def get_protocol(name: str) -> Protocol:
    """The protocol called `name` (one of PROTOCOL_NAMES)."""
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; choose one of: {', '.join(PROTOCOL_NAMES)}") from None


__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "EMPTY_OUTPUT",
    "FEEDBACK_STYLES",
    "PROTOCOL_NAMES",
    "TIRLAB_FEEDBACK",
    "Feedback",
    "FeedbackStyle",
    "Protocol",
    "Segment",
    "TextPart",
    "get_protocol",
    "output_failed",
    "truncate_output",
]
