"""Tiny models derived from the shipped cold start by more SFT: a recipe each, built once, shipped.

A `DerivedTiny` names the model (e.g. 'tirlab/tiny-char-artist'), the built-in traces it is fine-tuned
on, the protocol and prompt template they are written in, and the SFT budget. From it follow the
model's fingerprint (its starting point's recipe and its own), its shipped directory
(trainer/models/shipped/<prefix>-<fingerprint>), the build into a run's model cache when no shipped
build matches, and the report written beside a shipped build:

    python -m trainer cold-start --model <name> --ship

The SFT is the trainer's own loop (trainer.sft.train.sft_train) on one thread with the runs' seed 0, as a
run's SFT phase of the tiny model runs. tests/trainer/test_shipped_cold_start.py fails, naming the
command, when a recipe changes without a rebuild.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.models.tiny.cold_start import (
    recipe_fingerprint,
    ship_model,
    shipped_model,
    shipped_or_built,
    tiny_checkpoint,
    tiny_fingerprint,
)
from trainer.models.tiny.model import TINY_PROMPT_TEMPLATE, CharTokenizer
from trainer.sft.data import load_sft_dataset
from trainer.sft.traces.arithmetic import TINY_SEED
from trainer.sft.train import sft_train


@dataclass(frozen=True)
class DerivedTiny:
    """The recipe of a tiny model fine-tuned from the shipped cold start ('tirlab/tiny-char') or from
    another derived model (`start`)."""

    name: str  # the model name runs give, e.g. 'tirlab/tiny-char-artist'
    prefix: str  # its shipped directory's name before the fingerprint
    version: int  # bumped when something outside the fields below changes what is trained
    traces: str  # built-in SFT traces (trainer.sft.data.BUILTIN_TRACES)
    protocol: str
    mix: Mapping[str, Any]  # what shapes the traces, for the fingerprint
    epochs: int
    lr: float
    batch_size: int = 32
    template: str = TINY_PROMPT_TEMPLATE
    # What it is fine-tuned from: another derived model, or (None) the shipped cold start.
    start: DerivedTiny | None = None

    @property
    def ship_command(self) -> str:
        return f"python -m trainer cold-start --model {self.name} --ship"

    def fingerprint(self) -> str:
        """A short hash of everything that determines the model: its starting point's recipe and its SFT."""
        sft: dict[str, Any] = {"traces": self.traces, "mix": dict(self.mix), "epochs": self.epochs, "lr": self.lr}
        if self.template != TINY_PROMPT_TEMPLATE:
            # The default template is left out so that recipes written before templates varied keep their hash.
            sft["template"] = self.template
        start = self.start.fingerprint() if self.start is not None else tiny_fingerprint()
        return recipe_fingerprint(
            version=self.version, seed=TINY_SEED, start=start, sft={**sft, "batch": self.batch_size}
        )

    def shipped(self) -> Path | None:
        """The shipped build of the current recipe, if there is one."""
        return shipped_model(self.prefix, self.fingerprint())

    def train(
        self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, log: Callable[[str], None] = print
    ) -> list[float]:
        """SFT of `model` (its starting point) on the recipe's traces, on one thread; the loss of every step."""
        rows = load_sft_dataset(self.traces, protocol=self.protocol)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return sft_train(
                model,
                tokenizer,
                rows,
                protocol=self.protocol,
                template=self.template,
                epochs=self.epochs,
                lr=self.lr,
                batch_size=self.batch_size,
                seed=TINY_SEED,
                log=log,
            )
        finally:
            torch.set_num_threads(threads)

    def checkpoint(self, cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
        """The model's directory: shipped, or trained once from its starting point into `cache_dir`."""

        def train(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
            self.train(model, tokenizer, log=log)

        return shipped_or_built(
            self.name, self.prefix, self.fingerprint(), cache_dir, train, start=self._start(cache_dir), log=log
        )

    def report(self, *, out: Path, cache_dir: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
        """Train the model into `out` and report its SFT: traces, steps, seconds, the loss at the start
        and the end (means over 20 steps)."""
        model, tokenizer = self._start(cache_dir)()
        started = time.monotonic()
        losses = self.train(model, tokenizer, log=log)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        return {
            "traces": self.traces,
            "sft_steps": len(losses),
            "sft_s": round(time.monotonic() - started, 1),
            "loss_first": round(statistics.mean(losses[:20]), 4),
            "loss_last": round(statistics.mean(losses[-20:]), 4),
        }

    def ship(self, *, cache_dir: Path, log: Callable[[str], None] = print) -> Path:
        """Train the recipe's model and make it the shipped one, with its report."""
        log(f"training {self.name}")
        return ship_model(
            self.prefix,
            self.fingerprint(),
            lambda out: self.report(out=out, cache_dir=cache_dir, log=log),
            command=self.ship_command,
        )

    def _start(self, cache_dir: Path) -> Callable[[], tuple[PreTrainedModel, PreTrainedTokenizerBase]]:
        """Loads the starting point: the shipped cold start, or the `start` recipe's model."""

        def start() -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
            from transformers import AutoModelForCausalLM

            path = self.start.checkpoint(cache_dir) if self.start is not None else tiny_checkpoint(cache_dir)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
            return model, CharTokenizer.from_pretrained(path)

        return start
