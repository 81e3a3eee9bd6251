"""What the function-calling catalogue's tools (trainer.data.function_calling.CATALOGUE) do when called.

This file is the program the sandbox runs for a call (trainer.envs.tools.run.call_program sends its source
with the call appended), not a module the trainer calls into: a call's arguments are model-written,
so they are checked and acted on inside the sandbox, under its isolation and limits, like model code.
It uses the standard library only.

Each tool is deterministic -- the same arguments always give the same result -- and answers what a
real service would: a forecast, a rate, a confirmation number, flights with their numbers. A call is
first checked against the tool's schema as offered in the prompt (unknown tool, missing required
parameter, unknown parameter, wrong type, value outside an enum); a failed check is an error result,
as an API answers a bad request.

`run_calls(schemas, calls, state)` prints one JSON line per call: ``{"name": ..., "result": ...}`` or
``{"name": ..., "error": ...}``, then the state after the calls on a last line that starts with
STATE_LINE, and exits 1 when any call failed.

The state is what the calls changed, for multi-turn tasks whose outcome is judged on it (ARTIST's
state reward): each tool with a side effect appends what it did to one state variable (STATE_OF:
booked tables and flights, sent emails, timers, calendar events); queries change nothing. A refused call changes
nothing. The state comes in from the previous call of the trajectory (trainer.envs.function_calling
keeps it) and goes out on the last line; the caller strips that line from what the model reads.
"""

import hashlib
import json
import sys

STATE_LINE = "#state "
SKIES = ("sunny", "cloudy", "rain", "windy", "snow")
# Units of a currency per US dollar: fixed, so that a conversion has one right answer.
PER_USD = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "CHF": 0.88}
TRANSLATIONS = {
    "good morning": {
        "French": "bonjour",
        "German": "guten Morgen",
        "Spanish": "buenos días",
        "Italian": "buongiorno",
        "Japanese": "おはようございます",
    },
    "thank you": {
        "French": "merci",
        "German": "danke",
        "Spanish": "gracias",
        "Italian": "grazie",
        "Japanese": "ありがとう",
    },
    "where is the station": {
        "French": "où est la gare",
        "German": "wo ist der Bahnhof",
        "Spanish": "dónde está la estación",
        "Italian": "dov'è la stazione",
        "Japanese": "駅はどこですか",
    },
    "see you soon": {
        "French": "à bientôt",
        "German": "bis bald",
        "Spanish": "hasta pronto",
        "Italian": "a presto",
        "Japanese": "またね",
    },
    "how much is it": {
        "French": "combien ça coûte",
        "German": "wie viel kostet das",
        "Spanish": "cuánto cuesta",
        "Italian": "quanto costa",
        "Japanese": "いくらですか",
    },
}
AIRLINES = ("TL", "RX", "GP")
_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


class CallError(Exception):
    """A call the tool refuses, with the message its caller reads."""


def _digits(*parts):
    """A stable number from the arguments (the same call, the same result)."""
    return int(hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:8], 16)


def get_weather(city, unit="celsius", days=1):
    if days < 1 or days > 7:
        raise CallError("days must be between 1 and 7")
    forecast = []
    for day in range(1, days + 1):
        n = _digits(city, day)
        high_c = 4 + n % 26
        high = high_c if unit == "celsius" else round(high_c * 9 / 5 + 32)
        forecast.append({"day": day, "high": high, "sky": SKIES[n // 7 % len(SKIES)]})
    return {"city": city, "unit": unit, "forecast": forecast}


def convert_currency(amount, from_currency, to_currency):
    if amount < 0:
        raise CallError("amount must not be negative")
    converted = amount / PER_USD[from_currency] * PER_USD[to_currency]
    return {"amount": round(converted, 2), "currency": to_currency}


def book_table(restaurant, people, time, outdoor=False):
    if people < 1 or people > 12:
        raise CallError("people must be between 1 and 12")
    hour, _, minute = time.partition(":")
    if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
        raise CallError("time must be HH:MM")
    code = f"{restaurant[:3].upper()}-{hour}{minute}-{people}"
    return {"confirmation": code, "restaurant": restaurant, "time": time, "outdoor": outdoor}


def send_email(to, subject, urgent=False):
    return {"sent": True, "to": to, "subject": subject, "message_id": f"m{_digits(to, subject) % 100000:05d}"}


def set_timer(minutes, label=""):
    if minutes < 1:
        raise CallError("minutes must be at least 1")
    return {"timer_id": f"t{_digits(minutes, label) % 1000:03d}", "minutes": minutes, "label": label}


def search_flights(origin, destination, date, direct_only=False):
    if origin == destination:
        raise CallError("origin and destination must differ")
    flights = []
    for index, airline in enumerate(AIRLINES):
        n = _digits(origin, destination, date, airline)
        stops = 0 if index == 0 or direct_only else n % 2
        flights.append(
            {"flight": f"{airline} {100 + n % 900}", "departs": f"{6 + n % 14:02d}:{n % 4 * 15:02d}", "stops": stops}
        )
    return {"flights": [f for f in flights if not direct_only or f["stops"] == 0]}


def find_flight(origin, destination, date):
    # The first flight search_flights lists, alone: the short answer the tool-chain tasks read.
    first = search_flights(origin, destination, date)["flights"][0]
    return {"flight": first["flight"], "departs": first["departs"]}


def translate_text(text, target_language):
    translated = TRANSLATIONS.get(text.lower().strip(), {}).get(target_language)
    if translated is None:
        raise CallError(f"no translation of {text!r} into {target_language}")
    return {"translation": translated, "language": target_language}


def add_event(title, date, duration_hours=1):
    if duration_hours <= 0:
        raise CallError("duration_hours must be positive")
    return {"event_id": f"e{_digits(title, date) % 10000:04d}", "title": title, "date": date, "hours": duration_hours}


def book_flight(flight, passengers):
    airline, _, number = flight.partition(" ")
    if airline not in AIRLINES or not (number.isdigit() and len(number) == 3):
        raise CallError(f"no flight {flight!r}: a flight is an airline and a number, e.g. 'TL 123'")
    if passengers < 1 or passengers > 9:
        raise CallError("passengers must be between 1 and 9")
    return {"booking": f"B{_digits(flight, passengers) % 100000:05d}", "flight": flight, "passengers": passengers}


IMPLEMENTATIONS = {
    "get_weather": get_weather,
    "convert_currency": convert_currency,
    "book_table": book_table,
    "send_email": send_email,
    "set_timer": set_timer,
    "search_flights": search_flights,
    "find_flight": find_flight,
    "translate_text": translate_text,
    "add_event": add_event,
    "book_flight": book_flight,
}


def check(schema, arguments):
    """Refuse arguments the offered schema does not allow."""
    spec = schema.get("parameters", {})
    properties = spec.get("properties", {})
    for name in spec.get("required", []):
        if name not in arguments:
            raise CallError(f"missing required parameter '{name}'")
    for name, value in arguments.items():
        if name not in properties:
            raise CallError(f"unknown parameter '{name}'")
        kind = properties[name].get("type")
        expected = _TYPES.get(kind)
        # JSON's true is not a number, and 2.0 is not an integer.
        if expected is not None and (
            not isinstance(value, expected) or (isinstance(value, bool) and kind != "boolean")
        ):
            raise CallError(
                f"parameter '{name}' must be {'an' if kind == 'integer' else 'a'} {kind}, got {json.dumps(value)}"
            )
        if "enum" in properties[name] and value not in properties[name]["enum"]:
            allowed = ", ".join(json.dumps(v) for v in properties[name]["enum"])
            raise CallError(f"parameter '{name}' must be one of {allowed}, got {json.dumps(value)}")


def call(schemas, one):
    """One call's result line: the tool's result, or the error that refused it."""
    if not isinstance(one, dict) or not isinstance(one.get("name"), str):
        return {"error": "a call is an object with a string 'name'"}
    name = one["name"]
    arguments = one.get("arguments", one.get("parameters", {}))
    try:
        if name not in schemas or name not in IMPLEMENTATIONS:
            raise CallError(f"unknown tool '{name}'")
        if not isinstance(arguments, dict):
            raise CallError("arguments must be an object")
        check(schemas[name], arguments)
        return {"name": name, "result": IMPLEMENTATIONS[name](**arguments)}
    except CallError as exc:
        return {"name": name, "error": str(exc)}


# The state variable each side effect goes to, and what of a successful call it records.
STATE_OF = {
    "book_table": ("table_bookings", ("restaurant", "time", "confirmation")),
    "send_email": ("emails_sent", ("to", "subject")),
    "set_timer": ("timers", ("minutes", "label")),
    "add_event": ("calendar_events", ("title", "date")),
    "book_flight": ("flight_bookings", ("flight", "passengers")),
}


def record(state, line):
    """Add a successful call's side effect to `state`."""
    if line.get("name") in STATE_OF and "result" in line:
        variable, keys = STATE_OF[line["name"]]
        done = {key: line["result"][key] for key in keys if key in line["result"]}
        state.setdefault(variable, []).append(done)


def run_calls(schemas, calls, state=None):
    state = dict(state or {})
    lines = [call({s["name"]: s for s in schemas}, one) for one in calls]
    for line in lines:
        record(state, line)
        print(json.dumps(line, ensure_ascii=False))
    print(STATE_LINE + json.dumps(state, ensure_ascii=False, sort_keys=True))
    if any("error" in line for line in lines):
        sys.exit(1)
