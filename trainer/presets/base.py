"""The preset registry: a preset is a partial RunConfig merged over the defaults, registered by name in
its paper's module (`register_preset`)."""

from dataclasses import dataclass
from typing import Any

from trainer.config import merge_overrides
from trainer.registry import Registry

# The preset a new user starts from: first in every list.
DEFAULT_PRESET = "quickstart"


@dataclass(frozen=True)
class Preset:
    name: str
    overrides: dict[str, Any]
    description: str
    # Registered with a '<name>-async' twin (one step off-policy, nothing else changed).
    with_async: bool = False

    @property
    def needs_gpu(self) -> bool:
        """Whether it runs only on a GPU machine (engine 'vllm'): the paper presets."""
        return self.overrides.get("engine") == "vllm"


# The default first, then the ones that run on a CPU, then the GPU ones, each by name (a mini and its
# '-async' twin side by side).
PRESETS_REGISTRY: Registry[Preset] = Registry(
    "preset", "trainer.presets", order=lambda name, preset: (name != DEFAULT_PRESET, preset.needs_gpu, name)
)


def register_preset(
    name: str, overrides: dict[str, Any], *, description: str, with_async: bool = False
) -> dict[str, Any]:
    """Register `overrides` as preset `name`; with `with_async`, also '<name>-async', the same one step
    off-policy (SkyRL-style, trainer.rollout.off_policy), so the two can be compared side by side
    (bench/async_training.py --preset). Returns the overrides, for presets built on this one."""
    PRESETS_REGISTRY.register(name, Preset(name, overrides, description, with_async))
    if with_async:
        PRESETS_REGISTRY.register(
            f"{name}-async",
            Preset(
                f"{name}-async",
                merge_overrides(overrides, {"rollout": {"async_rollouts": True}}),
                f"{name} one step off-policy: next rollouts run while this step trains.",
            ),
        )
    return overrides
