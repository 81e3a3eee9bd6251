"""`none`: single step. The calls are scored as written and nothing runs: generation does not stop for
them (ToolRL and Nemotron-Tool-N1 train this way; their rewards compare the calls to the ground truth)."""

from __future__ import annotations

from typing import ClassVar

from trainer.envs.base import Environment, register_environment
from trainer.protocols.base import Protocol


@register_environment
class NoEnvironment(Environment):
    name: ClassVar[str] = "none"
    description: ClassVar[str] = "single step: the calls are scored as written, nothing runs"

    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        return []
