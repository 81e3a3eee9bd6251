"""What a tool call does: the environment a rollout's calls run in (`tools.environment`).

The protocol (trainer.protocols) is the syntax of a call in model text; the environment is what the
call does. An environment owns:

- when generation stops for a call (its stop strings under the call budget; none for an environment
  that runs nothing),
- how the call the model wrote is executed -- in the sandbox, since it is model-written -- against the
  tools the example offers (`CallContext.tools`, the schemas the prompt shows),
- the text fed back after it, which the rollout appends as tool text (masked from the loss),
- the per-trajectory state of a multi-turn task (`CallContext.state`, one dict per trajectory), and the task
  itself where the example carries one (`CallContext.task`: the swe environment's repository and tests),
- for a multi-turn task, what follows a turn without a call (`on_no_call`), when the trajectory is over
  (`finished`), and its result once it is (`outcome`: the swe environment's patch and tests), which the rollout
  keeps on the Completion and the trainer reports with the trajectory.

The rollout (trainer.rollout.multi_turn) asks the run's environment at each stop; everything else about a
trajectory -- tokens, masks, the length budget -- stays the rollout's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from typing import Protocol as TypingProtocol

import sandbox
from trainer.protocols.base import Protocol
from trainer.protocols.feedback import Feedback
from trainer.registry import Registry
from trainer.trajectory import ToolExecution


class CodeRunner(TypingProtocol):
    """Runs one snippet under the call's limits, like `sandbox.arun` (the default)."""

    async def __call__(self, code: str, *, timeout_s: float, memory_mb: int) -> sandbox.Result: ...


@dataclass
class CallContext:
    """What a call of one trajectory runs with: the example's offered tools, the sandbox limits and
    runner (None: `sandbox.arun`), and the trajectory's state, kept across its calls."""

    tools: list[dict[str, Any]] | None = None
    timeout_s: float = 10.0
    memory_mb: int = 1024
    run_code: CodeRunner | None = None
    state: dict[str, Any] = field(default_factory=dict)
    # The example's task, for an environment that needs more than its tools (trainer.envs.environment_task).
    task: dict[str, Any] | None = None
    # The call budget (tools.max_tool_calls); the swe and search environments' turn limit. None: no limit.
    max_calls: int | None = None
    # What the search environment asks (trainer.envs.search.retriever.Retriever); None for the others.
    retriever: Any = None

    async def run(self, code: str) -> sandbox.Result:
        # Looked up per call, so the default follows sandbox.arun wherever it points.
        run = self.run_code if self.run_code is not None else sandbox.arun
        return await run(code, timeout_s=self.timeout_s, memory_mb=self.memory_mb)


class Environment(ABC):
    """Base of the environments; one stateless instance each, registered by `name` (`@register_environment`).
    Which protocols' calls it runs is each protocol's `environments`."""

    name: ClassVar[str]
    description: ClassVar[str]

    @abstractmethod
    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        """Where the next generation stops for a call; [] when no call is run (any more)."""

    async def run_call(
        self, protocol: Protocol, stopped: str, feedback: Feedback, context: CallContext
    ) -> ToolExecution | None:
        """Execute the call that `stopped` (the response so far, ending at the stop string) ends with;
        None when nothing ran and nothing is to be reported."""
        raise RuntimeError(f"the {self.name!r} environment runs no calls: it stops generation for none")

    def append_output(
        self, protocol: Protocol, stopped: str, execution: ToolExecution | None, feedback: Feedback
    ) -> str:
        """`stopped` followed by what is fed back for `execution`: the text the next turn continues."""
        raise RuntimeError(f"the {self.name!r} environment runs no calls: it stops generation for none")

    def is_call(self, protocol: Protocol, stopped: str) -> bool:
        """Whether a turn that stopped at one of `stop_strings` (`stopped`: the response up to its end) is a call
        for `run_call`; False answers it as a turn without a call (`on_no_call`), as Search-R1 answers a turn
        without a valid action. Every stop is a call by default."""
        return True

    def on_no_call(self, protocol: Protocol, context: CallContext) -> str | None:
        """The text fed back after a turn that ended without a call (the model's end of turn), as tool text;
        None (the default) ends the trajectory there."""
        return None

    def finished(self, context: CallContext) -> bool:
        """Whether the trajectory is over after the output just appended (a finish call, a turn limit)."""
        return False

    async def outcome(self, protocol: Protocol, context: CallContext, *, truncated: bool) -> dict[str, Any] | None:
        """The trajectory's result once it is over (`truncated`: cut at the response limit), reported with
        it (trainer.contract.TrajectoryIn.outcome); None (the default) for environments whose result is the text."""
        return None


def environment_task(example: Any) -> dict[str, Any] | None:
    """What an example gives its environment beyond its tools: a software-engineering instance
    (`extra_info["instance"]`, trainer.data.swe_rows), else None."""
    extra = getattr(example, "extra_info", None) or {}
    instance = extra.get("instance")
    return instance if isinstance(instance, dict) else None


E = TypeVar("E", bound=type[Environment])
ENVIRONMENTS: Registry[Environment] = Registry("environment", "trainer.envs")


def register_environment(cls: E) -> E:
    """Register the environment class `cls` under its `name` (a class decorator, in the environment's own module)."""
    ENVIRONMENTS.register(cls.name, cls())
    return cls


def get_environment(name: str) -> Environment:
    """The environment called `name`; UnknownName (a ValueError listing the names) otherwise."""
    return ENVIRONMENTS.get(name)
