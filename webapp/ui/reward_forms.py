"""A form for a reward's parameters, generated from the JSON schema of trainer.rewards.

Each property becomes one field named ``params.<name>``: numbers and integers an input, booleans a
checkbox, enums a select, and anything structured (lists, objects, such as the weighted reward's
terms) a JSON text area. Submitted text is turned back into a params dict; errors keyed
``params.<name>`` by trainer.rewards are shown at their field.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from trainer.rewards import reward_params_schema

PREFIX = "params."


@dataclass
class ParamField:
    name: str
    title: str
    description: str
    kind: str  # "number", "integer", "boolean", "choice" or "json"
    value: Any
    choices: list[str] = field(default_factory=list)
    minimum: float | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def input_name(self) -> str:
        return PREFIX + self.name


def _kind(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "choice"
    return {"number": "number", "integer": "integer", "boolean": "boolean"}.get(spec.get("type"), "json")


def _display(kind: str, value: Any) -> Any:
    if kind == "json":
        return json.dumps(value, indent=2)
    if kind == "boolean":
        return bool(value)
    return "" if value is None else str(value)


def param_fields(reward: str, values: dict[str, Any]) -> list[ParamField]:
    """The fields of reward `reward`, showing `values` (typed params, e.g. defaults or a stored config)."""
    fields = []
    for name, spec in reward_params_schema(reward).get("properties", {}).items():
        kind = _kind(spec)
        fields.append(
            ParamField(
                name=name,
                title=spec.get("title", name),
                description=spec.get("description", ""),
                kind=kind,
                value=_display(kind, values.get(name, spec.get("default"))),
                choices=[str(choice) for choice in spec.get("enum", [])],
                minimum=spec.get("minimum"),
            )
        )
    return fields


def _parse(kind: str, text: str) -> Any:
    if kind == "number":
        return float(text)
    if kind == "integer":
        return int(text)
    if kind == "json":
        return json.loads(text)
    return text


_PARSE_ERRORS = {"number": "must be a number", "integer": "must be a whole number"}


def params_from_post(reward: str, post) -> tuple[dict[str, Any], list[ParamField]]:
    """The params a submitted form holds (blank numbers left to their defaults) and its fields,
    which keep the submitted text and carry any error of reading it."""
    params: dict[str, Any] = {}
    fields = param_fields(reward, {})
    for spec in fields:
        if spec.kind == "boolean":
            spec.value = post.get(spec.input_name) == "on"
            params[spec.name] = spec.value
            continue
        text = post.get(spec.input_name, "").strip()
        spec.value = text
        if text == "":
            continue
        try:
            params[spec.name] = _parse(spec.kind, text)
        except json.JSONDecodeError as exc:
            spec.errors.append(f"is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        except ValueError:
            spec.errors.append(_PARSE_ERRORS[spec.kind])
    return params, fields


def attach_errors(fields: list[ParamField], errors: dict[str, list[str]]) -> list[str]:
    """Put each ``params.<name>[.<rest>]`` error on its field; return the ones that belong to no field."""
    by_name = {spec.name: spec for spec in fields}
    unplaced = []
    for path, messages in errors.items():
        head, _, rest = path.removeprefix(PREFIX).partition(".")
        spec = by_name.get(head) if path.startswith(PREFIX) else None
        for message in messages:
            if spec is None:
                unplaced.append(f"{path}: {message}")
            else:
                spec.errors.append(f"{rest}: {message}" if rest else message)
    return unplaced
