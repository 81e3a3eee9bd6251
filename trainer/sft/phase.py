"""A run's SFT phase: `sft.*` of the run config, before the first RL step.

The loaded policy is fine-tuned on the traces `sft.dataset` names (trainer.sft.data), rendered with
the run's prompt template and tool protocol, so the cold start learns exactly the prompt and call
syntax RL will sample with. Progress goes to the reporter as the "sft" phase (steps done of all,
and an estimate of the time left) and to the log; every step's loss goes to it as the metric
`sft/loss` at that SFT step (trainer.contract.SFT_LOSS: the SFT's own step axis, charted on the run
page as it trains), and the loss curve is written to the run's output folder as `sft.json` (its
summary and the loss of every step).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import RunConfig
from trainer.contract import SFT_LOSS
from trainer.sft.data import load_sft_dataset
from trainer.sft.train import sft_train


def run_sft(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    config: RunConfig,
    *,
    template: str | None,
    reporter: Any,
    out_dir: Path,
    log: Callable[[str], None] = print,
) -> dict[str, float]:
    """Fine-tune `model` in place as `config.sft` says; returns a summary (traces, steps, first and
    last loss, seconds)."""
    sft, protocol = config.sft, config.tools.protocol
    started = time.monotonic()
    rows = load_sft_dataset(str(sft.dataset), protocol=protocol)
    log(
        f"sft: {len(rows)} traces from {sft.dataset!r}, {sft.epochs} epoch(s) at lr {sft.learning_rate}, "
        f"batch {sft.batch_size}"
    )
    losses = sft_train(
        model,
        tokenizer,
        rows,
        protocol=protocol,
        template=template,
        epochs=sft.epochs,
        lr=sft.learning_rate,
        batch_size=sft.batch_size,
        seed=config.seed,
        log=log,
        progress=functools.partial(report_progress, reporter),
    )
    window = max(1, min(50, len(losses) // 10))
    summary = {
        "traces": float(len(rows)),
        "steps": float(len(losses)),
        "loss_first": sum(losses[:window]) / window,
        "loss_last": sum(losses[-window:]) / window,
        "seconds": time.monotonic() - started,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "sft.json").write_text(json.dumps({"summary": summary, "losses": losses}))
    log(
        f"sft done: {len(losses)} steps in {summary['seconds']:.0f}s, loss {summary['loss_first']:.4f} -> "
        f"{summary['loss_last']:.4f}"
    )
    return summary


def report_progress(reporter: Any, step: int, total: int, loss: float, elapsed_s: float) -> None:
    """What the SFT reports after its optimizer step `step` of `total`: the phase (with the time left,
    from the pace so far) and the step's loss as a metric at that SFT step."""
    eta = elapsed_s / step * (total - step)
    reporter.set_phase("sft", step, total, eta_s=eta, detail=f"loss {loss:.4f}")
    reporter.log_metrics(step, {SFT_LOSS: loss})
