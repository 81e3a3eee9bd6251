"""verl's rollout dumps read as tirlab's step metrics and trajectories.

With `trainer.rollout_data_dir` set, verl writes each training step's samples to `{step}.jsonl`, one
line per sample: `input` and `output` (the decoded prompt and response, tool output included),
`gts`, `score`, `step`, and every key of the reward function's extra info (verl 0.9.1
verl/trainer/ppo/ray_trainer.py:454-477 `_write_generations`, called from `_log_rollout_data`,
:514-546). tirlab's reward adapter (trainer.verl.reward) puts `correct` and `tool_calls` there, so
the headline metrics verl has no equivalent for are computed per sample, by the same function as
tirlab's own trainer uses (trainer.metrics.step.step_metrics), and whole GRPO groups become the
run's trajectories, their turns split by the run's protocol.

Nothing here imports verl: the launch wrapper (trainer.verl.launch) runs it beside verl's process.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainer.config import RunConfig
from trainer.contract import RESPONSE_LENGTH_MEAN, TrajectoryIn, TurnIn
from trainer.metrics.step import ScoredCompletion, step_metrics
from trainer.protocols import get_protocol
from trainer.report.client import Reporter, jsonable
from trainer.trajectory import Completion, RewardResult

# The extra-info keys of trainer.verl.reward that are not reward components.
NOT_COMPONENTS = frozenset({"score", "correct", "tool_calls", "acc", "input", "output", "gts", "step", "request_id"})
# verl logs the response lengths itself, in tokens (verl/trainer/ppo/metric_utils.py compute_data_metrics),
# under the names tirlab's trainer uses: a count of characters here must not overwrite them.
VERL_OWN_KEYS = frozenset({RESPONSE_LENGTH_MEAN, "response_length/max", "response_length/clip_ratio"})


class DumpError(ValueError):
    """A dump line that is not one of verl's samples with tirlab's reward extras."""


def dumped_steps(folder: Path) -> list[tuple[int, Path]]:
    """The steps dumped in `folder` so far, in order, with their files."""
    if not folder.is_dir():
        return []
    found = [(int(path.stem), path) for path in folder.glob("*.jsonl") if path.stem.isdigit()]
    return sorted(found)


def read_dump(path: Path) -> list[dict[str, Any]]:
    """The samples of one step's dump; DumpError names the line that lacks what tirlab reads."""
    samples = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        sample = json.loads(line)
        missing = [key for key in ("input", "output", "score", "correct", "tool_calls") if key not in sample]
        if missing:
            raise DumpError(
                f"{path.name}:{number} lacks {', '.join(missing)}: is the run's reward tirlab's adapter "
                "(trainer/verl/reward.py)?"
            )
        samples.append(sample)
    return samples


def groups_of(samples: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The GRPO groups of a step: the samples of one prompt, in the order verl wrote them (a dump has
    no group id; the `n` samples of a prompt share its decoded text)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        groups.setdefault(sample["input"], []).append(sample)
    return list(groups.values())


def _scored(sample: dict[str, Any], protocol: str) -> ScoredCompletion:
    reward = RewardResult(
        total=float(sample["score"]),
        components=_components(sample),
        correct=bool(sample["correct"]),
    )
    return ScoredCompletion(Completion(text=sample["output"], protocol=protocol), reward, int(sample["tool_calls"]))


def _components(sample: dict[str, Any]) -> dict[str, float]:
    return {
        key: float(value)
        for key, value in sample.items()
        if key not in NOT_COMPONENTS and isinstance(value, int | float) and not isinstance(value, bool)
    }


def dump_metrics(samples: list[dict[str, Any]], *, protocol: str) -> dict[str, float]:
    """The step's metrics computed per sample (accuracy, tool-call ratio, code-in-correct, tool
    productivity, calls per response …), less those verl logs itself."""
    groups = [[_scored(sample, protocol) for sample in group] for group in groups_of(samples)]
    return {key: value for key, value in step_metrics(groups).items() if key not in VERL_OWN_KEYS}


def dump_trajectories(samples: list[dict[str, Any]], *, step: int, protocol: str, groups: int) -> list[TrajectoryIn]:
    """The first `groups` GRPO groups of the step as trajectories, their turns split by the protocol."""
    rules = get_protocol(protocol)
    out = []
    for position, group in enumerate(groups_of(samples)[:groups]):
        for index, sample in enumerate(group):
            text = sample["output"]
            turns, before = [], ""
            for segment in rules.segments(text):
                call = rules.extract_call(before) if segment.kind == "tool" else None
                turns.append(TurnIn(kind=segment.kind, text=segment.text, call=call))
                before = segment.text
            out.append(
                TrajectoryIn(
                    step=step,
                    prompt_index=position,
                    sample_index=index,
                    prompt=sample["input"],
                    turns=turns,
                    final_answer=rules.final_answer(text) or "",
                    ground_truth=jsonable(sample.get("gts")),
                    reward=float(sample["score"]),
                    reward_components=_components(sample),
                    correct=bool(sample["correct"]),
                    tool_call_count=int(sample["tool_calls"]),
                )
            )
    return out


def new_steps(folder: Path, seen: set[int], *, final: bool = False) -> Iterable[tuple[int, Path]]:
    """The dumped steps not in `seen`. While verl runs, the newest dump is left for later: verl writes
    it from a background thread and it may be half-written; `final` (verl has exited) reads it too."""
    steps = dumped_steps(folder)
    for position, (step, path) in enumerate(steps):
        if step not in seen and (final or position < len(steps) - 1):
            yield step, path


def publish_dumps(config: RunConfig, folder: Path, reporter: Reporter, seen: set[int], *, final: bool = False) -> None:
    """Report the rollout dumps verl has finished writing in `folder` since the last call (steps in `seen`
    are done): the step's per-sample metrics, and its first `rollout.trajectories_to_report` groups."""
    for step, path in new_steps(folder, seen, final=final):
        seen.add(step)
        try:
            samples = read_dump(path)
        except (DumpError, json.JSONDecodeError) as exc:
            reporter.log(f"step {step}: verl's rollout dump is not readable: {exc}", level="warning")
            continue
        protocol = config.tools.protocol
        reporter.log_metrics(step, dump_metrics(samples, protocol=protocol))
        groups = config.rollout.trajectories_to_report
        if groups:
            reporter.log_trajectories(dump_trajectories(samples, step=step, protocol=protocol, groups=groups))
