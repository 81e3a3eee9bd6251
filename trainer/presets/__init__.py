"""Run presets: the CPU quickstart and one preset per paper tirlab reproduces.

A preset is a partial RunConfig merged over the defaults (`merge_overrides`), registered in its paper's
module of this package (trainer.presets.base.register_preset), so a new preset is one new file. The CPU presets list
only what differs from them; a paper preset spells out every value its paper's released training
script sets (or the framework it runs on defaults to), each with its file:line, even where it equals
our default. A value the sources we could read do not give keeps our default and says so, rather
than borrowing a number from somewhere else. Paper presets name the paper's model as a hub id:
they are meant for a GPU machine with internet; on CPU, `quickstart`, `otc-mini` and
`smollm2-gsm8k-cpu` run.

ARCHITECTURE.md's table of papers is our summary of the papers themselves; values cited to it
were read from the papers when that table was written.
"""

from typing import Any

from trainer.config import RunConfig, default_config, merge_overrides, validate_config
from trainer.presets.base import DEFAULT_PRESET, PRESETS_REGISTRY, Preset, register_preset

# Every module of this package registers its presets (trainer.registry).
PRESETS: dict[str, dict[str, Any]] = {name: preset.overrides for name, preset in PRESETS_REGISTRY.items()}
PRESET_DESCRIPTIONS: dict[str, str] = {name: preset.description for name, preset in PRESETS_REGISTRY.items()}
# The CPU minis that also run SkyRL-style, one step off-policy, as '<mini>-async'.
ASYNC_MINIS: tuple[str, ...] = tuple(name for name, preset in PRESETS_REGISTRY.items() if preset.with_async)


class UnknownPreset(KeyError):
    """A preset name that is not in PRESETS."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown preset {self.name!r}; expected one of: {', '.join(PRESETS)}"


def preset_names() -> list[str]:
    """Preset names, quickstart first."""
    return list(PRESETS)


def preset_overrides(name: str) -> dict[str, Any]:
    """The preset's partial config (a copy), as merged over the defaults."""
    if name not in PRESETS:
        raise UnknownPreset(name)
    return merge_overrides({}, PRESETS[name])


def preset_config(name: str) -> RunConfig:
    """The validated RunConfig of preset `name`; UnknownPreset for a name not in PRESETS."""
    overrides = preset_overrides(name)
    merged = merge_overrides(default_config(), overrides)
    if "reward" in overrides:
        # A reward's parameters belong to that reward: merged over the default reward's (torl's),
        # they would carry torl's keys into otc_grpo's params, which refuse them. The validator
        # fills in the named reward's own defaults instead.
        merged["reward"] = {"params": {}, **overrides["reward"]}
    return validate_config(merged)


__all__ = [
    "ASYNC_MINIS",
    "DEFAULT_PRESET",
    "PRESETS",
    "PRESETS_REGISTRY",
    "PRESET_DESCRIPTIONS",
    "Preset",
    "UnknownPreset",
    "preset_config",
    "preset_names",
    "preset_overrides",
    "register_preset",
]
