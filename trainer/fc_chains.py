"""Multi-turn function-calling tasks, where a call needs what an earlier call returned: ARTIST's
function-calling setting at a size a CPU run can learn, with its SFT traces.

Every task ends in a flight booking, the state the task is judged on (ARTIST's state reward):

- ``one``: "Book 2 seats on flight TL 345." -- one call, `book_flight`;
- ``chain``: "Book 2 seats on the next flight from Oslo to Lima on 2026-03-14." -- `find_flight`
  first, then `book_flight` with the flight number its result gives: the second call's argument comes
  from the first call's output, so a model that books without looking the flight up invents one;
- ``mixed``: each task one or the other with equal odds.

Each offers three tools: the two it may need and a distractor from the catalogue. The ground truth
is ``{"calls": [...], "state": {"flight_bookings": [{"flight", "passengers"}]}}`` (trainer.rewards.artist_fc);
the flight numbers come from the tools' own implementation (trainer/fc_tool_impls.py), so they are what
the sandbox will return. `find_flight` answers with one flight (the first `search_flights` lists) so
that the tiny model's copy of its number is short: with `search_flights`' three flights, 200 SFT steps
left a policy that copied the number wrong at temperature 1 (2% of tasks right).

`tool_chain_traces` answers them in ARTIST's syntax (trainer.protocols.artist_fc) for an SFT cold start:
an empty `<reasoning>` block before each `<tool>` block of one JSON call, the environment's `<tool_result>`
after each (masked from the loss), then a short reply; with CHAIN_FLAWS, undecided on purpose where
ARTIST's reward decides, as the other minis' cold starts are: on some chains they book at once with a
flight number of their own, or stop after the lookup.
"""

from __future__ import annotations

import json
import random
from typing import Any, Literal

from trainer import fc_tool_impls
from trainer.fc_synthetic import CITIES, DATES, TOOLS, Param, Tool
from trainer.fc_traces import value_spans
from trainer.synthetic import example_count
from trainer.trajectory import Example

ChainLevel = Literal["one", "chain", "mixed"]
CHAIN_LEVELS: tuple[str, ...] = ("one", "chain", "mixed")
DATA_SOURCE = "tool-chains"
REASONING = "<reasoning></reasoning>\n"

BOOK_FLIGHT = Tool(
    "book_flight",
    "Book seats on a flight, by its flight number.",
    (
        Param("flight", "string", "The flight number, e.g. 'TL 123'.", ()),
        Param("passengers", "integer", "How many seats.", (1, 2, 3, 4)),
    ),
    lambda a: f"book {a['passengers']} seat{'s' if a['passengers'] > 1 else ''} on flight {a['flight']}",
)
FIND_FLIGHT = Tool(
    "find_flight",
    "Find the next flight between two cities on a date.",
    (
        Param("origin", "string", "The departure city.", CITIES),
        Param("destination", "string", "The arrival city.", CITIES),
        Param("date", "string", "The date, YYYY-MM-DD.", DATES),
    ),
    lambda a: f"find the next flight from {a['origin']} to {a['destination']} on {a['date']}",
)
DISTRACTORS = ("get_weather", "convert_currency", "set_timer", "translate_text")
# What the minis' cold start gets wrong on purpose, each the share of the chain traces it applies to.
CHAIN_FLAWS: dict[str, float] = {"book_unsearched": 0.35, "search_only": 0.15}
# The 'artist-fc-mini-sft' traces, for 'tirlab/tiny-char-artist-fc' (trainer.models.tiny_fc).
ARTIST_FC_MINI: dict[str, Any] = {"size": 12_800, "seed": 0, "level": "mixed", "flaws": CHAIN_FLAWS}


def next_flight(origin: str, destination: str, date: str) -> str:
    """The flight `find_flight` gives for the route and date (the implementation's answer)."""
    return fc_tool_impls.find_flight(origin, destination, date)["flight"]


def _seats(n: int) -> str:
    return f"{n} seat{'s' if n > 1 else ''}"


def tool_chain_examples(
    size: int | None = None, *, seed: int = 0, level: ChainLevel = "mixed", split: str = "train"
) -> list[Example]:
    """``size`` tasks (default 1000 for train, 200 otherwise) of the given level (see the module)."""
    if level not in CHAIN_LEVELS:
        raise ValueError(f"level must be one of {', '.join(CHAIN_LEVELS)}, got {level!r}")
    rng = random.Random(f"tool-chains:{seed}:{split}:{level}")
    examples = []
    for index in range(example_count(size, split)):
        kind = level if level != "mixed" else rng.choice(("one", "chain"))
        origin, destination = rng.sample(CITIES, 2)
        date, passengers = rng.choice(DATES), rng.choice((1, 2, 3, 4))
        flight = next_flight(origin, destination, date)
        book = {"name": "book_flight", "arguments": {"flight": flight, "passengers": passengers}}
        if kind == "one":
            calls = [book]
            request = f"Book {_seats(passengers)} on flight {flight}."
        else:
            lookup = {
                "name": "find_flight",
                "arguments": {"origin": origin, "destination": destination, "date": date},
            }
            calls = [lookup, book]
            request = f"Book {_seats(passengers)} on the next flight from {origin} to {destination} on {date}."
        tools = [FIND_FLIGHT, BOOK_FLIGHT, TOOLS[rng.choice(DISTRACTORS)]]
        rng.shuffle(tools)
        examples.append(
            Example(
                id=f"{DATA_SOURCE}-{split}-{level}-{seed}-{index}",
                prompt=[{"role": "user", "content": request}],
                ground_truth={"calls": calls, "state": {"flight_bookings": [dict(book["arguments"])]}},
                data_source=DATA_SOURCE,
                tools=[tool.schema() for tool in tools],
                extra_info={"difficulty": kind, "calls": len(calls)},
            )
        )
    return examples


def _result(call: dict[str, Any], tools: list[dict[str, Any]]) -> str:
    """What the environment feeds back for `call`: its result line, as the sandbox prints it."""
    line = fc_tool_impls.call({tool["name"]: tool for tool in tools}, call)
    return json.dumps(line, ensure_ascii=False)


def tool_chain_traces(
    size: int, *, seed: int, level: ChainLevel = "mixed", flaws: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """`size` seeded traces (trainer.sft_data rows, tool results included and counted) on `level` tasks,
    in ARTIST's syntax, with `flaws` (CHAIN_FLAWS' keys, each the share of chain traces it applies to)."""
    from trainer.protocols import get_protocol
    from trainer.trajectory import ToolExecution

    protocol = get_protocol("artist_fc")
    flaws = dict(flaws or {})
    draw = random.Random(f"tool-chains-flaws-{seed}")
    rows = []
    for example in tool_chain_examples(size, seed=seed, level=level, split="sft"):
        calls = list(example.ground_truth["calls"])
        reply = f"Booked {_seats(calls[-1]['arguments']['passengers'])} on {calls[-1]['arguments']['flight']}."
        if len(calls) == 2:
            roll = draw.random()
            if roll < flaws.get("book_unsearched", 0.0):
                # Booked at once, on a flight number of its own.
                made_up = f"TL {draw.randrange(100, 1000)}"
                calls = [{"name": "book_flight", "arguments": {**calls[1]["arguments"], "flight": made_up}}]
                reply = f"Booked {_seats(calls[0]['arguments']['passengers'])} on {made_up}."
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
                # The names and values weigh 4 times the rest, as in the single-step traces (trainer.fc_traces).
                "weighted_spans": [[a, b, 4.0] for a, b in spans],
                "extra_info": dict(example.extra_info or {}),
            }
        )
    return rows
