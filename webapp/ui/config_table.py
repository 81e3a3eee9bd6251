"""Run configs as readable tables: nested sections flattened to dotted paths, and their diff."""

import json
from typing import Any

MISSING = "—"


def flatten_config(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"rollout": {"group_size": 16}} -> {"rollout.group_size": 16}; lists stay whole values."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten_config(value, prefix=f"{path}."))
        else:
            flat[path] = value
    return flat


def config_value_text(value: Any) -> str:
    """A value as a researcher writes it: strings bare, everything else as JSON (null, true, [1, 2])."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def config_rows(config: dict[str, Any]) -> list[tuple[str, str]]:
    return [(path, config_value_text(value)) for path, value in sorted(flatten_config(config).items())]


def config_diff(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per dotted path in any config: its value text in each (MISSING where absent), and
    whether they differ. Sorted by path, so each section's fields stay together."""
    flats = [flatten_config(config) for config in configs]
    paths: dict[str, None] = {}
    for flat in flats:
        paths.update(dict.fromkeys(flat))
    rows = []
    for path in sorted(paths):
        values = [config_value_text(flat[path]) if path in flat else MISSING for flat in flats]
        rows.append({"path": path, "values": values, "differs": len(set(values)) > 1})
    return rows
