"""How a mini-batch's responses are split into the micro-batches of one forward and backward pass each.

A micro-batch encodes each of its distinct prompts once and its responses right-padded to the
longest (trainer.grpo.response_logprobs), so what it costs is about the tokens it feeds:

    cost = sum of its distinct prompts' lengths + responses x longest response

The gradient is the same however the responses are split (each micro-batch's loss is weighted by its
share of the mini-batch), so the split is chosen for cost, from two candidates:

- by group: MICRO_BATCH responses in their order, whole GRPO groups sharing one prompt; best when
  prompts are long, as the function-calling minis' (~400 tokens) are;
- by length: the responses sorted by length and cut where a micro-batch would feed more than
  MICRO_BATCH_TOKENS response tokens; best when a group's responses differ in length more than
  prompts cost, as the arithmetic minis' do (a step-0 quickstart group answers in 13 tokens or calls
  the tool in 74, and a group of one length wasted most of its padded columns).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

# Responses per micro-batch when whole groups go together.
MICRO_BATCH = 16
# Padded response tokens per micro-batch when responses go by length. Measured, the update of a step-0
# batch on one thread: quickstart 1.60 s by group, 1.10 s by length at 2048 and 1.12 s at 3072 but 1.57 s
# at 4096 (the activations outgrow the caches); at 2048 artist-mini 3.58 -> 2.46 s, zerotir-mini 0.65 ->
# 0.35 s, artist-fc-mini 7.64 -> 4.72 s, and toolrl-mini keeps its groups.
MICRO_BATCH_TOKENS = 2048

Item = TypeVar("Item")


def cost(
    micro_batches: Sequence[Sequence[Item]],
    prompt: Callable[[Item], Sequence[int]],
    response: Callable[[Item], Sequence[int]],
) -> int:
    """Tokens fed: each micro-batch's distinct prompts once, and its responses padded to the longest."""
    total = 0
    for batch in micro_batches:
        total += sum(len(p) for p in {tuple(prompt(item)) for item in batch})
        total += len(batch) * max(len(response(item)) for item in batch)
    return total


def split(
    items: Sequence[Item], prompt: Callable[[Item], Sequence[int]], response: Callable[[Item], Sequence[int]]
) -> list[list[Item]]:
    """The cheaper of the two splits of the module docstring (by group on a tie)."""
    by_group = [list(items[i : i + MICRO_BATCH]) for i in range(0, len(items), MICRO_BATCH)]
    by_length: list[list[Item]] = [[]]
    for item in sorted(items, key=lambda item: len(response(item))):
        # Sorted, so the response joining is the micro-batch's longest.
        if by_length[-1] and (len(by_length[-1]) + 1) * len(response(item)) > MICRO_BATCH_TOKENS:
            by_length.append([])
        by_length[-1].append(item)
    return min((by_group, by_length), key=lambda split: cost(split, prompt, response))
