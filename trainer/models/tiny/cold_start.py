"""The quickstart's tiny model, cold-started by SFT and cached.

RL from a random initialisation never finds a rewarded answer, so the tiny model first imitates
seeded tool-use traces for the arithmetic task (trainer.sft.train), with the budget `TINY_SFT`: the
traces favour the slow skills (easy answers from memory, copying on hard problems) and the policy
still starts undecided, calling the tool about half the time on every difficulty, so that GRPO has
something to learn.

The cold start takes minutes of CPU, so tirlab ships its result: `SHIPPED_DIR` holds the model
this recipe trains (3.3 MB of float32 weights) beside ``report.json``, how it did when it was built
and on what machine. The directory name carries a fingerprint of everything that shapes the model
(architecture, tokenizer, chat and prompt templates, SFT budget, seed), so a changed recipe is
never served stale weights: without a shipped model for the current fingerprint, the first run
trains the cold start and caches it under the run's model cache, as it always could.

    python -m trainer cold-start --ship

retrains the shipped model from the recipe and rewrites its directory and report (tests/trainer/
test_shipped_cold_start.py fails, naming this command, when the recipe changes without it), and

    python -m trainer cold-start [--seed 0] [--eval-size 200] [--out DIR]

trains a cold start with the default budget (`cold_start_report`) and prints accuracy and tool use
on easy and hard validation problems, greedy and sampled at temperature 1, executing the model's
code in the sandbox.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import TINY_MODEL
from trainer.data.arithmetic import arithmetic_examples
from trainer.data.sft_traces import parse_rows
from trainer.models.build_once import build_once
from trainer.models.tiny.model import CHAT_TEMPLATE, TINY_PROMPT_TEMPLATE, CharTokenizer, build_tiny_model, tiny_config
from trainer.sft.traces.arithmetic import TINY_SEED, TINY_SFT, SFTBudget, tiny_cold_start_traces
from trainer.sft.train import evaluate, sft_train

# The cold start's seed, budget and traces live with the trace generator (trainer.sft.traces.arithmetic), which the
# built-in SFT dataset 'tiny-cold-start' shares without loading torch.
# The cold starts tirlab ships, one directory per recipe fingerprint.
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "shipped"
SHIPPED_REPORT = "report.json"
# A shipped model's directory: its prefix and its recipe's fingerprint.
_SHIPPED_NAME = re.compile(r"(.+)-([0-9a-f]{12})")
# Bumped when the trace generator or training loop changes in a way the fingerprint cannot see.
TINY_RECIPE_VERSION = 2


def tiny_cold_start(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    *,
    seed: int,
    template: str,
    budget: SFTBudget | None = None,
    log: Callable[[str], None] = print,
) -> list[float]:
    """The quickstart's cold start: SFT of `model` on the 'tiny-cold-start' traces with `budget`
    (default TINY_SFT), through the same `sft_train` a run's `sft.*` uses."""
    budget = budget or TINY_SFT
    traces = tiny_cold_start_traces(budget=budget, seed=seed)
    rows = parse_rows(traces, protocol="python_markdown", source="tiny-cold-start")
    return sft_train(
        model,
        tokenizer,
        rows,
        protocol="python_markdown",
        template=template,
        epochs=budget.epochs,
        lr=budget.lr,
        batch_size=budget.batch_size,
        seed=seed,
        log=log,
    )


def tiny_fingerprint() -> str:
    """A short hash of everything that determines the cold-started tiny model."""
    return recipe_fingerprint(version=TINY_RECIPE_VERSION, seed=TINY_SEED, sft=dataclasses.asdict(TINY_SFT))


def recipe_fingerprint(**recipe: Any) -> str:
    """A short hash of a tiny model's `recipe` (its training data and budget) together with what every
    tiny model shares: architecture, tokenizer, chat and prompt templates."""
    recipe = {
        **recipe,
        "config": tiny_config(CharTokenizer()).to_dict(),
        "vocab": CharTokenizer().get_vocab(),
        "chat_template": CHAT_TEMPLATE,
        "prompt_template": TINY_PROMPT_TEMPLATE,
    }
    recipe["config"].pop("transformers_version", None)
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()[:12]


def shipped_checkpoint() -> Path | None:
    """The shipped cold start of the current recipe, if there is one."""
    return shipped_model("tiny-char", tiny_fingerprint())


def shipped_model(prefix: str, fingerprint: str) -> Path | None:
    """The shipped model directory `<prefix>-<fingerprint>`, if it is there."""
    path = SHIPPED_DIR / f"{prefix}-{fingerprint}"
    return path if (path / "model.safetensors").is_file() else None


def tiny_checkpoint(cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
    """The directory of the cold-started tiny model: the shipped one when it matches the recipe,
    else the one cached under `cache_dir`, training it first if it is not there.

    Trained once, even by concurrent runs, and never seen half-written (`build_once`).
    """

    def train(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
        tiny_cold_start(model, tokenizer, seed=TINY_SEED, template=TINY_PROMPT_TEMPLATE, log=log)

    return shipped_or_built(TINY_MODEL, "tiny-char", tiny_fingerprint(), cache_dir, train, log=log)


def shipped_or_built(
    name: str,
    prefix: str,
    fingerprint: str,
    cache_dir: Path,
    train: Callable[[PreTrainedModel, PreTrainedTokenizerBase], None],
    *,
    start: Callable[[], tuple[PreTrainedModel, PreTrainedTokenizerBase]] | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Tiny model `name`'s directory: shipped as `<prefix>-<fingerprint>`, else cached under that name in
    `cache_dir`, where `train` first trains it from `start()` (default: the random initialisation),
    once (`build_once`)."""
    shipped = shipped_model(prefix, fingerprint)
    if shipped is not None:
        return shipped
    target = cache_dir / f"{prefix}-{fingerprint}"

    def build(directory: Path) -> None:
        log(f"cold-starting {name} by SFT (cached at {target} for later runs)")
        model, tokenizer = start() if start is not None else build_tiny_model(seed=TINY_SEED)
        train(model, tokenizer)
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)

    return build_once(target, build)


def cold_start_report(*, seed: int = 0, eval_size: int = 200, out: Path | None = None) -> dict[str, Any]:
    """Cold-start a tiny model from `seed` with `TINY_SFT` (saved under `out` if given) and measure it
    on `eval_size` mixed test problems: accuracy and tool use, greedy and sampled at temperature 1,
    and the seconds each part took."""
    model, tokenizer = build_tiny_model(seed=seed)
    started = time.monotonic()
    tiny_cold_start(model, tokenizer, seed=seed, template=TINY_PROMPT_TEMPLATE)
    sft_s = time.monotonic() - started
    if out is not None:
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    started = time.monotonic()
    report: dict[str, Any] = evaluate_cold_start(model, tokenizer, eval_size=eval_size, seed=seed)
    report["sft_s"] = round(sft_s, 1)
    report["eval_s"] = round(time.monotonic() - started, 1)
    return report


def evaluate_cold_start(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    *,
    eval_size: int,
    seed: int = 0,
    max_new_tokens: int = 96,
) -> dict[str, Any]:
    """Accuracy and tool use on `eval_size` mixed test problems, greedy and sampled at temperature 1."""
    examples = arithmetic_examples(eval_size, seed=seed, difficulty="mixed", split="test")
    kwargs = {"template": TINY_PROMPT_TEMPLATE, "max_new_tokens": max_new_tokens}
    return {
        "eval_size": eval_size,
        "greedy": evaluate(model, tokenizer, examples, **kwargs),
        "sampled_t1": evaluate(model, tokenizer, examples, temperature=1.0, **kwargs),
    }


def ship_cold_start(*, eval_size: int = 200, log: Callable[[str], None] = print) -> Path:
    """Train the recipe's cold start and make it the shipped one, with its report; older shipped
    cold starts are removed. Returns the new directory."""
    log(f"training {TINY_MODEL}'s cold start")
    return ship_model(
        "tiny-char",
        tiny_fingerprint(),
        lambda out: cold_start_report(seed=TINY_SEED, eval_size=eval_size, out=out),
        command="python -m trainer cold-start --ship",
    )


def ship_model(prefix: str, fingerprint: str, build: Callable[[Path], dict[str, Any]], *, command: str) -> Path:
    """Make `build(directory)` (which saves a model there and returns its report) the shipped
    `<prefix>-<fingerprint>`, its report beside it; older shipped builds of `prefix` are removed."""
    target = SHIPPED_DIR / f"{prefix}-{fingerprint}"
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    report = build(partial)
    report["built_with"] = {
        "command": command,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    (partial / SHIPPED_REPORT).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    for old in SHIPPED_DIR.iterdir():
        match = _SHIPPED_NAME.fullmatch(old.name)
        if old != partial and match is not None and match[1] == prefix:
            shutil.rmtree(old)
    partial.rename(target)
    return target
