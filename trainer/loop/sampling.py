"""What a rollout of GRPO groups takes and gives back, the same for training (trainer.loop.train) and for an
evaluation run (trainer.loop.evaluate): each example's prompt ids, the settings of a greedy or sampled pass, the
rollout's inputs repeated per sample, and its trajectories cut back into groups."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from trainer.config import RunConfig
from trainer.envs import environment_task
from trainer.loop.collect import Group
from trainer.protocols.prompts import build_prompt
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings
from trainer.trajectory import Example


def prompt_ids(example: Example, *, config: RunConfig, template: str | None, tokenizer: Any) -> list[int]:
    """The token ids the policy is conditioned on for `example`: the template applied, at most
    data.max_prompt_tokens of them, the last ones (they hold the question and the turn the model continues)."""
    text = build_prompt(example, config.tools.protocol, template).render(tokenizer)
    # No special tokens added, raw prompts included: ToRL's rollout gets its prompt ids so
    # (verl/utils/dataset/rl_dataset.py:226 @cb78cf1).
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids[-config.data.max_prompt_tokens :]


def pass_settings(
    settings: RolloutSettings, *, greedy: bool = False, temperature: float | None = None
) -> RolloutSettings:
    """A pass's sampling: greedy, or at `temperature` (None: the run's own)."""
    if greedy:
        return dataclasses.replace(settings, temperature=0.0)
    return settings if temperature is None else dataclasses.replace(settings, temperature=temperature)


def rollout_inputs(
    examples: Sequence[tuple[int, Example]], group_size: int, ids: Any
) -> tuple[list[list[int]], list[list[dict] | None], list[Any]]:
    """The rollout's prompts, offered tools and environment tasks, each example's `group_size` times in a row;
    `ids(example)` gives an example's prompt ids."""
    # Each example's ids once, shared by its samples (tokenising a long prompt k times costs k times).
    prompts = [prompt for _, example in examples for prompt in [ids(example)] * group_size]
    # The tools each prompt offers, which the function_calling environment runs calls against.
    tools = [example.tools for _, example in examples for _ in range(group_size)]
    # What the environment needs of each example beyond its tools: the swe environment's instance.
    tasks = [environment_task(example) for _, example in examples for _ in range(group_size)]
    return prompts, tools, tasks


def as_groups(examples: Sequence[tuple[int, Example]], result: RolloutResult, group_size: int) -> list[Group]:
    """The rollout's trajectories, unscored, as one group per example."""
    return [
        Group(index=index, example=example, trajectories=result.trajectories[g * group_size : (g + 1) * group_size])
        for g, (index, example) in enumerate(examples)
    ]
