"""'tirlab/tiny-char-artist': the tiny model in ARTIST's format, the starting point of artist-mini.

ARTIST trains instruction-tuned models that can already follow its <think>/<python>/<output>/<answer>
format; the tiny model learns it by SFT of the shipped cold start ('tirlab/tiny-char') on the
'artist-mini-sft' traces (trainer.artist_traces): 3 epochs of 16,000 at lr 3e-3, 32 a step, the
trainer's SFT loop on one thread with the runs' seed 0 (1,500 steps, 852 s with another build on the
other core). artist-mini ran 375 steps of it in every run while it had 4,000 traces; now it is done
once and shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-artist --ship

retrains it and rewrites its report (tests/trainer/test_shipped_cold_start.py fails, naming the
command, when the recipe changes without it). Without a shipped build for the current recipe, the
first run trains it into the run's model cache.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.artist_traces import ARTIST_MINI
from trainer.config import TINY_ARTIST_MODEL
from trainer.models.tiny import TINY_PROMPT_TEMPLATE, CharTokenizer
from trainer.models.tiny_cold_start import (
    recipe_fingerprint,
    ship_model,
    shipped_model,
    shipped_or_built,
    tiny_checkpoint,
    tiny_fingerprint,
)
from trainer.sft import sft_train
from trainer.sft_data import load_sft_dataset
from trainer.sft_traces import TINY_SEED

ARTIST_PREFIX = "tiny-char-artist"
ARTIST_RECIPE_VERSION = 1
SHIP_COMMAND = f"python -m trainer cold-start --model {TINY_ARTIST_MODEL} --ship"
TRACES = "artist-mini-sft"
EPOCHS, LEARNING_RATE, BATCH_SIZE = 3, 3e-3, 32


def artist_fingerprint() -> str:
    """A short hash of everything that determines the ARTIST-format model: its starting point's recipe
    and its SFT."""
    sft = {"traces": TRACES, "mix": dataclasses.asdict(ARTIST_MINI), "epochs": EPOCHS, "lr": LEARNING_RATE}
    return recipe_fingerprint(
        version=ARTIST_RECIPE_VERSION, seed=TINY_SEED, start=tiny_fingerprint(), sft={**sft, "batch": BATCH_SIZE}
    )


def shipped_artist() -> Path | None:
    """The shipped ARTIST-format model of the current recipe, if there is one."""
    return shipped_model(ARTIST_PREFIX, artist_fingerprint())


def train_artist(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, log: Callable[[str], None] = print
) -> list[float]:
    """SFT of `model` (the cold start) on the 'artist-mini-sft' traces, on one thread as a run's SFT
    phase of the tiny model runs."""
    rows = load_sft_dataset(TRACES, protocol="artist")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return sft_train(
            model,
            tokenizer,
            rows,
            protocol="artist",
            template=TINY_PROMPT_TEMPLATE,
            epochs=EPOCHS,
            lr=LEARNING_RATE,
            batch_size=BATCH_SIZE,
            seed=TINY_SEED,
            log=log,
        )
    finally:
        torch.set_num_threads(threads)


def _cold_start(cache_dir: Path) -> Callable[[], tuple[PreTrainedModel, PreTrainedTokenizerBase]]:
    def start() -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
        from transformers import AutoModelForCausalLM

        path = tiny_checkpoint(cache_dir)
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), CharTokenizer.from_pretrained(path)

    return start


def artist_checkpoint(cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
    """The ARTIST-format model's directory: shipped, or trained once from the cold start into `cache_dir`."""

    def train(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
        train_artist(model, tokenizer, log=log)

    return shipped_or_built(
        TINY_ARTIST_MODEL, ARTIST_PREFIX, artist_fingerprint(), cache_dir, train, start=_cold_start(cache_dir), log=log
    )


def artist_report(*, out: Path, cache_dir: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train the ARTIST-format model into `out` and report its SFT: traces, steps, seconds, the loss at
    the start and the end (means over 20 steps)."""
    model, tokenizer = _cold_start(cache_dir)()
    started = time.monotonic()
    losses = train_artist(model, tokenizer, log=log)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {
        "traces": TRACES,
        "sft_steps": len(losses),
        "sft_s": round(time.monotonic() - started, 1),
        "loss_first": round(statistics.mean(losses[:20]), 4),
        "loss_last": round(statistics.mean(losses[-20:]), 4),
    }


def ship_artist(*, cache_dir: Path, log: Callable[[str], None] = print) -> Path:
    """Train the recipe's ARTIST-format model and make it the shipped one, with its report."""
    log(f"training {TINY_ARTIST_MODEL}")
    return ship_model(
        ARTIST_PREFIX,
        artist_fingerprint(),
        lambda out: artist_report(out=out, cache_dir=cache_dir, log=log),
        command=SHIP_COMMAND,
    )
