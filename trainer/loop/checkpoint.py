"""Checkpoints: everything a run needs to continue exactly where it stopped.

A checkpoint directory holds the model and tokenizer (Hugging Face format, loadable on their own)
and `trainer_state.pt`: optimizer, LR scheduler, the step to run next, the RNG states and the
reward state (OTC-GRPO's per-prompt minimum). It is written to a temporary name and renamed, so a
crash never leaves a half-written checkpoint that looks complete.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from transformers import PreTrainedModel, PreTrainedTokenizerBase

STATE_FILE = "trainer_state.pt"


def save_checkpoint(
    path: Path,
    *,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    step: int,
    reward_state: dict[str, Any],
    config: dict[str, Any],
) -> Path:
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    model.save_pretrained(partial / "model")
    tokenizer.save_pretrained(partial / "model")
    torch.save(
        {
            "step": step,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "reward_state": reward_state,
            "rng": {"python": random.getstate(), "torch": torch.get_rng_state()},
        },
        partial / STATE_FILE,
    )
    (partial / "config.json").write_text(json.dumps(config, indent=2))
    shutil.rmtree(path, ignore_errors=True)
    partial.rename(path)
    return path


def load_checkpoint(
    path: Path,
    *,
    model: PreTrainedModel,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
) -> dict[str, Any]:
    """Restore weights, optimizer, scheduler and RNG into the given objects; returns the state."""
    state_file = path / STATE_FILE
    if not state_file.is_file():
        raise FileNotFoundError(f"{path} is not a tirlab checkpoint (no {STATE_FILE})")
    load_model_weights(path, model)
    # Our own file, written by save_checkpoint: it holds RNG tuples, not only tensors.
    state = torch.load(state_file, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    random.setstate(state["rng"]["python"])
    torch.set_rng_state(state["rng"]["torch"])
    return state


def load_model_weights(path: Path, model: PreTrainedModel) -> None:
    """Put a checkpoint's weights (its model/ folder) into `model`, which must be of the same architecture."""
    weights_file = path / "model" / "model.safetensors"
    if not weights_file.is_file():
        raise FileNotFoundError(f"{path} is not a tirlab checkpoint (no model/model.safetensors)")
    weights = load_file(weights_file)
    loaded = model.load_state_dict(weights, strict=False)
    # Tied parameters (lm_head sharing the embedding) are saved once; anything else missing is an error.
    model.tie_weights()
    stored = {p.data_ptr() for name, p in model.named_parameters() if name in weights}
    missing = [key for key in loaded.missing_keys if model.get_parameter(key).data_ptr() not in stored]
    if missing or loaded.unexpected_keys:
        raise ValueError(f"{path} does not fit this model: missing {missing}, unexpected {loaded.unexpected_keys}")
