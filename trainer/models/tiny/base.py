"""'tirlab/tiny-char-base': the tiny model as a *base* model, the starting point of zero RL.

ZeroTIR starts RL from a pretrained base model with no tool-use fine-tuning. tirlab's base is the
randomly initialised tiny model trained on `trainer.models.tiny.base_corpus` (arithmetic answered in text,
Python notebook text under its own prompts, no tool call in any answer to a question), shipped
beside the cold start in trainer/models/shipped/ under its recipe's fingerprint, like it:

    python -m trainer cold-start --model tirlab/tiny-char-base --ship

retrains it and rewrites its report (tests/trainer/test_shipped_cold_start.py fails, naming the
command, when the recipe changes without it). Without a shipped build for the current recipe, the
first run trains it into the run's model cache.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import TINY_BASE_MODEL
from trainer.data.sft_traces import parse_rows
from trainer.models.tiny.base_corpus import TINY_BASE, BaseCorpus, base_corpus_rows
from trainer.models.tiny.cold_start import (
    evaluate_cold_start,
    recipe_fingerprint,
    ship_model,
    shipped_model,
    shipped_or_built,
)
from trainer.models.tiny.model import TINY_PROMPT_TEMPLATE, build_tiny_model
from trainer.sft.traces.arithmetic import TINY_SEED
from trainer.sft.train import sft_train

BASE_PREFIX = "tiny-char-base"
# Bumped when the corpus generator or training loop changes in a way the fingerprint cannot see.
BASE_RECIPE_VERSION = 1
SHIP_COMMAND = f"python -m trainer cold-start --model {TINY_BASE_MODEL} --ship"


def base_fingerprint() -> str:
    """A short hash of everything that determines the base model."""
    return recipe_fingerprint(version=BASE_RECIPE_VERSION, seed=TINY_SEED, base_corpus=dataclasses.asdict(TINY_BASE))


def shipped_base() -> Path | None:
    """The shipped base model of the current recipe, if there is one."""
    return shipped_model(BASE_PREFIX, base_fingerprint())


def train_base(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    *,
    corpus: BaseCorpus | None = None,
    seed: int = TINY_SEED,
    log: Callable[[str], None] = print,
) -> list[float]:
    """Train `model` on the base corpus (`TINY_BASE` by default) through the SFT loop of runs."""
    corpus = corpus or TINY_BASE
    rows = parse_rows(base_corpus_rows(corpus, seed=seed), protocol="python_markdown", source="tiny-base-corpus")
    return sft_train(
        model,
        tokenizer,
        rows,
        protocol="python_markdown",
        template=TINY_PROMPT_TEMPLATE,
        epochs=corpus.epochs,
        lr=corpus.lr,
        batch_size=corpus.batch_size,
        seed=seed,
        log=log,
    )


def base_checkpoint(cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
    """The base model's directory: shipped, or trained once into `cache_dir`."""

    def train(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
        train_base(model, tokenizer, log=log)

    return shipped_or_built(TINY_BASE_MODEL, BASE_PREFIX, base_fingerprint(), cache_dir, train, log=log)


def base_report(*, seed: int = TINY_SEED, eval_size: int = 200, out: Path | None = None) -> dict[str, Any]:
    """Train a base model from `seed` (saved under `out` if given) and measure it as the cold start is
    measured: accuracy and how often it writes code, greedy and sampled at temperature 1."""
    model, tokenizer = build_tiny_model(seed=seed)
    started = time.monotonic()
    train_base(model, tokenizer, seed=seed)
    sft_s = time.monotonic() - started
    if out is not None:
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    started = time.monotonic()
    # Its answers think in ZeroTIR's tags, and a notebook snippet runs to about 110 characters.
    report: dict[str, Any] = evaluate_cold_start(model, tokenizer, eval_size=eval_size, seed=seed, max_new_tokens=160)
    report["sft_s"] = round(sft_s, 1)
    report["eval_s"] = round(time.monotonic() - started, 1)
    return report


def ship_base(*, eval_size: int = 200, log: Callable[[str], None] = print) -> Path:
    """Train the base recipe's model and make it the shipped one, with its report."""
    log(f"training {TINY_BASE_MODEL}")
    return ship_model(
        BASE_PREFIX,
        base_fingerprint(),
        lambda out: base_report(eval_size=eval_size, out=out),
        command=SHIP_COMMAND,
    )
