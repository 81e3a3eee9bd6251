"""weighted: a weighted sum of other rewards, for experiments.

Each term is scored with its own parameters on the same group (so OTC-GRPO terms still see the
group) and the totals are added with their weights. Components are the weighted term totals by
term name (a name used twice gets "@2", "@3", so it stays a metric key: see trainer.contract);
`correct` is the first term's, the primary reward by convention.
"""

import dataclasses
from typing import Any

from trainer.rewards.base import Response, RewardContext, register_reward, registered
from trainer.trajectory import RewardResult


@register_reward("weighted")
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
