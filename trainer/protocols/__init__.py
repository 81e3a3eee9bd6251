"""Tool protocols: how a tool call starts and ends in model text, how its result is inserted,
and which parts of a finished response are the model's. One module per format, each registering
its protocol (`@register_protocol`, trainer.registry); prompts (the papers' templates), calls
(reading JSON calls) and call_diff (one completion's calls against the ground truth's) beside them."""

from trainer.protocols.base import (
    PROTOCOLS,
    Protocol,
    Segment,
    TextPart,
    default_environment,
    get_protocol,
    headline_metrics,
    output_failed,
)
from trainer.protocols.feedback import (
    DEFAULT_MAX_OUTPUT_CHARS,
    EMPTY_OUTPUT,
    FEEDBACK_STYLES,
    TIRLAB_FEEDBACK,
    Feedback,
    FeedbackStyle,
    truncate_output,
)

PROTOCOL_NAMES: tuple[str, ...] = PROTOCOLS.names()


__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "EMPTY_OUTPUT",
    "FEEDBACK_STYLES",
    "PROTOCOLS",
    "PROTOCOL_NAMES",
    "TIRLAB_FEEDBACK",
    "Feedback",
    "FeedbackStyle",
    "Protocol",
    "Segment",
    "TextPart",
    "default_environment",
    "get_protocol",
    "headline_metrics",
    "output_failed",
    "truncate_output",
]
