"""Tiny typed readers for settings taken from the environment."""

import os
from typing import Any


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    return _env_number(name, default, int, minimum)


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    return _env_number(name, default, float, minimum)


def _env_number(name: str, default: Any, kind: type, minimum: Any) -> Any:
    value = os.environ.get(name)
    what = "a whole number" if kind is int else "a number"
    try:
        number = default if value in (None, "") else kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not {what}") from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{name}={value!r}: give {what} of at least {minimum}")
    return number


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
