"""The run-config form, generated from the trainer config's JSON schema.

`config_sections(schema, values)` walks trainer.config.config_json_schema(): every object becomes a
section (a fieldset), every leaf a field whose widget follows its schema — enums are selects,
booleans checkboxes, numbers number inputs with the schema's bounds, strings text inputs, and
anything else (free-form objects such as reward params, lists) JSON in a textarea. A field added
to RunConfig therefore appears in the form without template work. `parse_config` reads the
submitted form back into a config dict, with per-field errors for values that are not even of the
right type (the rest is validated by trainer.config through webapp.runs.services.run_create).
"""

import json
import math
from dataclasses import dataclass, field
from typing import Any

FIELD_PREFIX = "config."
# Fields ending in "dataset" offer the stored datasets (the page's datalists, webapp.ui.new_run_views):
# sft.dataset takes SFT traces, every other one problems for RL; tools.search_corpus offers the retrieval corpora.
TRACES_FIELDS = {"sft.dataset"}
CORPUS_FIELDS = {"tools.search_corpus"}


@dataclass
class ConfigField:
    path: str
    label: str
    help: str
    kind: str  # select | checkbox | number | text | textarea | json
    value: Any = None
    choices: list[str] = field(default_factory=list)
    nullable: bool = False
    integer: bool = False
    minimum: float | None = None
    maximum: float | None = None
    datalist: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return FIELD_PREFIX + self.path

    @property
    def input_id(self) -> str:
        return "f-" + self.path.replace(".", "-")

    @property
    def wide(self) -> bool:
        return self.kind in ("json", "textarea")


@dataclass
class ConfigSection:
    path: str
    title: str
    help: str
    fields: list[ConfigField] = field(default_factory=list)
    sections: list["ConfigSection"] = field(default_factory=list)

    def all_fields(self) -> list[ConfigField]:
        found = list(self.fields)
        for section in self.sections:
            found += section.all_fields()
        return found


def _resolve(schema: dict, node: dict) -> dict:
    """Inline a $ref (keeping the referring property's own description) and merge a nullable anyOf."""
    if "$ref" in node:
        target = schema.get("$defs", {})[node["$ref"].rsplit("/", 1)[-1]]
        node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
    if "anyOf" in node:
        branches = [_resolve(schema, branch) for branch in node["anyOf"]]
        concrete = [branch for branch in branches if branch.get("type") != "null"]
        merged = {key: value for key, value in node.items() if key != "anyOf"}
        if len(concrete) == 1:
            merged = {**concrete[0], **merged}
        merged["nullable"] = len(concrete) < len(branches)
        return merged
    return node


def _get(values: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(values, dict):
            return None
        values = values.get(key)
    return values


def _display(value: Any, kind: str) -> Any:
    """A config value as the widget shows it."""
    if kind == "checkbox":
        return bool(value)
    if kind == "json":
        return "" if value is None else json.dumps(value, indent=1, sort_keys=True)
    return "" if value is None else str(value)


_ACRONYMS = {"grpo", "sft", "kl", "lr", "ppo"}
_UNITS = {"s": "(s)", "mb": "(MiB)"}


def _title(key: str) -> str:
    """A label from a config key: kl_coef -> "KL coef", heartbeat_s -> "Heartbeat (s)"."""
    words = key.split("_")
    unit = _UNITS.get(words[-1]) if len(words) > 1 else None
    if unit:
        words = words[:-1]
    words = [word.upper() if word in _ACRONYMS else word for word in words]
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words + ([unit] if unit else []))


def _leaf(key: str, path: str, spec: dict, value: Any) -> ConfigField:
    label = _title(key)
    kind_of = spec.get("type")
    built = ConfigField(path=path, label=label, help=spec.get("description", ""), kind="json")
    built.nullable = bool(spec.get("nullable"))
    if "enum" in spec:
        built.kind, built.choices = "select", [str(choice) for choice in spec["enum"]]
    elif kind_of == "boolean":
        built.kind = "checkbox"
    elif kind_of in ("integer", "number"):
        built.kind, built.integer = "number", kind_of == "integer"
        built.minimum = spec.get("minimum", spec.get("exclusiveMinimum"))
        built.maximum = spec.get("maximum", spec.get("exclusiveMaximum"))
    elif kind_of == "string":
        built.kind = "textarea" if key.endswith("template") else "text"
        if key.endswith("dataset"):
            built.datalist = "trace-choices" if path in TRACES_FIELDS else "dataset-choices"
        elif path in CORPUS_FIELDS:
            built.datalist = "corpus-choices"
    built.value = _display(value, built.kind)
    return built


def _section(schema: dict, node: dict, path: list[str], values: Any, title: str) -> ConfigSection:
    section = ConfigSection(path=".".join(path), title=title, help=node.get("description", ""))
    for key, raw in node.get("properties", {}).items():
        spec = _resolve(schema, raw)
        child_path = [*path, key]
        if spec.get("type") == "object" and spec.get("properties"):
            section.sections.append(_section(schema, spec, child_path, values, _title(key)))
        else:
            section.fields.append(_leaf(key, ".".join(child_path), spec, _get(values, child_path)))
    return section


def config_sections(schema: dict, values: dict) -> list[ConfigSection]:
    """The form's sections: "General" for the top-level scalars, then one per nested object."""
    root = _section(schema, schema, [], values, "General")
    general = ConfigSection(path="", title="General", help=schema.get("description", ""), fields=root.fields)
    return ([general] if general.fields else []) + root.sections


def all_fields(sections: list[ConfigSection]) -> list[ConfigField]:
    found: list[ConfigField] = []
    for section in sections:
        found += section.all_fields()
    return found


def _parse_one(config_field: ConfigField, raw: str | None) -> Any:
    """The typed value of one submitted field; ValueError with a message for the field."""
    kind = config_field.kind
    if kind == "checkbox":
        return raw is not None
    raw = (raw or "").strip() if kind != "textarea" else (raw or "")
    if raw == "" and config_field.nullable:
        return None
    if kind == "select":
        if raw not in config_field.choices:
            raise ValueError(f"choose one of: {', '.join(config_field.choices)}")
        return raw
    if kind == "number":
        if raw == "":
            raise ValueError("this field is required")
        try:
            number = float(raw)
        except ValueError:
            raise ValueError("must be a number") from None
        if not math.isfinite(number):
            raise ValueError("must be a finite number")
        if config_field.integer:
            if not number.is_integer():
                raise ValueError("must be a whole number")
            return int(number)
        return number
    if kind == "json":
        if raw == "":
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"must be valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    return raw


def _put(config: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        config = config.setdefault(key, {})
    config[last] = value


def parse_config(sections: list[ConfigSection], data) -> tuple[dict, dict[str, list[str]]]:
    """Read the submitted form: (config dict, field path -> errors); shows what was typed on each field.

    A field the form did not send (added to the schema after the page was loaded) keeps its default."""
    config: dict = {}
    errors: dict[str, list[str]] = {}
    for config_field in all_fields(sections):
        raw = data.get(config_field.name)
        if raw is None and config_field.kind != "checkbox" and config_field.name not in data:
            continue
        config_field.value = (config_field.name in data) if config_field.kind == "checkbox" else raw
        try:
            value = _parse_one(config_field, raw)
        except ValueError as exc:
            errors[config_field.path] = [str(exc)]
            continue
        if value is None and config_field.kind == "json":
            continue
        _put(config, config_field.path, value)
    return config, errors


def attach_errors(sections: list[ConfigSection], errors: dict[str, list[str]]) -> list[str]:
    """Put each error on the field its dotted path names (or the nearest field above it, such as
    reward.params for reward.params.c); returns the errors that belong to no field."""
    fields = {config_field.path: config_field for config_field in all_fields(sections)}
    unplaced = []
    for path, messages in errors.items():
        parts = path.split(".")
        target = None
        while parts and target is None:
            target = fields.get(".".join(parts))
            parts.pop()
        if target is None:
            unplaced += [f"{path}: {message}" for message in messages]
        else:
            prefix = "" if target.path == path else f"{path.removeprefix(target.path + '.')}: "
            target.errors += [prefix + message for message in messages]
    return unplaced
