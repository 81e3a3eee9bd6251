"""Benchmark: a quickstart preset end to end, as a researcher runs it, and the README's tables.

Runs `python -m trainer run --preset P` in a subprocess and prints:

- the wall time of getting the preset's model (timed on its own: loading the shipped tiny model --
  the cold start, or the base model of zerotir-mini -- from trainer/models/shipped/, or, while a
  changed recipe is not shipped yet, its SFT into a fresh model cache unless --model-cache names one
  that has it) and of the GRPO steps, with the median step time from the run's own `timing_s/step`;
- its learning table from its own `metrics.jsonl`: accuracy and tool use overall, on easy and on hard
  problems, at chosen steps (--at) or as means over windows of steps (--window N);
- the ratio of the last row to the first (the run against its own cold start, measured in the same run);
- the load average before and after, the CPU count and torch's thread count, because the figures
  depend on them: on another machine, or with other threads, floating point rounds differently and
  the curves drift apart.

    .venv/bin/python bench/quickstart.py                                  # the quickstart, as on a fresh install
    .venv/bin/python bench/quickstart.py --preset otc-mini --window 10
    .venv/bin/python bench/quickstart.py --preset otc-mini --window 10 --seed 1    # another seed
    .venv/bin/python bench/quickstart.py --preset retool-mini          # prints its SFT phase too
    .venv/bin/python bench/quickstart.py --preset zerotir-mini --override '{"tools": {"max_tool_calls": 0}}'
    .venv/bin/python bench/quickstart.py --preset swe-mini --at 0,11          # held out before and after
    .venv/bin/python bench/quickstart.py --preset search-r1-mini --at 0,19    # held out by hop, before and after
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS = (
    ("accuracy", "accuracy"),
    ("tool use", "tool_call_ratio"),
    ("easy accuracy", "train/easy/accuracy"),
    ("easy tool use", "train/easy/tool_call_ratio"),
    ("hard accuracy", "train/hard/accuracy"),
    ("hard tool use", "train/hard/tool_call_ratio"),
    # Multi-call presets (artist-mini): calls per response, and the chains that need two.
    ("hard calls", "train/hard/tool_calls/mean"),
    ("chain accuracy", "train/chain/accuracy"),
    ("chain calls", "train/chain/tool_calls/mean"),
)
# Function-calling runs (protocol tool_call_json): the calls against the ground truth (trainer.metrics.calls).
CALL_COLUMNS = (
    ("exact match", "calls/exact_match"),
    ("name accuracy", "calls/name_accuracy"),
    ("param accuracy", "calls/param_accuracy"),
    ("format errors", "calls/format_error_ratio"),
    ("calls", "tool_calls/mean"),
    ("easy exact", "train/easy/calls/exact_match"),
    ("hard exact", "train/hard/calls/exact_match"),
    ("format reward", "reward/format/mean"),
    ("correctness reward", "reward/correctness/mean"),
    # Multi-turn function calling (artist-fc-mini): the tasks done, the call sequences right, ARTIST's terms.
    ("accuracy", "accuracy"),
    ("sequence right", "calls/sequence_match"),
    ("chain accuracy", "train/chain/accuracy"),
    ("chain sequence", "train/chain/calls/sequence_match"),
    ("one-call accuracy", "train/one/accuracy"),
    ("state reward", "reward/state/mean"),
    ("function reward", "reward/function/mean"),
)

# Software-engineering runs (environment swe, swe-mini): SkyRL-v0's ratios in training and on the held-out
# repositories (evaluated at the preset's first and last steps: --at 0,11).
SWE_COLUMNS = (
    ("resolves", "swe/resolve_rate"),
    ("finish", "swe/finish_action_ratio"),
    ("turn limit", "swe/max_turn_ratio"),
    ("held-out resolves", "val/swe/resolve_rate"),
    ("held-out finish", "val/swe/finish_action_ratio"),
    ("held-out turn limit", "val/swe/max_turn_ratio"),
)

# Search runs (environment search, search-r1-mini and otc-search-mini): exact match and searches per question by
# hop on the held-out questions (evaluated at the preset's first and last steps: --at 0,19), TC and TP in training.
SEARCH_COLUMNS = (
    *(
        (f"held-out {hop} {label}", f"val/search/search-mini-{hop}/{key}")
        for hop in ("0hop", "1hop", "2hop")
        for label, key in (("EM", "em"), ("searches", "searches/mean"))
    ),
    ("searches", "search/searches/mean"),
    ("TP", "tool_productivity"),
    ("accuracy", "accuracy"),
)


def err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def timed(argv: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        err(done.stderr[-3000:])
        raise SystemExit(f"{' '.join(argv[:4])} … failed with exit code {done.returncode}")
    return time.monotonic() - start


def cold_start(cache: Path, model: str) -> float:
    """Seconds to load the preset's model, building it into `cache` first when it is neither shipped
    nor cached (the tiny model's cold start, its base model, SmolLM2's conversion)."""
    code = (
        "import sys; from pathlib import Path; from trainer.models import load_policy; "
        "load_policy(sys.argv[1], cache_dir=Path(sys.argv[2]), log=lambda _: None)"
    )
    return timed([sys.executable, "-c", code, model, str(cache)])


def seeded_config(preset: str, seed: int | None, path: Path, overrides: dict | None = None) -> Path:
    """The preset's config with another seed and `overrides` merged over it, written to `path`: the
    trainer's CLI takes a seed only in a config."""
    from trainer.config import merge_overrides, validate_config
    from trainer.presets import preset_config

    config = merge_overrides(preset_config(preset).model_dump(mode="json"), overrides or {})
    if seed is not None:
        config["seed"] = seed
    path.write_text(json.dumps(validate_config(config).model_dump(mode="json")))
    return path


def rows_at(values: list[dict[str, float]], at: list[int]) -> list[tuple[str, dict[str, float]]]:
    return [(str(step), values[step]) for step in at if step < len(values)]


def present(values: list[dict[str, float]]) -> tuple[tuple[str, str], ...]:
    """The columns the run has: CALL_COLUMNS for JSON calls, SWE_COLUMNS for repositories, SEARCH_COLUMNS for
    searches, else COLUMNS; a run without easy problems has no easy accuracy, one without chains no chain calls."""
    if any("swe/resolve_rate" in v for v in values):
        columns = SWE_COLUMNS
    elif any("search/searches/mean" in v for v in values):
        columns = SEARCH_COLUMNS
    else:
        columns = CALL_COLUMNS if any("calls/exact_match" in v for v in values) else COLUMNS
    return tuple((label, key) for label, key in columns if any(key in v for v in values))


def rows_windowed(values: list[dict[str, float]], size: int) -> list[tuple[str, dict[str, float]]]:
    rows = []
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        means = {key: statistics.mean(v[key] for v in chunk if key in v) for _, key in present(chunk)}
        rows.append((f"{start}-{start + len(chunk) - 1}", means))
    return rows


def table(rows: list[tuple[str, dict[str, float]]], columns: tuple[tuple[str, str], ...] = COLUMNS) -> str:
    header = "| step | " + " | ".join(label for label, _ in columns) + " |"
    lines = [header, "|---:|" + "---:|" * len(columns)]
    for label, values in rows:
        lines.append(f"| {label} | " + " | ".join(f"{values.get(key, float('nan')):.3f}" for _, key in columns) + " |")
    first, last = rows[0][1], rows[-1][1]
    ratios = [f"{last[key] / first[key]:.2f}" if first.get(key) and key in last else "—" for _, key in columns]
    lines.append("| last / first | " + " | ".join(f"×{r}" for r in ratios) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="quickstart")
    parser.add_argument("--model-cache", type=Path, help="an existing model cache (default: a fresh one)")
    parser.add_argument("--max-steps", type=int, help="fewer steps than the preset's (a smoke check)")
    parser.add_argument("--seed", type=int, help="run the preset with this seed instead of its own")
    parser.add_argument("--at", default="0,5,10,15,19", help="steps to show (default %(default)s)")
    parser.add_argument("--window", type=int, help="show means over windows of this many steps instead")
    parser.add_argument("--out", type=Path, help="keep the run's files here")
    parser.add_argument(
        "--override",
        metavar="JSON",
        help='config values merged over the preset\'s, e.g. \'{"tools": {"max_tool_calls": 0}}\'',
    )
    args = parser.parse_args()
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    overrides = None
    if args.override is not None:
        try:
            overrides = json.loads(args.override)
        except json.JSONDecodeError as exc:
            parser.error(f"--override is not valid JSON: {exc}")
        if not isinstance(overrides, dict):
            parser.error("--override must be a JSON object")

    import torch  # here: --help should not pay for it

    sys.path.insert(0, str(REPO))  # run as a script, bench/ is on the path and the project is not
    with tempfile.TemporaryDirectory(prefix="tl-quickstart-") as tmp:
        cache = args.model_cache or Path(tmp) / "models"
        out = args.out or Path(tmp) / "run"
        before = load()
        from trainer.config import merge_overrides
        from trainer.presets import preset_config

        # The model the run will load: the preset's, or the one an override names.
        config = merge_overrides(preset_config(args.preset).model_dump(mode="json"), overrides or {})
        model = config["model"]["name_or_path"]
        err(f"{model} into {cache} …")
        sft_s = cold_start(cache, model)
        err(f"python -m trainer run --preset {args.preset} …")
        run_from = ["--preset", args.preset]
        if args.seed is not None or overrides:
            config = seeded_config(args.preset, args.seed, Path(tmp) / "config.json", overrides)
            run_from = ["--config", str(config)]
        argv = [sys.executable, "-m", "trainer", "run", *run_from, "--out", str(out), "--model-cache", str(cache)]
        if args.max_steps:
            argv += ["--max-steps", str(args.max_steps)]
        run_s = timed(argv)
        after = load()
        values = [json.loads(line)["values"] for line in (out / "metrics.jsonl").read_text().splitlines()]
        sft_file = out / "sft.json"
        sft = json.loads(sft_file.read_text())["summary"] if sft_file.exists() else None

    step_s = statistics.median(v["timing_s/step"] for v in values)
    seed = "" if args.seed is None else f" with seed {args.seed}"
    changed = "" if overrides is None else f", overrides {json.dumps(overrides)}"
    print(f"preset {args.preset}{seed}{changed}: {len(values)} GRPO steps")
    threads = torch.get_num_threads()
    print(f"machine: {os.cpu_count()} CPUs, torch threads {threads}, load average {before} before, {after} after")
    from trainer.config import TINY_BASE_MODEL, TINY_MODEL
    from trainer.models.loading import DERIVED
    from trainer.models.tiny.base import shipped_base
    from trainer.models.tiny.cold_start import shipped_checkpoint

    shipped_of = {TINY_MODEL: shipped_checkpoint, TINY_BASE_MODEL: shipped_base}
    shipped_of.update({name: recipe.shipped for name, recipe in DERIVED.items()})
    shipped = shipped_of.get(model, lambda: None)()
    source = "shipped" if shipped else "cached" if args.model_cache else "built into an empty cache"
    print(f"model {model} ({source}) {sft_s:.0f} s; run {run_s:.0f} s "
          f"(median step {step_s:.2f} s); total {sft_s + run_s:.0f} s")  # fmt: skip
    if sft is not None:
        print(f"SFT phase in the run (sft.*): {sft['traces']:.0f} traces, {sft['steps']:.0f} steps in "
              f"{sft['seconds']:.0f} s, loss {sft['loss_first']:.3f} -> {sft['loss_last']:.3f}")  # fmt: skip
    if args.window:
        rows = rows_windowed(values, args.window)
    else:
        rows = rows_at(values, [int(step) for step in args.at.split(",")])
    print(table(rows, present(values)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
