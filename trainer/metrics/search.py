"""Step metrics of search trajectories, from each one's search outcome (trainer.envs.search).

Search-R1's own (its trainer's env/ metrics, PeterGriffinJin/Search-R1 @a14dc3a
verl/trainer/ppo/ray_trainer.py:266-276):

- ``search/actions/mean``: env/number_of_actions/mean, the turns Search-R1 counts (1 + searches + invalid turns);
- ``search/valid_actions/mean``: env/number_of_valid_action, turns whose action was a search or an answer;
- ``search/valid_action_ratio``: env/ratio_of_valid_action, the mean over trajectories of the two above's ratio;
- ``search/valid_searches/mean``: env/number_of_valid_search, search actions (the last turn's counted).

And what OTC and a researcher read off a search run:

- ``search/searches/mean``: searches run per question (OTC's TC); ``tool_productivity`` (the step metrics) is
  OTC's TP, correct answers over searches;
- ``search/answered_ratio``, ``search/max_turns_ratio``, ``search/context_full_ratio``: how trajectories ended;
- per data source (Search-R1's rows: nq, hotpotqa, …; the minis: search-mini-0hop, -1hop, -2hop):
  ``search/<source>/em`` (the share marked correct: exact match under the search_r1 and OTC rewards) and
  ``search/<source>/searches/mean``.

Validation gives the same names under ``val/``. Absent when no trajectory of the step has a search outcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from statistics import mean

from trainer.trajectory import Completion, Example, RewardResult

_UNSAFE = re.compile(r"[^\w.\-]+")


def source_name(data_source: str) -> str:
    """A data source as part of a metric name (letters, digits, '_', '.', '-'; the rest become '_')."""
    return _UNSAFE.sub("_", data_source).strip("_") or "unknown"


def search_metrics(
    rollouts: Iterable[tuple[Example, Completion, RewardResult]], *, prefix: str = ""
) -> dict[str, float]:
    items = [
        (example, completion.outcome, reward)
        for example, completion, reward in rollouts
        if completion.outcome and completion.outcome.get("kind") == "search"
    ]
    if not items:
        return {}
    outcomes = [outcome for _, outcome, _ in items]
    ends = [o.get("end") for o in outcomes]
    actions = [max(int(o.get("actions", 1)), 1) for o in outcomes]
    valid = [int(o.get("valid_actions", 0)) for o in outcomes]
    metrics = {
        "search/actions/mean": mean(actions),
        "search/valid_actions/mean": mean(valid),
        "search/valid_action_ratio": mean(v / a for v, a in zip(valid, actions, strict=True)),
        "search/valid_searches/mean": mean(int(o.get("valid_searches", 0)) for o in outcomes),
        "search/searches/mean": mean(len(o.get("searches") or []) for o in outcomes),
        "search/answered_ratio": mean(e == "answered" for e in ends),
        "search/max_turns_ratio": mean(e == "max_turns" for e in ends),
        "search/context_full_ratio": mean(e == "context_full" for e in ends),
    }
    by_source: dict[str, list[tuple[dict, RewardResult]]] = {}
    for example, outcome, reward in items:
        by_source.setdefault(source_name(example.data_source), []).append((outcome, reward))
    for source in sorted(by_source):
        members = by_source[source]
        metrics[f"search/{source}/em"] = mean(bool(reward.correct) for _, reward in members)
        metrics[f"search/{source}/searches/mean"] = mean(len(o.get("searches") or []) for o, _ in members)
    return {f"{prefix}{name}": float(value) for name, value in metrics.items()}
