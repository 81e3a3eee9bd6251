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
    value = os.environ.get(name)
    number = default if value in (None, "") else _number(name, value, int)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name}={value!r}: give a whole number of at least {minimum}")
    return number


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    value = os.environ.get(name)
    number = default if value in (None, "") else _number(name, value, float)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name}={value!r}: give a number of at least {minimum:g}")
    return number


def _number(name: str, value: str, kind: type) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a {'whole ' if kind is int else ''}number") from None


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
