"""What researchers of ToolRL and Tool-N1 read off a function-calling run: each completion's JSON calls
against the example's ground-truth calls, whichever reward the run trains with.

Per completion (`call_scores`), averaged over a step's completions (`call_metrics`):

- ``calls/exact_match``: the calls equal the ground truth's as a multiset of (name, arguments) --
  Tool-N1's test (`trainer.rewards.tool_n1.calls_match`: order and key order do not matter); a
  ground truth of no call is matched by a well-formed reply that makes none.
- ``calls/name_accuracy``: tool names in common (as multisets) over the larger of the two call
  counts; 1 when both make no call.
- ``calls/param_accuracy``: each ground-truth call, in order, is paired with the unpaired predicted
  call of its name that has the most of its arguments (`pair_calls`: two calls of one tool made in
  the other order still pair up right); (key, value) pairs in common, over the larger argument count
  of each pair plus the arguments of every unpaired call on either side (an argument-less call
  counts 1); 1 when there are no arguments and no calls on either side.
- ``calls/format_error_ratio``: completions with neither a well-formed ``<tool_call>`` block nor a
  ``<response>`` reply (a block whose JSON does not parse in either paper's layout is malformed).

The calls are read as `trainer.protocols.tool_call_json` reads them: Tool-N1's layout (the last block,
one JSON list) first, then ToolRL's (the first block, one call per line); ``parameters`` and
``arguments`` both name a call's arguments. ``tool_calls/mean`` (trainer.metrics.step) is the calls per
response.

Multi-turn function calling (protocol ``artist_fc``, ARTIST) reads every ``<tool>`` block of the
model's own text, in order (`trainer.protocols.artist_fc.ArtistFc.calls`); a block that does not parse
is a format error, and a reply with no block makes no call. Its ground truth is ``{"calls": [...],
"state": {...}}`` and the calls are read from it. It adds:

- ``calls/sequence_match``: the names of the calls made, in the order made, are the ground truth's
  -- the model looked the flight up before booking it, whatever it copied.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from trainer.contract import CALL_METRICS, SEQUENCE_MATCH
from trainer.protocols.base import get_protocol
from trainer.protocols.calls import call_scores, ground_truth_calls


def call_metrics(
    texts_by_prompt: Iterable[tuple[Any, Sequence[str]]], *, prefix: str = "", protocol: str = "tool_call_json"
) -> dict[str, float]:
    """The call metrics averaged over every completion of the prompts whose ground truth is calls:
    `texts_by_prompt` gives each prompt's ground truth with its completions' model texts (tool outputs
    left out). Empty when none is."""
    rows = [
        call_scores(text, truth, protocol)
        for ground_truth, texts in texts_by_prompt
        if (truth := ground_truth_calls(ground_truth)) is not None
        for text in texts
    ]
    if not rows:
        return {}
    names = (*CALL_METRICS, SEQUENCE_MATCH) if get_protocol(protocol).multi_turn_calls else CALL_METRICS
    return {prefix + name: sum(row[name] for row in rows) / len(rows) for name in names}
