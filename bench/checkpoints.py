"""Benchmark: a preset's held-out learning curve checkpoint by checkpoint, made with `python -m trainer evaluate`.

Runs `python -m trainer run --preset P` with a checkpoint every K steps, then evaluates each checkpoint with
`python -m trainer evaluate --checkpoint …` (its own config.json: the preset's validation data, its sampling) and
prints one row for the model it starts from (`trainer evaluate --step 0`, no checkpoint) and one per checkpoint, of
chosen per-benchmark metrics (`bench/<source>/<metric>`, trainer.metrics.benchmarks; default: every benchmark's
accuracy and its searches per question, or tool calls where the run does not search), with each evaluation's wall
time. Its baseline, measured in the same run: the run's own evaluation after its last step
(schedule.eval_every), which describes the same weights as the last checkpoint: the bench prints whether the two agree.

    .venv/bin/python bench/checkpoints.py --preset search-r1-mini --every 4
    .venv/bin/python bench/checkpoints.py --preset otc-search-mini --every 4
    .venv/bin/python bench/checkpoints.py --preset quickstart --every 5 --metrics accuracy,tool_call_ratio
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainer.config import merge_overrides  # noqa: E402
from trainer.metrics.benchmarks import read_benchmark_key  # noqa: E402
from trainer.presets import preset_config  # noqa: E402

DEFAULT_METRICS = ("accuracy", "search/searches/mean", "tool_calls/mean")
# A search run's tool calls are its searches: one column of the two.
SAME_AS = {"tool_calls/mean": "search/searches/mean"}


def metric_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def benchmark_values(values: dict[str, float], metrics: tuple[str, ...]) -> dict[tuple[str, str], float]:
    """(benchmark, metric) -> value of the chosen metrics in one step's values."""
    cells = {}
    for key, value in values.items():
        read = read_benchmark_key(key)
        if read is not None and read.metric in metrics:
            cells[(read.benchmark, read.metric)] = value
    return cells


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="search-r1-mini")
    parser.add_argument("--every", type=int, default=4, help="a checkpoint every this many steps")
    parser.add_argument(
        "--metrics", default=None, help=f"comma-separated benchmark metrics (default: {', '.join(DEFAULT_METRICS)})"
    )
    parser.add_argument("--out", type=Path, help="keep the run and its evaluations here (default: a temp folder)")
    parser.add_argument("--model-cache", type=Path, default=REPO / "var" / "models")
    args = parser.parse_args()
    metrics = tuple(name.strip() for name in (args.metrics or ",".join(DEFAULT_METRICS)).split(",") if name.strip())
    out = args.out or Path(tempfile.mkdtemp(prefix="tirlab-checkpoints-"))
    out.mkdir(parents=True, exist_ok=True)
    config = merge_overrides(
        preset_config(args.preset).model_dump(mode="json"), {"schedule": {"checkpoint_every": args.every}}
    )
    (out / "config.json").write_text(json.dumps(config))
    python, cache = sys.executable, str(args.model_cache)
    started = time.monotonic()
    subprocess.run(
        [python, "-m", "trainer", "run", "--config", str(out / "config.json"), "--out", str(out / "run"),
         "--model-cache", cache],
        cwd=REPO, check=True, capture_output=True,
    )  # fmt: skip
    print(f"{args.preset}: {config['schedule']['max_steps']} steps trained in {time.monotonic() - started:.0f} s")
    rows: list[tuple[str, float, dict]] = []
    checkpoints = sorted((out / "run" / "checkpoints").glob("step-*"), key=lambda path: int(path.name[5:]))
    evaluations = [("base model", ["--config", str(out / "config.json"), "--step", "0"])]
    evaluations += [(checkpoint.name, ["--checkpoint", str(checkpoint)]) for checkpoint in checkpoints]
    for name, what in evaluations:
        started = time.monotonic()
        subprocess.run(
            [python, "-m", "trainer", "evaluate", *what, "--out", str(out / f"eval-{name}"), "--model-cache", cache],
            cwd=REPO, check=True, capture_output=True,
        )  # fmt: skip
        (row,) = metric_rows(out / f"eval-{name}" / "metrics.jsonl")
        rows.append((name, time.monotonic() - started, benchmark_values(row["values"], metrics)))
    columns = sorted({cell for _, _, cells in rows for cell in cells})
    if args.metrics is None:
        columns = [(b, m) for b, m in columns if (b, SAME_AS.get(m)) not in columns]
    print("| checkpoint | eval s | " + " | ".join(f"{b} {m}" for b, m in columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for name, seconds, cells in rows:
        print(f"| {name} | {seconds:.0f} | " + " | ".join(f"{cells.get(c, float('nan')):.3f}" for c in columns) + " |")
    in_run = [row for row in metric_rows(out / "run" / "metrics.jsonl") if benchmark_values(row["values"], metrics)]
    if in_run and rows:
        last = benchmark_values(in_run[-1]["values"], metrics)
        same = last == rows[-1][2]
        print(f"the run's own evaluation after its step {in_run[-1]['step']} and {rows[-1][0]}: "
              + ("the same figures" if same else f"differ: {last} against {rows[-1][2]}"))  # fmt: skip
    print(f"kept in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
