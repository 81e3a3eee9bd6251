"""Reading a request's fields as the MLflow client sends them.

GET requests carry their fields in the query string, everything else a JSON body (protobuf's JSON
mapping: snake_case names, enums by name, int64 as a number or a decimal string, doubles as numbers or
the strings "NaN", "Infinity" and "-Infinity"). Each reader refuses a wrong value with MLflow's
INVALID_PARAMETER_VALUE, naming the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from webapp.tracking.errors import MlflowError, invalid, missing

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_SPECIAL_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def request_fields(request: HttpRequest) -> Fields:
    """The fields of a request: its query string for GET, its JSON object body otherwise."""
    if request.method == "GET":
        return Fields({key: values[-1] if len(values) == 1 else values for key, values in request.GET.lists()})
    if not request.body:
        return Fields({})
    try:
        body = json.loads(request.body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MlflowError("MALFORMED_REQUEST", f"The request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise MlflowError("MALFORMED_REQUEST", "The request body must be a JSON object.")
    return Fields(body)


class Fields:
    """Typed, validated access to a request's fields."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = data

    def present(self, name: str) -> bool:
        return self.data.get(name) not in (None, "")

    def string(self, name: str, *, required: bool = False, default: str = "", max_length: int | None = None) -> str:
        value = self.data.get(name)
        if value is None or value == "":
            if required:
                raise missing(name)
            return default
        if not isinstance(value, str):
            raise invalid(f"Invalid value {value!r} for parameter '{name}': it must be a string.")
        if max_length is not None and len(value) > max_length:
            raise invalid(f"'{name}' is {len(value)} characters long; at most {max_length} are allowed.")
        return value

    def first_string(self, *names: str, required: bool = True) -> str:
        """The first of `names` that is present (e.g. run_id, then its deprecated twin run_uuid)."""
        for name in names:
            if self.present(name):
                return self.string(name)
        if required:
            raise missing(names[0])
        return ""

    def int64(self, name: str, *, required: bool = False, default: int | None = None) -> int | None:
        value = self.data.get(name)
        if value is None or value == "":
            if required:
                raise missing(name)
            return default
        return to_int64(value, name)

    def double(self, name: str, *, required: bool = False) -> float | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise missing(name)
            return None
        return to_double(value, name)

    def enum(self, name: str, choices: tuple[str, ...], *, default: str | None = None) -> str | None:
        value = self.data.get(name)
        if value is None or value == "":
            return default
        if value not in choices:
            raise invalid(f"Invalid value {value!r} for parameter '{name}': one of {', '.join(choices)}.")
        return value

    def strings(self, name: str) -> list[str]:
        value = self.data.get(name)
        if value is None:
            return []
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in values):
            raise invalid(f"Invalid value {value!r} for parameter '{name}': a list of strings.")
        return values

    def objects(self, name: str) -> list[Mapping[str, Any]]:
        value = self.data.get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise invalid(f"Invalid value for parameter '{name}': a list of objects.")
        return value


def to_int64(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise invalid(f"Invalid value {value!r} for parameter '{name}': an integer.")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value)
    else:
        raise invalid(f"Invalid value {value!r} for parameter '{name}': an integer.")
    if not INT64_MIN <= number <= INT64_MAX:
        raise invalid(f"Invalid value {value!r} for parameter '{name}': it does not fit in 64 bits.")
    return number


def to_double(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise invalid(f"Invalid value {value!r} for parameter '{name}': a number.")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        if value in _SPECIAL_DOUBLES:
            return _SPECIAL_DOUBLES[value]
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    raise invalid(f"Invalid value {value!r} for parameter '{name}': a number, NaN, Infinity or -Infinity.")
