"""Multi-turn function-calling tasks, where a call needs what an earlier call returned: ARTIST's
function-calling setting at a size a CPU run can learn (its SFT traces: trainer.sft.traces.tool_chains).

Every task ends in a flight booking, the state the task is judged on (ARTIST's state reward):

- ``one``: "Book 2 seats on flight TL 345." -- one call, `book_flight`;
- ``chain``: "Book 2 seats on the next flight from Oslo to Lima on 2026-03-14." -- `find_flight`
  first, then `book_flight` with the flight number its result gives: the second call's argument comes
  from the first call's output, so a model that books without looking the flight up invents one;
- ``mixed``: each task one or the other with equal odds.

Each offers three tools: the two it may need and a distractor from the catalogue. The ground truth
is ``{"calls": [...], "state": {"flight_bookings": [{"flight", "passengers"}]}}`` (trainer.rewards.artist_fc);
the flight numbers come from the tools' own implementation (trainer/envs/tools/catalogue.py), so they are what
the sandbox will return. `find_flight` answers with one flight (the first `search_flights` lists) so
that the tiny model's copy of its number is short: with `search_flights`' three flights, 200 SFT steps
left a policy that copied the number wrong at temperature 1 (2% of tasks right).
"""

from __future__ import annotations

import random
from typing import Literal

from trainer.data.arithmetic import example_count
from trainer.data.function_calling import CITIES, DATES, TOOLS, Param, Tool
from trainer.envs.tools import catalogue
from trainer.trajectory import Example

ChainLevel = Literal["one", "chain", "mixed"]
CHAIN_LEVELS: tuple[str, ...] = ("one", "chain", "mixed")
DATA_SOURCE = "tool-chains"

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


def next_flight(origin: str, destination: str, date: str) -> str:
    """The flight `find_flight` gives for the route and date (the implementation's answer)."""
    return catalogue.find_flight(origin, destination, date)["flight"]


def seats(n: int) -> str:
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
            request = f"Book {seats(passengers)} on flight {flight}."
        else:
            lookup = {
                "name": "find_flight",
                "arguments": {"origin": origin, "destination": destination, "date": date},
            }
            calls = [lookup, book]
            request = f"Book {seats(passengers)} on the next flight from {origin} to {destination} on {date}."
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
