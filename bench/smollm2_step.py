"""Benchmark: GRPO steps of SmolLM2-135M-Instruct on CPU, at the smollm2-gsm8k-cpu preset's batch.

Prints how long SmolLM2 takes to load (the GGUF conversion, done once per model cache, and the
cached load every run pays), then the median over N steps (default 3) of the trainer's own timings:
`timing_s/gen` (sampling), `timing_s/tool` (sandbox), `timing_s/train` (log-prob passes and the
update), `timing_s/step` and `perf/tokens_per_s`. Each step is a real GRPO step through
`trainer.loop.train.Trainer`: the rollout loop with the KV-cache engine, the sandbox, the ToRL reward, an
AdamW update.

The baseline, measured in the same run, is the tiny quickstart model (trainer.models.tiny.model) at the
same batch shape (prompts x samples x response tokens) on its own arithmetic task; it shows what of
the step time is the model's size. Its cold start is trained into the model cache first if it is not
there (about 5 minutes; --tiny-model-cache points at an existing one). Machines are shared: the load
average before and after is printed with the figures, and only ratios from one run compare.

Torch's intra-op threads are set to --threads (default 1) for the whole run, as the smoke test does:
on two cores shared with other work, two threads wait on each other at every matrix product (see
the report of bench/smollm2_step.py --threads 2).

    .venv/bin/python bench/smollm2_step.py                  # 3 steps each, about 10 minutes on 2 cores
    .venv/bin/python bench/smollm2_step.py --steps 1 --max-response-tokens 64   # smoke check
    .venv/bin/python bench/smollm2_step.py --fresh-conversion   # also time a first conversion
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402 - after the path set-up above
from transformers.utils import logging as transformers_logging  # noqa: E402

from trainer.config import RunConfig  # noqa: E402
from trainer.loop.train import Trainer  # noqa: E402
from trainer.models import SMOLLM2_MODEL, load_policy, smollm2_checkpoint  # noqa: E402
from trainer.presets import preset_config  # noqa: E402
from trainer.report.client import Reporter  # noqa: E402

PRESET = "smollm2-gsm8k-cpu"
BASELINE_PRESET = "quickstart"
COLUMNS = ("timing_s/gen", "timing_s/tool", "timing_s/train", "timing_s/step", "perf/tokens_per_s")


def default_model_cache() -> Path:
    """As `python -m trainer run`: $TIRLAB_MODEL_CACHE, else $TIRLAB_VAR_DIR/models, else var/models."""
    return Path(os.environ.get("TIRLAB_MODEL_CACHE") or Path(os.environ.get("TIRLAB_VAR_DIR") or "var") / "models")


def err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def shaped(name: str, like: RunConfig, max_response_tokens: int) -> RunConfig:
    """Preset `name` with the batch shape of `like` and the given response budget."""
    config = preset_config(name)
    rollout = config.rollout.model_copy(
        update={"prompts_per_step": like.rollout.prompts_per_step, "group_size": like.rollout.group_size}
    )
    data = config.data.model_copy(update={"max_response_tokens": max_response_tokens})
    return config.model_copy(update={"rollout": rollout, "data": data})


def time_steps(config: RunConfig, steps: int, model_cache: Path) -> tuple[float, list[dict[str, float]]]:
    """Seconds to build the Trainer (model load included) and the metrics of `steps` GRPO steps."""
    with tempfile.TemporaryDirectory(prefix="tirlab-bench-") as out:
        reporter = Reporter(out)
        try:
            started = time.perf_counter()
            trainer = Trainer(config, reporter=reporter, out_dir=Path(out), model_cache=model_cache, log=err)
            init_s = time.perf_counter() - started
            results = []
            for _ in range(steps):
                result = trainer.train_step()
                results.append(result.metrics)
                tokens = sum(t.completion.response_tokens or 0 for g in result.groups for t in g.trajectories)
                err(
                    f"{config.model.name_or_path} step {result.step}: {result.metrics['timing_s/step']:.1f} s, "
                    f"{tokens} response tokens, accuracy {result.metrics['accuracy']:.2f}, "
                    f"tool-call ratio {result.metrics['tool_call_ratio']:.2f}"
                )
        finally:
            reporter.close()
    return init_s, results


def median(results: list[dict[str, float]], name: str) -> float:
    return statistics.median(r.get(name, 0.0) for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps timed per model (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads; 0 keeps torch's default")
    parser.add_argument("--max-response-tokens", type=int, default=None, help="override the preset's response budget")
    parser.add_argument("--model-cache", type=Path, default=default_model_cache(), help="where models are cached")
    parser.add_argument(
        "--tiny-model-cache", type=Path, default=None, help="cache of the tiny cold start (default: --model-cache)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the tiny model's steps")
    parser.add_argument(
        "--fresh-conversion", action="store_true", help="also time a conversion into an empty, temporary cache"
    )
    args = parser.parse_args()
    transformers_logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)

    config = preset_config(PRESET)
    budget = args.max_response_tokens or config.data.max_response_tokens
    config = shaped(PRESET, config, budget)
    load_before = os.getloadavg()[0]

    rows: list[tuple[str, float]] = []
    if args.fresh_conversion:
        with tempfile.TemporaryDirectory(prefix="tirlab-smollm2-") as cache:
            started = time.perf_counter()
            smollm2_checkpoint(Path(cache), log=err)
            rows.append(("first conversion (GGUF -> HF directory)", time.perf_counter() - started))
    started = time.perf_counter()
    smollm2_checkpoint(args.model_cache, log=err)
    rows.append((f"smollm2_checkpoint({args.model_cache})", time.perf_counter() - started))
    started = time.perf_counter()
    load_policy(SMOLLM2_MODEL, cache_dir=args.model_cache, log=err)
    rows.append(("load_policy (cached)", time.perf_counter() - started))

    err(f"timing {args.steps} steps of {PRESET} ...")
    init_s, results = time_steps(config, args.steps, args.model_cache)
    rows.append(("Trainer(...) init, model load included", init_s))
    baseline: list[dict[str, float]] = []
    if not args.no_baseline:
        err(f"timing {args.steps} steps of the tiny model at the same batch shape ...")
        tiny_cache = args.tiny_model_cache or args.model_cache
        _, baseline = time_steps(shaped(BASELINE_PRESET, config, budget), args.steps, tiny_cache)
    load_after = os.getloadavg()[0]

    shape = f"{config.rollout.prompts_per_step} prompts x {config.rollout.group_size} samples x {budget} tokens"
    print(f"cpus={os.cpu_count()} torch_threads={torch.get_num_threads()} batch: {shape}")
    print(f"loadavg(before)={load_before:.2f} loadavg(after)={load_after:.2f}")
    print()
    print("| load | s |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")
    print()
    print(f"median of {args.steps} steps | " + " | ".join(COLUMNS) + " | mean response tokens |")
    print("|---|" + "---:|" * (len(COLUMNS) + 1))
    series = [(f"{SMOLLM2_MODEL} ({PRESET})", results)]
    if baseline:
        series.append((f"baseline: tiny model ({BASELINE_PRESET}, same shape)", baseline))
    for name, values in series:
        cells = " | ".join(f"{median(values, column):.2f}" for column in COLUMNS)
        print(f"| {name} | {cells} | {median(values, 'response_length/mean'):.1f} |")
    if baseline:
        ratio = median(results, "timing_s/step") / median(baseline, "timing_s/step")
        print(f"\nSmolLM2 step time / tiny-model step time: x{ratio:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
