"""SFT traces for the tool-chain tasks (trainer.data.tool_chains): the artist-fc-mini cold start.

`tool_chain_traces` answers them in ARTIST's syntax (trainer.protocols.artist_fc): an empty
`<reasoning>` block before each `<tool>` block of one JSON call, the environment's `<tool_result>`
after each (masked from the loss), then a short reply; with CHAIN_FLAWS, undecided on purpose where
ARTIST's reward decides, as the other minis' cold starts are: on some chains they book at once with a
flight number of their own, or stop after the lookup.
"""

from __future__ import annotations

import json
import random
from typing import Any

from trainer.data.tool_chains import ChainLevel, seats, tool_chain_examples
from trainer.envs.tools import catalogue
from trainer.protocols import get_protocol
from trainer.sft.traces.function_calling import value_spans
from trainer.trajectory import ToolExecution

REASONING = "<reasoning></reasoning>\n"
# What the minis' cold start gets wrong on purpose, each the share of the chain traces it applies to.
CHAIN_FLAWS: dict[str, float] = {"book_unsearched": 0.35, "search_only": 0.15}
# The 'artist-fc-mini-sft' traces, for 'tirlab/tiny-char-artist-fc' (trainer.models.tiny.function_calling).
ARTIST_FC_MINI: dict[str, Any] = {"size": 12_800, "seed": 0, "level": "mixed", "flaws": CHAIN_FLAWS}


def _result(call: dict[str, Any], tools: list[dict[str, Any]]) -> str:
    """What the environment feeds back for `call`: its result line, as the sandbox prints it."""
    line = catalogue.call({tool["name"]: tool for tool in tools}, call)
    return json.dumps(line, ensure_ascii=False)


def tool_chain_traces(
    size: int, *, seed: int, level: ChainLevel = "mixed", flaws: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """`size` seeded traces (trainer.data.sft_traces rows, tool results included and counted) on `level` tasks,
    in ARTIST's syntax, with `flaws` (CHAIN_FLAWS' keys, each the share of chain traces it applies to)."""
    protocol = get_protocol("artist_fc")
    flaws = dict(flaws or {})
    draw = random.Random(f"tool-chains-flaws-{seed}")
    rows = []
    for example in tool_chain_examples(size, seed=seed, level=level, split="sft"):
        calls = list(example.ground_truth["calls"])
        reply = f"Booked {seats(calls[-1]['arguments']['passengers'])} on {calls[-1]['arguments']['flight']}."
        if len(calls) == 2:
            roll = draw.random()
            if roll < flaws.get("book_unsearched", 0.0):
                # Booked at once, on a flight number of its own.
                made_up = f"TL {draw.randrange(100, 1000)}"
                calls = [{"name": "book_flight", "arguments": {**calls[1]["arguments"], "flight": made_up}}]
                reply = f"Booked {seats(calls[0]['arguments']['passengers'])} on {made_up}."
            elif roll < flaws.get("book_unsearched", 0.0) + flaws.get("search_only", 0.0):
                calls = calls[:1]
                reply = "That is the next flight."
        response, spans = "", []
        for call in calls:
            # A <reasoning> block before each call, as ARTIST prompts ("reason ... before issuing function calls").
            response += REASONING
            line = json.dumps(call)
            spans += value_spans(line, len(response) + len("<tool>\n"), call)
            response += "<tool>\n" + line + "\n</tool>"
            output = _result(call, example.tools)
            response = protocol.append_output(response, ToolExecution(call="", status="ok", output=output))
        rows.append(
            {
                "prompt": example.prompt,
                "tools": example.tools,
                "response": response + reply,
                "tool_outputs": len(calls),
                # The names and values weigh 4 times the rest, as in the single-step traces
                # (trainer.sft.traces.function_calling).
                "weighted_spans": [[a, b, 4.0] for a, b in spans],
                "extra_info": dict(example.extra_info or {}),
            }
        )
    return rows
