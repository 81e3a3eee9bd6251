"""The reward registry, the view of a completion that rewards read, and the state kept across steps.

A reward is a function scoring a whole GRPO group (OTC-GRPO needs the group; the others score
each completion alone through `per_completion`). A reward registers by name in its own module of
this package, with the model of its parameters and a line for the dashboard (trainer.registry):

    class TorlParams(RewardParams): ...
    @register_reward("torl", params=TorlParams, description="+1 if ... (ToRL).")
    def torl(group: list[Response], ground_truth, ctx: RewardContext) -> list[RewardResult]: ...
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from trainer.protocols import Protocol, get_protocol, output_failed
from trainer.registry import Registry
from trainer.trajectory import Completion, RewardResult, ToolExecution

# Whose rollouts a reward scores: training groups or evaluation on the validation data.
TRAIN_SPLIT, VAL_SPLIT = "train", "val"


@dataclass
class RewardState:
    """What a reward remembers across steps, serialisable for checkpoints.

    `min_tool_calls` is OTC-GRPO's global minimum: the fewest tool calls that ever solved each
    prompt, keyed by split ("train", "val") and then prompt id. The split keeps validation rows
    out of the training minimum: both are numbered by row, so row 3 of each would otherwise share
    one entry.
    """

    min_tool_calls: dict[str, dict[str, int]] = field(default_factory=dict)

    def fewest_calls(self, split: str) -> dict[str, int]:
        """The remembered minimum per prompt id of one split (created empty on first use)."""
        return self.min_tool_calls.setdefault(split, {})

    def to_dict(self) -> dict[str, Any]:
        return {"min_tool_calls": {split: dict(m) for split, m in self.min_tool_calls.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "RewardState":
        stored = (data or {}).get("min_tool_calls") or {}
        if any(not isinstance(v, dict) for v in stored.values()):
            # Checkpoints written before the split existed hold the training minimum only.
            stored = {TRAIN_SPLIT: stored}
        return cls(
            min_tool_calls={str(split): {str(k): int(v) for k, v in minima.items()} for split, minima in stored.items()}
        )


@dataclass(frozen=True)
class RewardContext:
    """Everything a reward needs besides the completions: validated params and where training is.

    `step` is the run's training step, counted from 0; `split` says whose rollouts these are
    ("train", or "val" for evaluation), so that state learned in one never leaks into the other.
    """

    params: dict[str, Any]
    step: int = 0
    prompt_id: str | None = None
    state: RewardState = field(default_factory=RewardState)
    split: str = TRAIN_SPLIT


@dataclass(frozen=True)
class Response:
    """One completion as rewards see it: the text, its protocol, and what only a structured
    trajectory knows (execution statuses, truncation). From plain text those are inferred."""

    text: str
    protocol: Protocol
    executions: tuple[ToolExecution, ...] | None = None
    truncated: bool = False
    # The environment's result of the trajectory (Completion.outcome): the swe environment's patch and tests.
    outcome: dict[str, Any] | None = None

    @property
    def tool_outputs(self) -> int | None:
        return None if self.executions is None else len(self.executions)

    @property
    def model_text(self) -> str:
        return self.protocol.model_text(self.text, tool_outputs=self.tool_outputs)

    @property
    def tool_calls(self) -> int:
        if self.executions is not None:
            return len(self.executions)
        return self.protocol.count_tool_calls(self.text)

    @property
    def call_failures(self) -> list[bool]:
        """Per executed call, whether it failed: from statuses when known, else from the output text."""
        if self.executions is not None:
            return [not e.ok for e in self.executions]
        return [output_failed(t) for t in self.protocol.tool_texts(self.text)]

    @property
    def final_answer(self) -> str | None:
        return self.protocol.final_answer(self.text, tool_outputs=self.tool_outputs)


def as_response(completion: "str | Completion | Response", default_protocol: str) -> Response:
    """A completion given as text (read with the reward's own protocol) or as a Completion."""
    if isinstance(completion, Response):
        return completion
    if isinstance(completion, Completion):
        # A Completion built from text alone has no executions; its tool outputs are then read
        # from the text rather than taken to be none.
        return Response(
            text=completion.text,
            protocol=get_protocol(completion.protocol),
            executions=tuple(completion.executions) or None,
            truncated=completion.truncated,
            outcome=completion.outcome,
        )
    if isinstance(completion, str):
        return Response(text=completion, protocol=get_protocol(default_protocol))
    raise TypeError(f"a completion is a str or a Completion, not {type(completion).__name__}")


GroupReward = Callable[[list[Response], Any, RewardContext], list[RewardResult]]


class RewardParams(BaseModel):
    """The parameters of one reward: unknown keys and non-finite numbers are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class RegisteredReward:
    name: str
    func: GroupReward
    params: type[RewardParams]  # validates the reward's parameters and holds their paper defaults
    description: str  # one line, shown where a reward is chosen
    protocol: str  # how a plain-text completion is read
    # Scores what an environment made of the trajectory (Completion.outcome: the swe environment's graded patch),
    # not its text: a text alone, as the rewards page's "try it" sends, cannot be scored.
    needs_outcome: bool = False


# The combinator last; the papers' rewards by name.
REWARDS: Registry[RegisteredReward] = Registry(
    "reward", "trainer.rewards", order=lambda name, _: (name == "weighted", name)
)


def register_reward(
    name: str,
    *,
    params: type[RewardParams],
    description: str,
    protocol: str = "python_markdown",
    needs_outcome: bool = False,
) -> Callable[[GroupReward], GroupReward]:
    """Register a group reward under `name`, with the model of its parameters and its description."""

    def decorator(func: GroupReward) -> GroupReward:
        REWARDS.register(
            name,
            RegisteredReward(
                name=name,
                func=func,
                params=params,
                description=description,
                protocol=protocol,
                needs_outcome=needs_outcome,
            ),
        )
        return func

    return decorator


def registered(name: str) -> RegisteredReward:
    """The reward called `name`; UnknownName (a ValueError listing the names) otherwise."""
    return REWARDS.get(name)


def per_completion(
    score_one: Callable[[Response, Any, RewardContext], RewardResult],
) -> GroupReward:
    """A group reward that scores each completion on its own."""

    def group(responses: list[Response], ground_truth: Any, ctx: RewardContext) -> list[RewardResult]:
        return [score_one(r, ground_truth, ctx) for r in responses]

    group.__name__ = score_one.__name__
    group.__doc__ = score_one.__doc__
    return group
