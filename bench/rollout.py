"""Benchmark: the asynchronous multi-turn rollout against a synchronous batch loop, same prompts.

The asynchronous loop is trainer.rollout.multi_turn's `arollout` (each trajectory advances on its own; a
tool call starts the moment its sequence stops, and when it returns the trajectory's next turn
joins the running engine call at its next decode step: continuous batching). `async-calls` is the
same loop with continuous batching off: a ready turn waits for the engine call in progress, then
takes the next one with whatever else is pending. The baseline, bench/_sync_rollout.py, is ToRL's
and verl's loop: generate for every active trajectory and wait for the whole batch, run every tool
call and wait for the last one, next turn. All run the real sandbox (`sandbox.arun`) and the same
per-trajectory code, with the same seeds.

Two cases:

- `hf`: the quickstart's cold-started tiny model on CPU through HFEngine, at the quickstart's
  batch (16 prompts x 8) and rollout settings (one tool call, 256 response tokens, temperature 1).
- `cost`: CostModelEngine (bench/_cost_model.py), whose calls take a GPU-like time (a fixed cost
  per decode step for the whole batch), with a scripted policy making 1-3 tool calls of long-tailed
  latency per trajectory.

Each case runs `--repeats` times, rotating which loop goes first; the table gives medians, the
ratio of the sync median to each loop's, and the generation / tool time of each loop. The work
check compares the trajectories with the sync loop's: they must be identical for the scripted
policy; for the sampled model, batch composition can change floating-point sums and with them a
sample, so the table reports how many were identical.

For the cost model the table also gives each loop's longest chain: the most time one of its
trajectories needs on its own (its decode steps at the model's step cost plus its tool calls as
they ran), which no scheduler of one batch can beat; sync / chain is the most a loop could gain.

`--train-s X` adds training steps to the cost case (`--steps` of them, each a rollout then an update
of X seconds, a sleep like the cost model's GPU time): the sync loop then training, the async loop
then training, and the async loop one step off-policy (trainer.rollout.off_policy's RolloutPipeline:
step k+1's rollout runs while step k trains). It prints the median step time of each and its ratio
to the sync one.

    .venv/bin/python bench/rollout.py                      # both cases, 3 repeats
    .venv/bin/python bench/rollout.py --cases cost         # only the cost model
    .venv/bin/python bench/rollout.py --quick              # smoke check: small cost-model run (~15 s)
    .venv/bin/python bench/rollout.py --cases hf --model-cache /tmp/qs/models --repeats 9
    .venv/bin/python bench/rollout.py --cases cost --repeats 1 --train-s 14 --steps 4
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sandbox  # noqa: E402 - after the path set-up above
from bench._cost_model import CostModel, CostModelEngine, ScriptedPolicy  # noqa: E402
from bench._sync_rollout import sync_rollout  # noqa: E402
from trainer.config import TINY_MODEL  # noqa: E402
from trainer.data.datasets import load_dataset  # noqa: E402
from trainer.engines.base import Engine, Tokenizer  # noqa: E402
from trainer.models import TINY_PROMPT_TEMPLATE  # noqa: E402
from trainer.presets import preset_config  # noqa: E402
from trainer.protocols.prompts import apply_template  # noqa: E402
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings, arollout  # noqa: E402
from trainer.rollout.off_policy import RolloutPipeline  # noqa: E402


@dataclass(frozen=True)
class Work:
    """What a rollout did, to check that both loops did the same."""

    trajectories: int
    tool_calls: int
    model_tokens: int
    tool_tokens: int

    @classmethod
    def of(cls, result: RolloutResult) -> Work:
        return cls(
            trajectories=len(result.trajectories),
            tool_calls=sum(len(t.completion.executions) for t in result.trajectories),
            model_tokens=sum(t.completion.response_tokens for t in result.trajectories),
            tool_tokens=sum(sum(t.tool_mask) for t in result.trajectories),
        )


@dataclass(frozen=True)
class Case:
    name: str
    engine: Engine
    prompts: list[list[int]]
    settings: RolloutSettings
    loops: tuple[str, ...]
    exact: bool  # every loop must produce the baseline's trajectories exactly
    warm_up: bool = False  # one untimed run of each loop first (torch's first calls are slow)
    step_s: float | None = None  # the cost model's seconds per decode step: gives the longest chain


def arithmetic_prompts(tokenizer: Tokenizer, count: int, group_size: int, *, seed: int) -> list[list[int]]:
    """`count` quickstart prompts (the trainer's template and chat format), each repeated `group_size` times."""
    examples = load_dataset("arithmetic", split="train", seed=seed)[:count]
    prompts = []
    for example in examples:
        messages = apply_template(example, "python_markdown", TINY_PROMPT_TEMPLATE)
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompts += [tokenizer.encode(text, add_special_tokens=False)] * group_size
    return prompts


# The baseline first: every other loop is compared with it.
LOOPS = ("sync", "async-calls", "async")


def hf_case(model_cache: Path, *, prompts: int, group_size: int, seed: int) -> Case:
    from trainer.engines.hf import HFEngine
    from trainer.models import load_policy

    model, tokenizer = load_policy(TINY_MODEL, cache_dir=model_cache, log=lambda m: print(m, file=sys.stderr))
    # One intra-op thread, as the trainer runs the tiny model (see trainer.loop.train).
    engine = HFEngine(model, tokenizer, num_threads=1)
    return Case(
        name=f"hf tiny-char CPU, {prompts}x{group_size}",
        engine=engine,
        prompts=arithmetic_prompts(tokenizer, prompts, group_size, seed=seed),
        settings=RolloutSettings.from_config(preset_config("quickstart")),
        loops=LOOPS,
        exact=False,
        warm_up=True,
    )


def cost_case(trajectories: int, cost: CostModel, policy: ScriptedPolicy, *, seed: int) -> Case:
    engine = CostModelEngine(cost, policy)
    return Case(
        name=f"cost model {cost.step_s * 1000:g} ms/step, {trajectories} traj"
        + (
            f", {policy.long_think_fraction:g} long turns of {policy.long_think_min}-{policy.long_think_max}"
            if policy.long_think_fraction
            else ""
        )
        + (f", up to {policy.max_calls} calls" if policy.max_calls != ScriptedPolicy.max_calls else ""),
        engine=engine,
        prompts=arithmetic_prompts(engine.tokenizer, trajectories, 1, seed=seed),
        settings=RolloutSettings(protocol="python_markdown", max_tool_calls=policy.max_calls, max_response_tokens=4096),
        loops=LOOPS,
        exact=True,
        step_s=cost.step_s,
    )


def run_loop(loop: str, case: Case, seed: int) -> RolloutResult:
    if loop == "sync":
        coroutine = sync_rollout(case.engine, case.prompts, case.settings, seed=seed)
    elif loop == "async":
        coroutine = arollout(case.engine, case.prompts, case.settings, seed=seed)
    else:
        settings = dataclasses.replace(case.settings, continuous_batching=False)
        coroutine = arollout(case.engine, case.prompts, settings, seed=seed)
    result = asyncio.run(coroutine)
    clear = getattr(case.engine, "clear_cache", None)
    if clear is not None:
        clear()
    return result


def longest_chain(result: RolloutResult, step_s: float) -> float:
    """The most time one trajectory needs on its own: its decode steps and its tool calls."""
    return max(
        t.completion.response_tokens * step_s + sum(e.duration_ms for e in t.completion.executions) / 1000
        for t in result.trajectories
    )


def identical(a: RolloutResult, b: RolloutResult) -> int:
    return sum(
        x.completion.text == y.completion.text and x.response_ids == y.response_ids and x.loss_mask == y.loss_mask
        for x, y in zip(a.trajectories, b.trajectories, strict=True)
    )


@dataclass
class Row:
    """One loop of one case over the repeats."""

    case: str
    loop: str
    results: list[RolloutResult]
    same_as_sync: list[int]
    step_s: float | None = None

    def median(self, field: str) -> float:
        return statistics.median(getattr(r, field) for r in self.results)

    def chain(self) -> float | None:
        """Median longest chain (cost model only)."""
        if self.step_s is None:
            return None
        return statistics.median(longest_chain(r, self.step_s) for r in self.results)


def measure(case: Case, repeats: int, seed: int) -> list[Row]:
    rows = {loop: Row(case.name, loop, [], [], case.step_s) for loop in case.loops}
    if case.warm_up:
        for loop in case.loops:
            run_loop(loop, case, seed + 1_000_000)
    for repeat in range(repeats):
        # Rotate which loop goes first, so a load change favours none of them.
        order = case.loops[repeat % len(case.loops) :] + case.loops[: repeat % len(case.loops)]
        # A fresh seed per repeat, the same for every loop: they sample the same responses.
        results = {loop: run_loop(loop, case, seed + repeat) for loop in order}
        for loop in case.loops:
            r = results[loop]
            rows[loop].results.append(r)
            rows[loop].same_as_sync.append(identical(results["sync"], r))
            print(
                f"{case.name} repeat {repeat} {loop}: wall {r.wall_s:.2f}s gen {r.gen_s:.2f}s tool {r.tool_s:.2f}s "
                f"engine calls {len(r.batch_sizes)} {Work.of(r)}",
                file=sys.stderr,
            )
            if case.exact and Work.of(r) != Work.of(results["sync"]):
                raise RuntimeError(
                    f"{case.name}: {loop} did different work from sync: {Work.of(r)} vs {Work.of(results['sync'])}"
                )
    return list(rows.values())


def print_table(rows: Sequence[Row], repeats: int) -> None:
    print(f"loadavg(after)={os.getloadavg()[0]:.2f} repeats={repeats} (medians)")
    print(
        "| case | loop | wall s | gen s | tool s | sync/loop | engine calls | tool calls | model tokens "
        "| longest chain s | identical to sync |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    sync_wall = {row.case: row.median("wall_s") for row in rows if row.loop == "sync"}
    for row in rows:
        work = [Work.of(r) for r in row.results]
        print(
            f"| {row.case} | {row.loop} | {row.median('wall_s'):.2f} | {row.median('gen_s'):.2f} "
            f"| {row.median('tool_s'):.2f} | x{sync_wall[row.case] / row.median('wall_s'):.2f} "
            f"| {statistics.median(len(r.batch_sizes) for r in row.results):g} "
            f"| {statistics.median(w.tool_calls for w in work):g} "
            f"| {statistics.median(w.model_tokens for w in work):g} "
            f"| {'—' if row.chain() is None else f'{row.chain():.2f}'} "
            f"| {sum(row.same_as_sync)}/{sum(w.trajectories for w in work)} |"
        )
    for row in rows:
        if row.loop != "sync":
            print(f"sync/{row.loop} {row.case}: x{sync_wall[row.case] / row.median('wall_s'):.2f}")
    for row in rows:
        chain = row.chain()
        if row.loop != "sync" and chain is not None:
            # No loop ends before its longest chain: sync / chain is the most this loop could reach.
            print(
                f"{row.loop} wall / its longest chain {row.case}: x{row.median('wall_s') / chain:.2f} "
                f"(sync/chain x{sync_wall[row.case] / chain:.2f})"
            )


# The baseline first: ToRL's and verl's loop, a synchronous rollout and then the update.
TRAINING_LOOPS = ("sync, then train", "async, then train", "async, one step off")


def training_steps(loop: str, case: Case, steps: int, train_s: float, seed: int) -> tuple[list[float], list[Work]]:
    """The seconds of each of `steps` training steps (step k's rollout seeded seed + k, then an
    update of `train_s` seconds) and the work of each step's rollout."""

    def roll(step: int) -> RolloutResult:
        return run_loop("sync" if loop == "sync, then train" else "async", case, seed + step)

    durations, works = [], []
    pipeline = RolloutPipeline(roll) if loop == "async, one step off" else None
    try:
        for step in range(steps):
            started = time.perf_counter()
            if pipeline is None:
                result = roll(step)
            else:
                result, _ = pipeline.take(step)
                if step + 1 < steps:
                    pipeline.start(step + 1)
            time.sleep(train_s)  # the update, a GPU's time as the cost model's generation is
            durations.append(time.perf_counter() - started)
            works.append(Work.of(result))
    finally:
        if pipeline is not None:
            pipeline.close()
    return durations, works


def measure_training(case: Case, steps: int, train_s: float, seed: int) -> None:
    """Print each training loop's median step time and its ratio to the synchronous loop's."""
    measured = {}
    for loop in TRAINING_LOOPS:
        measured[loop] = training_steps(loop, case, steps, train_s, seed)
        print(f"{case.name} {loop}: steps {[round(d, 2) for d in measured[loop][0]]}", file=sys.stderr)
        if case.exact and measured[loop][1] != measured[TRAINING_LOOPS[0]][1]:
            raise RuntimeError(f"{case.name}: {loop} rolled out different work from {TRAINING_LOOPS[0]}")
    print(f"training steps: {steps} per loop, update {train_s:g} s each (medians of the step times)")
    print("| case | loop | step s | all steps s | sync/loop |")
    print("|---|---|---:|---:|---:|")
    base = statistics.median(measured[TRAINING_LOOPS[0]][0])
    for loop, (durations, _) in measured.items():
        step = statistics.median(durations)
        print(f"| {case.name} | {loop} | {step:.2f} | {sum(durations):.1f} | x{base / step:.2f} |")
    for loop, (durations, _) in measured.items():
        if loop != TRAINING_LOOPS[0]:
            print(f"{TRAINING_LOOPS[0]}/{loop} {case.name}: x{base / statistics.median(durations):.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        default=None,
        help="comma-separated: hf (tiny model on CPU), cost (cost model); default hf,cost (cost with --quick)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each loop per case (median reported)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke check: 1 repeat, 16 cost-model trajectories, "
        "2 ms per step, slow tool calls 0.2-0.4 s, 4x4 hf prompts",
    )
    parser.add_argument(
        "--model-cache",
        type=Path,
        default=Path(
            os.environ.get("TIRLAB_MODEL_CACHE") or Path(os.environ.get("TIRLAB_VAR_DIR") or "var") / "models"
        ),
        help="where the cold-started tiny model is cached (default: $TIRLAB_MODEL_CACHE, else $TIRLAB_VAR_DIR/models)",
    )
    parser.add_argument("--prompts", type=int, default=16, help="hf case: prompts (the quickstart's 16)")
    parser.add_argument("--group-size", type=int, default=8, help="hf case: samples per prompt (the quickstart's 8)")
    parser.add_argument("--trajectories", type=int, default=128, help="cost case: trajectories")
    parser.add_argument("--step-ms", type=float, default=20.0, help="cost case: milliseconds per decode step")
    parser.add_argument("--slow-fraction", type=float, default=0.05, help="cost case: share of slow tool calls")
    parser.add_argument(
        "--slow-s",
        type=float,
        nargs=2,
        default=(1.0, 3.0),
        metavar=("MIN", "MAX"),
        help="cost case: duration range of a slow tool call",
    )
    parser.add_argument(
        "--long-think-fraction",
        type=float,
        default=0.0,
        help="cost case: share of turns that reason at length (--long-think tokens instead of 20-120)",
    )
    parser.add_argument(
        "--long-think",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        default=(300, 600),
        help="cost case: tokens of a long turn (default 300 600)",
    )
    parser.add_argument(
        "--max-calls", type=int, default=3, help="cost case: tool calls a trajectory makes at most (1 to this)"
    )
    parser.add_argument(
        "--sandbox-workers",
        type=int,
        default=128,
        help="concurrent sandbox executions (TIRLAB_SANDBOX_WORKERS; the default pool's 4 per core "
        "would queue a 128-trajectory batch's calls behind each other in both loops)",
    )
    parser.add_argument(
        "--train-s", type=float, default=0.0, help="cost case: also time training steps with an update of this many s"
    )
    parser.add_argument("--steps", type=int, default=4, help="training steps per loop with --train-s")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.trajectories, args.step_ms, args.slow_s = 1, 16, 2.0, (0.2, 0.4)
        args.prompts, args.group_size = 4, 4
    cases_wanted = [c.strip() for c in (args.cases or ("cost" if args.quick else "hf,cost")).split(",") if c.strip()]
    unknown = set(cases_wanted) - {"hf", "cost"}
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    # Before the default pool starts: sandbox.arun's pool reads it once.
    os.environ["TIRLAB_SANDBOX_WORKERS"] = str(args.sandbox_workers)
    warm = sandbox.run("print(1)")
    if warm.status != "ok":
        raise RuntimeError(f"the sandbox does not work: {warm}")
    print(
        f"# cores={os.cpu_count()} loadavg(before)={os.getloadavg()[0]:.2f} "
        f"sandbox workers={sandbox.default_pool().size}",
        file=sys.stderr,
    )
    cases = []
    for name in cases_wanted:
        started = time.perf_counter()
        if name == "hf":
            cases.append(hf_case(args.model_cache, prompts=args.prompts, group_size=args.group_size, seed=args.seed))
        else:
            policy = ScriptedPolicy(
                slow_fraction=args.slow_fraction,
                slow_min_s=args.slow_s[0],
                slow_max_s=args.slow_s[1],
                long_think_fraction=args.long_think_fraction,
                long_think_min=args.long_think[0],
                long_think_max=args.long_think[1],
                max_calls=args.max_calls,
            )
            cases.append(cost_case(args.trajectories, CostModel(step_s=args.step_ms / 1000), policy, seed=args.seed))
        print(f"# {cases[-1].name}: ready in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    rows = [row for case in cases for row in measure(case, args.repeats, args.seed)]
    print_table(rows, args.repeats)
    if args.train_s > 0:
        for case in cases:
            if case.step_s is not None:
                measure_training(case, args.steps, args.train_s, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
