"""Benchmark: the quickstart trained synchronously against one step off-policy (`skyrl-async`), side by side.

Each arm is `python -m trainer run` in a subprocess, N steps from the shipped cold start:

- `sync`: the `quickstart` preset as shipped (sample, then train: verl's loop). **Baseline.**
- `sync-1-thread`: the same with OMP_NUM_THREADS=1. A control: on CPU the asynchronous run gives
  its update one core and the background rollout the other (trainer.rollout.off_policy.cpu_split), and
  a one-thread update alone can be faster or slower than two threads on a busy machine; this arm
  tells that apart from the overlap itself.
- `async`: the `skyrl-async` preset (the quickstart with rollout.async_rollouts on): step t+1 is
  rolled out while step t trains.

Repeat r runs every arm with seed r, the arms taking turns going first, so a change of load
favours none of them and the seeds show how far the curves spread by chance. Printed per arm:
medians over the repeats of each run's median `timing_s/step`, `timing_s/wait_rollout` (what a
step waited for its rollout: all of it when synchronous) and `timing_s/train`, the run's wall
time, and the learning curve's end (means of the last 3 steps: accuracy, tool use, hard-problem
accuracy), with the range over the seeds; then each arm's step time as a ratio to the sync
baseline's measured in the same run.

    .venv/bin/python bench/async_training.py                       # 3 arms x 3 seeds x 10 steps
    .venv/bin/python bench/async_training.py --steps 20 --repeats 5
    .venv/bin/python bench/async_training.py --steps 3 --repeats 1  # smoke check
    .venv/bin/python bench/async_training.py --preset zerotir-mini --steps 20 --repeats 2 --arms sync,async
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainer.presets import preset_config  # noqa: E402 - after the path set-up above


def arms_for(preset: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Arm name -> (preset, extra environment): `preset` as is, on one thread, and its async version
    ('skyrl-async' for the quickstart, '<mini>-async' for a CPU mini)."""
    return {
        "sync": (preset, {}),
        "sync-1-thread": (preset, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}),
        "async": ("skyrl-async" if preset == "quickstart" else f"{preset}-async", {}),
    }


ARMS = arms_for("quickstart")
BASELINE = "sync"
CURVE_END = 3  # steps averaged for the end of the learning curve
TIMINGS = ("timing_s/step", "timing_s/wait_rollout", "timing_s/train")
ENDS = ("accuracy", "tool_call_ratio", "train/hard/accuracy")


def err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Arm:
    name: str
    runs: list[dict[str, float]] = field(default_factory=list)  # one summary per repeat

    def median(self, key: str) -> float:
        return statistics.median(run[key] for run in self.runs)

    def spread(self, key: str) -> str:
        values = [run[key] for run in self.runs]
        return f"{min(values):.2f}..{max(values):.2f}"


def run_arm(
    name: str,
    *,
    seed: int,
    steps: int,
    model_cache: Path,
    tmp: Path,
    arms: dict[str, tuple[str, dict[str, str]]] = ARMS,
) -> dict[str, float]:
    """One run of arm `name`; its median timings, wall time and the end of its learning curve."""
    preset, env = arms[name]
    config = preset_config(preset).model_dump(mode="json")
    config["seed"] = seed
    out = tmp / f"{name}-seed{seed}"
    config_file = out.with_suffix(".json")
    config_file.write_text(json.dumps(config))
    argv = [sys.executable, "-m", "trainer", "run", "--config", str(config_file), "--max-steps", str(steps),
            "--out", str(out), "--model-cache", str(model_cache)]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        err(done.stderr[-3000:])
        raise SystemExit(f"arm {name!r} (seed {seed}) failed with exit code {done.returncode}")
    values = [json.loads(line)["values"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    summary = {key: statistics.median(v[key] for v in values) for key in TIMINGS}
    summary.update({key: statistics.mean(v[key] for v in values[-CURVE_END:]) for key in ENDS})
    summary["wall_s"] = wall
    summary["staleness"] = statistics.mean(v["async/staleness"] for v in values)
    err(
        f"{name} seed {seed}: wall {wall:.1f}s, median step {summary['timing_s/step']:.2f}s "
        f"(waited {summary['timing_s/wait_rollout']:.2f}s, train {summary['timing_s/train']:.2f}s), "
        f"end accuracy {summary['accuracy']:.3f} tool use {summary['tool_call_ratio']:.3f}"
    )
    return summary


def print_table(arms: Sequence[Arm], steps: int, repeats: int, load_before: float, preset: str = "quickstart") -> None:
    print(
        f"preset={preset} cores={os.cpu_count()} loadavg(before)={load_before:.2f} "
        f"loadavg(after)={os.getloadavg()[0]:.2f} "
        f"steps={steps} repeats={repeats} (medians over repeats; curve end = mean of the last {CURVE_END} steps)"
    )
    print(
        "| arm | step s | waited for rollout s | train s | run wall s | staleness | accuracy (end) "
        "| tool use (end) | hard accuracy (end) | sync/arm step time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = {arm.name: arm for arm in arms}[BASELINE].median("timing_s/step")
    for arm in arms:
        ends = " | ".join(f"{arm.median(key):.3f} ({arm.spread(key)})" for key in ENDS)
        print(
            f"| {arm.name} | {arm.median('timing_s/step'):.2f} | {arm.median('timing_s/wait_rollout'):.2f} "
            f"| {arm.median('timing_s/train'):.2f} | {arm.median('wall_s'):.1f} | {arm.median('staleness'):.2f} "
            f"| {ends} | x{base / arm.median('timing_s/step'):.2f} |"
        )
    for arm in arms:
        if arm.name != BASELINE:
            print(f"{BASELINE}/{arm.name} median step time: x{base / arm.median('timing_s/step'):.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="GRPO steps per run (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="seeds; every arm runs once per seed")
    parser.add_argument(
        "--preset",
        default="quickstart",
        help="the synchronous preset: quickstart (async arm: skyrl-async) or a CPU mini (async arm: <mini>-async)",
    )
    parser.add_argument(
        "--arms", default=",".join(ARMS), help=f"comma-separated, from: {', '.join(ARMS)} (default: all)"
    )
    parser.add_argument(
        "--model-cache",
        type=Path,
        default=Path(
            os.environ.get("TIRLAB_MODEL_CACHE") or Path(os.environ.get("TIRLAB_VAR_DIR") or REPO / "var") / "models"
        ),
        help="model cache (the shipped cold start needs none; default: $TIRLAB_MODEL_CACHE, else var/models)",
    )
    args = parser.parse_args(argv)
    arm_presets = arms_for(args.preset)
    try:
        for preset, _ in arm_presets.values():
            preset_config(preset)
    except KeyError as exc:
        parser.error(f"--preset {args.preset!r} has no async version: {exc}")
    names = [name.strip() for name in args.arms.split(",") if name.strip()]
    unknown = [name for name in names if name not in ARMS]
    if unknown or BASELINE not in names:
        parser.error(f"arms must include {BASELINE!r} and come from {list(ARMS)}; got {names}")
    load_before = os.getloadavg()[0]
    arms = [Arm(name) for name in names]
    with tempfile.TemporaryDirectory(prefix="tl-async-bench-") as tmp:
        for repeat in range(args.repeats):
            # The arms take turns going first, so a load change favours none of them.
            order = arms[repeat % len(arms) :] + arms[: repeat % len(arms)]
            for arm in order:
                arm.runs.append(
                    run_arm(
                        arm.name,
                        seed=repeat,
                        steps=args.steps,
                        model_cache=args.model_cache,
                        tmp=Path(tmp),
                        arms=arm_presets,
                    )
                )
    print_table(arms, args.steps, args.repeats, load_before, args.preset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
