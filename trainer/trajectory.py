"""The shapes shared by the data readers, the rollout loop, the rewards and the step metrics."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Example:
    """One prompt of a dataset and what a right answer must match."""

    id: str
    prompt: list[dict[str, str]]
    ground_truth: Any
    data_source: str
    tools: list[dict] | None = None
    extra_info: dict | None = None


@dataclass(frozen=True)
class ToolExecution:
    """One executed tool call, as the sandbox reported it.

    `output` is everything the program printed, its stdout then its stderr; `stderr` is that last
    part again, so the papers' feedback, which treats the two apart, can be computed (an execution
    known only by its merged output has stderr "", all of it stdout)."""

    call: str
    status: str  # ok, error, timeout, memory_exceeded, output_limit, killed (sandbox.Result.status)
    output: str = ""
    duration_ms: float = 0.0
    stderr: str = ""
    # A stateful environment's state after this call (trainer.envs: the function_calling tools' side
    # effects -- bookings, emails, timers, events); None where the environment keeps none.
    state: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def stdout(self) -> str:
        if self.stderr and self.output.endswith(self.stderr):
            return self.output[: -len(self.stderr)]
        return self.output


@dataclass(frozen=True)
class Completion:
    """A finished response: the full text as the protocol produced it (model text with tool
    outputs inserted), plus what only the rollout knows — each execution's status, and whether
    generation stopped at the length limit."""

    text: str
    protocol: str = "python_markdown"
    executions: tuple[ToolExecution, ...] = ()
    truncated: bool = False
    response_tokens: int | None = None
    # The environment's result of the whole trajectory (trainer.envs.base.Environment.outcome): the swe
    # environment's end state, patch and tests; None where the text is the result.
    outcome: dict[str, Any] | None = None
    # Where the environment answered a turn without a call (Environment.on_no_call): those replies' places among
    # the completion's tool texts, in order. Tool text with no execution behind it.
    replies: tuple[int, ...] = ()

    @property
    def tool_texts(self) -> int:
        """The most tool texts the rollout inserted: each execution's output (finish has none) and each reply."""
        return len(self.executions) + len(self.replies)


@dataclass(frozen=True)
class RewardResult:
    """The reward of one completion: its total and the named parts it was made of."""

    total: float
    components: dict[str, float] = field(default_factory=dict)
    correct: bool = False
    details: dict[str, Any] = field(default_factory=dict)
