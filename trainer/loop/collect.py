"""Collecting a step: roll out GRPO groups, score them with the run's reward, keep what the filters keep,
and measure it; evaluation does the same on the validation data.

The rollout itself (which engine samples, with which weights) is the loop's (trainer.loop.train):
these functions take it as `roll`, so that they read the same on-policy, off-policy and on Ray.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainer.config import RewardSpec, RunConfig
from trainer.loop.filters import StepFilter
from trainer.metrics.benchmarks import benchmark_metrics
from trainer.metrics.calls import call_metrics
from trainer.metrics.search import search_metrics
from trainer.metrics.step import ScoredCompletion, step_metrics, subset_metrics, validation_metrics
from trainer.metrics.swe import swe_metrics
from trainer.protocols import get_protocol
from trainer.rewards import TRAIN_SPLIT, VAL_SPLIT, RewardState, score_group
from trainer.rollout.multi_turn import RolloutResult, Trajectory
from trainer.trajectory import Completion, Example

# The extra_info key whose value splits step and validation metrics into subsets
# (trainer.metrics.step.subset_metrics): the arithmetic set labels every problem easy or hard.
METRIC_SUBSET_KEY = "difficulty"


@dataclass
class Group:
    """The G rollouts of one prompt and their rewards."""

    index: int
    example: Example
    trajectories: list[Trajectory]
    rewards: list[Any] = field(default_factory=list)

    @property
    def scored(self) -> list[ScoredCompletion]:
        return [ScoredCompletion(t.completion, r) for t, r in zip(self.trajectories, self.rewards, strict=True)]


@dataclass
class Collected:
    """A step's kept groups and metrics, made into the update's mini-batches with the old log-probs
    of the behaviour copy, which held policy version `version` (async_rollouts)."""

    groups: list[Group]
    metrics: dict[str, float]
    mini_batches: list[list[dict[str, Any]]]
    version: int


class Roll(Protocol):
    """Roll out `group_size` responses per (row, example), greedily or at `temperature` (None: the run's); the
    groups, unscored, and the rollout's timings."""

    def __call__(
        self,
        examples: Sequence[tuple[int, Example]],
        *,
        group_size: int,
        seed: int,
        greedy: bool = False,
        temperature: float | None = None,
    ) -> tuple[list[Group], RolloutResult]: ...


Score = Callable[[list[Group], int, str], None]


def subset_label(example: Example, key: str = METRIC_SUBSET_KEY) -> str | None:
    """The subset an example's metrics are also reported under: its extra_info[key], if any."""
    value = (example.extra_info or {}).get(key)
    return None if value is None else str(value)


def draw_rows(data: Sequence[Example], *, seed: int, step: int, attempt: int, count: int) -> list[tuple[int, Example]]:
    """A seeded draw per (step, attempt): the same on a resumed run as on an uninterrupted one."""
    rng = random.Random(f"{seed}:{step}:{attempt}")
    indices = rng.sample(range(len(data)), min(count, len(data)))
    return [(i, data[i]) for i in indices]


def score_groups(
    groups: list[Group], reward: RewardSpec, *, step: int, state: RewardState, split: str = TRAIN_SPLIT
) -> None:
    """Score each group with the run's reward; `split` keeps evaluation's reward state (OTC-GRPO's
    minimum) apart from training's, since validation prompt ids are row numbers like training ones."""
    for group in groups:
        group.rewards = score_group(
            reward.name,
            [t.completion for t in group.trajectories],
            group.example.ground_truth,
            params=reward.params,
            step=step,
            prompt_id=group.example.id,
            state=state,
            split=split,
        )


def collect_step(
    config: RunConfig,
    step: int,
    *,
    roll: Roll,
    draw: Callable[[int, int, int], list[tuple[int, Example]]],
    score: Score,
) -> tuple[list[Group], dict[str, float]]:
    """Roll out and score a step's groups, refilling filtered-out groups up to the resample limit;
    the kept groups' dropped samples are masked from the loss (trainer.loop.filters)."""
    wanted, group_size = config.rollout.prompts_per_step, config.rollout.group_size
    step_filter = StepFilter(config.filtering)
    kept: list[Group] = []
    timing = {"timing_s/gen": 0.0, "timing_s/tool": 0.0, "timing_s/rollout": 0.0, "reward_s": 0.0}
    seen: list[Group] = []
    for attempt in range(config.filtering.max_resample_batches + 1):
        need = wanted - len(kept)
        if need <= 0:
            break
        groups, result = roll(
            draw(step, attempt, need if attempt else wanted),
            group_size=group_size,
            seed=config.seed * 1_000_003 + step * 101 + attempt,
        )
        timing["timing_s/gen"] += result.gen_s
        timing["timing_s/tool"] += result.tool_s
        timing["timing_s/rollout"] += result.wall_s
        started = time.perf_counter()
        score(groups, step, TRAIN_SPLIT)
        timing["reward_s"] += time.perf_counter() - started
        seen += groups
        kept += [g for g in groups if step_filter.keep(g.rewards)][:need]
    for group in kept:
        group.trajectories = step_filter.train_on(group.trajectories, group.rewards)
    # Metrics describe everything sampled; the update uses only the kept groups.
    metrics = step_metrics([g.scored for g in seen])
    metrics.update(subset_metrics([g.scored for g in seen], [subset_label(g.example) for g in seen], prefix="train/"))
    metrics.update(group_call_metrics(seen, config.tools.protocol))
    metrics.update(swe_metrics(t.completion for g in seen for t in g.trajectories))
    metrics.update(search_metrics(_rollouts(seen)))
    metrics["groups/kept"] = float(len(kept))
    metrics["groups/sampled"] = float(len(seen))
    metrics.update(step_filter.metrics())
    metrics["timing_s/reward"] = timing.pop("reward_s")
    metrics.update(timing)
    return kept, metrics


@dataclass
class Evaluation:
    """An evaluation's metrics, and the groups of the pass they describe sample by sample: the greedy
    pass, or with k > 1 samples per prompt the sampled one (what an evaluation run reports as trajectories)."""

    metrics: dict[str, float]
    groups: list[Group]


def evaluate_step(config: RunConfig, val_data: Sequence[Example], step: int, *, roll: Roll, score: Score) -> Evaluation:
    """Greedy accuracy, and with schedule.eval_pass_k = k > 1 a pass of k samples per prompt at
    schedule.eval_temperature (avg@k, pass@k), on the validation data: over all of it under ``val/``, and
    per benchmark (the rows of each data source) under ``bench/<source>/`` with their mean
    (trainer.metrics.benchmarks)."""
    if not val_data:
        return Evaluation({}, [])
    examples = list(enumerate(val_data))
    greedy, _ = roll(examples, group_size=1, seed=step, greedy=True)
    score(greedy, step, VAL_SPLIT)
    metrics = validation_metrics([g.scored for g in greedy], k=1)
    metrics.update(subset_metrics([g.scored for g in greedy], [subset_label(g.example) for g in greedy], prefix="val/"))
    metrics.update(group_call_metrics(greedy, config.tools.protocol, prefix="val/"))
    metrics.update(swe_metrics((t.completion for g in greedy for t in g.trajectories), prefix="val/"))
    metrics.update(search_metrics(_rollouts(greedy), prefix="val/"))
    by_benchmark = {source: pass_metrics(config, groups) for source, groups in _by_source(greedy).items()}
    reported = greedy
    k = config.schedule.eval_pass_k
    if k > 1:
        sampled, _ = roll(examples, group_size=k, seed=step, temperature=config.schedule.eval_temperature)
        score(sampled, step, VAL_SPLIT)
        pass_k = validation_metrics([g.scored for g in sampled], k=k)
        metrics[f"val/pass@{k}"] = pass_k[f"val/pass@{k}"]
        metrics[f"val/avg@{k}"] = pass_k["val/accuracy"]
        for source, groups in _by_source(sampled).items():
            values = validation_metrics([g.scored for g in groups], k=k)
            by_benchmark[source] |= {f"avg@{k}": values["val/accuracy"], f"pass@{k}": values[f"val/pass@{k}"]}
        reported = sampled
    metrics.update(benchmark_metrics(by_benchmark))
    return Evaluation(metrics, reported)


def pass_metrics(config: RunConfig, groups: list[Group]) -> dict[str, float]:
    """The metrics of one pass over some groups, unprefixed: the step metrics, and the calls', swe's and
    search's where the run has them."""
    metrics = step_metrics([g.scored for g in groups])
    metrics.update(group_call_metrics(groups, config.tools.protocol))
    metrics.update(swe_metrics(t.completion for g in groups for t in g.trajectories))
    metrics.update(search_metrics(_rollouts(groups)))
    return metrics


def _by_source(groups: list[Group]) -> dict[str, list[Group]]:
    by_source: dict[str, list[Group]] = {}
    for group in groups:
        by_source.setdefault(group.example.data_source, []).append(group)
    return by_source


def _rollouts(groups: list[Group]) -> Iterator[tuple[Example, Completion, Any]]:
    """Each trajectory of `groups` with its example and reward."""
    for group in groups:
        for trajectory, reward in zip(group.trajectories, group.rewards, strict=True):
            yield group.example, trajectory.completion, reward


def group_call_metrics(groups: list[Group], protocol_name: str, prefix: str = "") -> dict[str, float]:
    """JSON calls against the ground-truth calls (trainer.metrics.calls), for runs whose calls are JSON:
    over all `groups` under `prefix`, and per subset as the other subset metrics are named
    (``train/<label>/calls/…``, ``val/<label>/calls/…``)."""
    protocol = get_protocol(protocol_name)
    if not protocol.json_calls:
        return {}

    def texts(members: list[Group]) -> Iterator[tuple[Any, list[str]]]:
        return (
            (
                g.example.ground_truth,
                [protocol.model_text(s.completion.text, tool_outputs=len(s.completion.executions)) for s in g.scored],
            )
            for g in members
        )

    metrics = call_metrics(texts(groups), prefix=prefix, protocol=protocol_name)
    by_label: dict[str, list[Group]] = {}
    for group in groups:
        if (label := subset_label(group.example)) is not None:
            by_label.setdefault(label, []).append(group)
    for label in sorted(by_label):
        labelled = f"{prefix or 'train/'}{label}/"
        metrics.update(call_metrics(texts(by_label[label]), prefix=labelled, protocol=protocol_name))
    return metrics
