"""weighted: a weighted sum of other rewards, for experiments.

Each term is scored with its own parameters on the same group (so OTC-GRPO terms still see the
group) and the totals are added with their weights. Components are the weighted term totals by
term name (a name used twice gets "@2", "@3", so it stays a metric key: see trainer.contract);
`correct` is the first term's, the primary reward by convention.
"""

import dataclasses
from typing import Any

from pydantic import Field, field_validator, model_validator

from trainer.rewards.base import REWARDS, Response, RewardContext, RewardParams, register_reward, registered
from trainer.rewards.params import validate_reward_params
from trainer.trajectory import RewardResult


def term_rewards() -> tuple[str, ...]:
    """The rewards a term may name: every registered one but weighted itself."""
    return tuple(name for name in REWARDS.names() if name != "weighted")


def _term_reward_choices(schema: dict[str, Any]) -> None:
    # Read from the registry when the schema is drawn, so a new reward's file is all it takes.
    schema["enum"] = list(term_rewards())


class WeightedTerm(RewardParams):
    """One reward of a weighted sum, with its own parameters."""

    name: str = Field(
        description="Reward name of this term (any reward except weighted).", json_schema_extra=_term_reward_choices
    )
    weight: float = Field(1.0, description="Multiplier applied to this term's reward.")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of this term's reward, validated against its own schema."
    )

    @field_validator("name")
    @classmethod
    def _a_reward_but_weighted(cls, name: str) -> str:
        if name not in term_rewards():
            raise ValueError(f"a term names a reward other than weighted, one of: {', '.join(term_rewards())}")
        return name

    @model_validator(mode="after")
    def _validate_params(self) -> "WeightedTerm":
        self.params = validate_reward_params(self.name, self.params)
        return self


class WeightedParams(RewardParams):
    """Weighted sum of other rewards."""

    terms: list[WeightedTerm] = Field(
        default_factory=lambda: [WeightedTerm(name="torl")],
        min_length=1,
        description="Rewards to add up, each with a weight and its own parameters (at least one).",
    )


@register_reward(
    "weighted",
    params=WeightedParams,
    description="Weighted sum of other rewards, each with its own parameters.",
)
def weighted(responses: list[Response], ground_truth: Any, ctx: RewardContext) -> list[RewardResult]:
    totals = [0.0] * len(responses)
    components: list[dict[str, float]] = [{} for _ in responses]
    details: list[dict[str, Any]] = [{} for _ in responses]
    correct: list[bool] = [False] * len(responses)
    seen: dict[str, int] = {}
    for index, term in enumerate(ctx.params["terms"]):
        name, weight = term["name"], float(term["weight"])
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}@{seen[name]}"
        term_ctx = dataclasses.replace(ctx, params=term["params"])
        for i, result in enumerate(registered(name).func(responses, ground_truth, term_ctx)):
            totals[i] += weight * result.total
            components[i][key] = weight * result.total
            details[i][key] = {"total": result.total, "components": result.components, **result.details}
            if index == 0:
                correct[i] = result.correct
    return [
        RewardResult(total=t, components=c, correct=ok, details=d)
        for t, c, ok, d in zip(totals, components, correct, details, strict=True)
    ]
