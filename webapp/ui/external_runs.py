"""How the pages read a run logged through the MLflow API (source "mlflow"), whose config is its params:
flat keys as its trainer logged them (verl: `actor_rollout_ref/rollout/n`; HF Trainer: `learning_rate`;
with MLFLOW_FLATTEN_PARAMS: `generation_config.top_k`), every value a string."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from webapp.runs.models import Run

# The params that name the model, as verl, TRL / the HF Trainer (model config and arguments) log them.
MODEL_PARAMS = ("actor_rollout_ref/model/path", "model_name_or_path", "_name_or_path", "model/path", "model")
# The params that give the number of steps a run will take (HF Trainer's -1 means "from the epochs").
MAX_STEPS_PARAMS = ("trainer/total_training_steps", "max_steps", "total_training_steps")
# What each framework logs that a researcher looks at first, in that order; the run page draws the ones
# a run has first (at most HEADLINE_MAX), the rest by prefix.
HEADLINE_PREFERENCE = (
    "critic/score/mean",
    "reward",
    "train/reward",
    "rewards/mean",
    "loss",
    "train/loss",
    "train_loss",
    "actor/pg_loss",
    "eval_loss",
    "eval/loss",
    "response_length/mean",
    "completions/mean_length",
    "actor/entropy",
    "entropy",
    "grad_norm",
    "learning_rate",
)
HEADLINE_MAX = 6
_VAL_CORE = re.compile(r"^val-core/.+/mean_at_\d+$|^val-core/.+/mean@\d+$")


def is_external(run: Run) -> bool:
    return run.source == "mlflow"


def config_protocol(run: Run) -> str | None:
    """The tool protocol a tirlab run's config names; None for an external run (its params are not a
    RunConfig) and for a config that names none."""
    tools = run.config.get("tools") if not is_external(run) and isinstance(run.config, dict) else None
    return tools.get("protocol") if isinstance(tools, dict) else None


def external_model(config: dict[str, Any]) -> str:
    return next((str(config[key]) for key in MODEL_PARAMS if isinstance(config.get(key), str | int)), "")


def external_max_steps(config: dict[str, Any]) -> int | None:
    for key in MAX_STEPS_PARAMS:
        value = str(config.get(key, ""))
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def external_headline(keys: list[str]) -> list[str]:
    """The metrics drawn first: verl's validation score, then the preference list, then the first keys."""
    present = set(keys)
    chosen = [key for key in sorted(keys) if _VAL_CORE.match(key)][:1]
    chosen += [key for key in HEADLINE_PREFERENCE if key in present and key not in chosen]
    chosen += [key for key in sorted(keys) if key not in chosen]
    return chosen[:HEADLINE_MAX]


@dataclass
class ParamNode:
    """One level of the params tree: a name, the value of a leaf, children otherwise."""

    name: str
    path: str = ""
    value: str | None = None
    children: list[ParamNode] = field(default_factory=list)

    @property
    def size(self) -> int:
        return 1 if self.value is not None else sum(child.size for child in self.children)


def params_tree(config: dict[str, Any]) -> list[ParamNode]:
    """Flat params as a tree, split at '/' (verl's separator) and, when no key has '/', at '.'
    (MLFLOW_FLATTEN_PARAMS'). A key that is both a leaf and a prefix keeps both."""
    separator = "/" if any("/" in key for key in config) else "."
    root = ParamNode("")
    for key in sorted(config):
        node = root
        parts = key.split(separator)
        for depth, part in enumerate(parts[:-1]):
            found = next((c for c in node.children if c.name == part and c.value is None), None)
            if found is None:
                found = ParamNode(part, separator.join(parts[: depth + 1]))
                node.children.append(found)
            node = found
        value = config[key]
        node.children.append(ParamNode(parts[-1], key, value if isinstance(value, str) else str(value)))
    return root.children
