"""A seeded synthetic function-calling dataset: tools with typed parameters, requests that need zero,
one or several calls, distractor tools, and the ground-truth calls -- what ToolRL's and Tool-N1's
rewards score, at a size a CPU run can learn.

Each example offers a few tools from `CATALOGUE` (JSON-schema functions, as ToolRL's and Tool-N1's
data carry them) and asks for something in one sentence; its ground truth is the list of calls
`[{"name": ..., "arguments": {...}}]` that serves it, in order (trainer.data.datasets's function-calling
shape). Parameters are strings, integers, numbers, enums and booleans; optional ones appear in a
call only when the request asks for them.

Levels, like trainer.data.arithmetic's:
- ``easy``: one call with its required arguments, among 2 tools (the one needed and a distractor);
- ``hard``: zero calls (a request no offered tool serves: the answer is a reply, no call), one call
  with optional arguments, or two calls in one request ("... and then ..."), among 4 tools;
- ``mixed``: each example easy or hard with equal odds.

The same seed, split, level and size always give the same examples.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from trainer.data.arithmetic import example_count
from trainer.trajectory import Example

Level = Literal["easy", "hard", "mixed"]
LEVELS: tuple[str, ...] = ("easy", "hard", "mixed")
DATA_SOURCE = "function-calling"

CITIES = ("Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Denver", "Madrid", "Seoul", "Nairobi", "Perth")
PEOPLE = ("Ana", "Ben", "Chen", "Dara", "Eli", "Femi", "Greta", "Hugo", "Iris", "Jon")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF")
LANGUAGES = ("French", "German", "Spanish", "Italian", "Japanese")
PHRASES = ("good morning", "thank you", "where is the station", "see you soon", "how much is it")
DATES = ("2026-03-14", "2026-05-02", "2026-07-21", "2026-09-09", "2026-12-01")
DISHES = ("pasta", "ramen", "tacos", "curry", "paella")


@dataclass(frozen=True)
class Param:
    """One parameter: its JSON type, description, the values a request draws from (an enum lists
    them in the schema), and whether a call needs it."""

    name: str
    type: Literal["string", "integer", "number", "boolean"]
    description: str
    values: tuple[Any, ...]
    enum: bool = False
    required: bool = True

    def schema(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.enum:
            spec["enum"] = list(self.values)
        return spec


@dataclass(frozen=True)
class Tool:
    """A function a request can need: its schema and how a request asks for it. `ask` writes the
    request's words for the given arguments (the optional ones it was given included)."""

    name: str
    description: str
    params: tuple[Param, ...]
    ask: Callable[[dict[str, Any]], str]

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {
                "type": "object",
                "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required],
            },
        }


def _weather(a: dict[str, Any]) -> str:
    days = f" for the next {a['days']} days" if "days" in a else ""
    unit = f" in {a['unit']}" if "unit" in a else ""
    return f"what is the weather in {a['city']}{days}{unit}"


def _convert(a: dict[str, Any]) -> str:
    return f"convert {a['amount']} {a['from_currency']} to {a['to_currency']}"


def _table(a: dict[str, Any]) -> str:
    outside = " outdoors" if a.get("outdoor") else ""
    return f"book a table for {a['people']} at {a['restaurant']} at {a['time']}{outside}"


def _email(a: dict[str, Any]) -> str:
    urgent = " and mark it urgent" if a.get("urgent") else ""
    return f"email {a['to']} with the subject {a['subject']!r}{urgent}"


def _timer(a: dict[str, Any]) -> str:
    label = f" labelled {a['label']!r}" if "label" in a else ""
    return f"set a timer for {a['minutes']} minutes{label}"


def _flights(a: dict[str, Any]) -> str:
    direct = " with direct flights only" if a.get("direct_only") else ""
    return f"find flights from {a['origin']} to {a['destination']} on {a['date']}{direct}"


def _translate(a: dict[str, Any]) -> str:
    return f"translate {a['text']!r} into {a['target_language']}"


def _event(a: dict[str, Any]) -> str:
    hours = f" lasting {a['duration_hours']} hours" if "duration_hours" in a else ""
    return f"add {a['title']!r} to my calendar on {a['date']}{hours}"


CATALOGUE: tuple[Tool, ...] = (
    Tool(
        "get_weather",
        "Get the weather forecast for a city.",
        (
            Param("city", "string", "The city name.", CITIES),
            Param("unit", "string", "Temperature unit.", ("celsius", "fahrenheit"), enum=True, required=False),
            Param("days", "integer", "How many days to forecast.", (2, 3, 5, 7), required=False),
        ),
        _weather,
    ),
    Tool(
        "convert_currency",
        "Convert an amount of money from one currency to another.",
        (
            Param("amount", "number", "The amount to convert.", (12.5, 40, 99.9, 250, 1000)),
            Param("from_currency", "string", "The currency to convert from.", CURRENCIES, enum=True),
            Param("to_currency", "string", "The currency to convert to.", CURRENCIES, enum=True),
        ),
        _convert,
    ),
    Tool(
        "book_table",
        "Reserve a table at a restaurant.",
        (
            Param("restaurant", "string", "The restaurant's name.", ("Luna", "Sakura", "El Sol", "Bistro 9")),
            Param("people", "integer", "How many people.", (2, 3, 4, 6)),
            Param("time", "string", "The time, HH:MM.", ("18:30", "19:00", "20:15", "21:00")),
            Param("outdoor", "boolean", "Whether to sit outside.", (True,), required=False),
        ),
        _table,
    ),
    Tool(
        "send_email",
        "Send an email to a contact.",
        (
            Param("to", "string", "The contact's name.", PEOPLE),
            Param("subject", "string", "The subject line.", ("Lunch", "Report", "Tickets", "Meeting notes")),
            Param("urgent", "boolean", "Mark the email as urgent.", (True,), required=False),
        ),
        _email,
    ),
    Tool(
        "set_timer",
        "Start a countdown timer.",
        (
            Param("minutes", "integer", "How many minutes.", (5, 10, 15, 25, 45)),
            Param("label", "string", "A name for the timer.", DISHES, required=False),
        ),
        _timer,
    ),
    Tool(
        "search_flights",
        "Search for flights between two cities on a date.",
        (
            Param("origin", "string", "The departure city.", CITIES),
            Param("destination", "string", "The arrival city.", CITIES),
            Param("date", "string", "The date, YYYY-MM-DD.", DATES),
            Param("direct_only", "boolean", "Only direct flights.", (True,), required=False),
        ),
        _flights,
    ),
    Tool(
        "translate_text",
        "Translate a phrase into another language.",
        (
            Param("text", "string", "The phrase to translate.", PHRASES),
            Param("target_language", "string", "The language to translate into.", LANGUAGES, enum=True),
        ),
        _translate,
    ),
    Tool(
        "add_event",
        "Add an event to the user's calendar.",
        (
            Param("title", "string", "The event's title.", ("Dentist", "Yoga", "Team sync", "Birthday")),
            Param("date", "string", "The date, YYYY-MM-DD.", DATES),
            Param("duration_hours", "number", "How long it lasts, in hours.", (0.5, 1, 1.5, 2), required=False),
        ),
        _event,
    ),
)
TOOLS: dict[str, Tool] = {tool.name: tool for tool in CATALOGUE}

# Requests no catalogue tool serves: the right answer is a reply and no call.
UNSERVED = (
    "tell me a joke about {thing}",
    "what is your favourite {thing}",
    "write a short poem about {thing}",
    "explain why people like {thing}",
)
THINGS = ("cats", "rain", "trains", "coffee", "mountains", "jazz")


def _arguments(tool: Tool, rng: random.Random, *, optional: bool) -> dict[str, Any]:
    """Values for every required parameter, and (when `optional`) for each optional one with odds
    1/2; two parameters drawn from the same values (origin, destination) differ."""
    arguments: dict[str, Any] = {}
    for param in tool.params:
        if not param.required and not (optional and rng.random() < 0.5):
            continue
        choices = [v for v in param.values if v not in arguments.values() or param.type == "boolean"]
        arguments[param.name] = rng.choice(choices)
    return arguments


def _sentence(parts: list[str]) -> str:
    text = " and then ".join(parts)
    return text[0].upper() + text[1:] + "."


def function_calling_examples(
    size: int | None = None,
    *,
    seed: int = 0,
    level: Level = "mixed",
    split: str = "train",
) -> list[Example]:
    """``size`` examples (default 1000 for train, 200 otherwise) of the given level (see the module)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    count = example_count(size, split)
    rng = random.Random(f"function-calling:{seed}:{split}:{level}")
    examples = []
    for index in range(count):
        kind = level if level != "mixed" else rng.choice(("easy", "hard"))
        needed, calls, request = _request(kind, rng)
        offered = 2 if kind == "easy" else 4
        others = [tool for tool in CATALOGUE if tool.name not in {t.name for t in needed}]
        tools = [*needed, *rng.sample(others, offered - len(needed))]
        rng.shuffle(tools)
        examples.append(
            Example(
                id=f"{DATA_SOURCE}-{split}-{level}-{seed}-{index}",
                prompt=[{"role": "user", "content": request}],
                ground_truth=calls,
                data_source=DATA_SOURCE,
                tools=[tool.schema() for tool in tools],
                extra_info={"difficulty": kind, "calls": len(calls)},
            )
        )
    return examples


def _request(kind: str, rng: random.Random) -> tuple[list[Tool], list[dict[str, Any]], str]:
    """The tools a request needs, its ground-truth calls and its text."""
    if kind == "easy":
        tool = rng.choice(CATALOGUE)
        arguments = _arguments(tool, rng, optional=False)
        return [tool], [{"name": tool.name, "arguments": arguments}], _sentence([tool.ask(arguments)])
    shape = rng.choice(("none", "one", "two"))
    if shape == "none":
        text = rng.choice(UNSERVED).format(thing=rng.choice(THINGS))
        return [], [], _sentence([text])
    tools = rng.sample(CATALOGUE, 1 if shape == "one" else 2)
    calls = [{"name": tool.name, "arguments": _arguments(tool, rng, optional=True)} for tool in tools]
    return tools, calls, _sentence([tool.ask(call["arguments"]) for tool, call in zip(tools, calls, strict=True)])
