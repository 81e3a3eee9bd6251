"""`load_policy`: the model and tokenizer a run config names.

The tiny quickstart model is cold-started by SFT on first use and cached, so later runs load it
from disk in seconds. The cache directory name carries a fingerprint of everything that shapes the
model (architecture, tokenizer, chat and prompt templates, SFT budget), so changing the recipe
trains a new model instead of loading a stale one, and the checkpoint can always be rebuilt by
deleting the directory.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import TINY_MODEL
from trainer.models.smollm2 import SMOLLM2_MODEL, smollm2_checkpoint
from trainer.models.tiny import CHAT_TEMPLATE, TINY_PROMPT_TEMPLATE, CharTokenizer, build_tiny_model, tiny_config

DEFAULT_CACHE_DIR = Path("var/models")
# The cached cold start is one fixed model, whatever the run's seed: runs differ in RL, not in
# their starting point, and a single cache entry serves them all.
TINY_SEED = 0
# Bumped when the trace generator or training loop changes in a way the fingerprint cannot see.
TINY_RECIPE_VERSION = 2
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_policy(
    name_or_path: str,
    *,
    dtype: str = "float32",
    cache_dir: Path = DEFAULT_CACHE_DIR,
    log: Callable[[str], None] = print,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The policy and its tokenizer, in eval mode: `TINY_MODEL` (cold-started and cached under
    `cache_dir`), `SMOLLM2_MODEL` (converted from its GGUF package and cached under `cache_dir`),
    a local Hugging Face directory, or a hub id (needs a network)."""
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    if name_or_path == TINY_MODEL:
        path: Path | None = tiny_checkpoint(cache_dir, log=log)
    elif name_or_path == SMOLLM2_MODEL:
        path = smollm2_checkpoint(cache_dir, log=log)
    else:
        path = Path(name_or_path)
    if path is not None and not path.is_dir():
        # Not a directory: a hub id, resolved by transformers against its own cache or the hub.
        path = None
    source = str(path) if path is not None else name_or_path
    tokenizer = _load_tokenizer(source, path)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=_DTYPES[dtype])
    model.eval()
    return model, tokenizer


def _load_tokenizer(source: str, path: Path | None) -> PreTrainedTokenizerBase:
    config_file = path / "tokenizer_config.json" if path is not None else None
    if config_file is not None and config_file.is_file():
        if json.loads(config_file.read_text()).get("tokenizer_class") == CharTokenizer.__name__:
            # AutoTokenizer only knows transformers' own classes; the project's tokenizer is loaded directly.
            return CharTokenizer.from_pretrained(source)
    return AutoTokenizer.from_pretrained(source)


def tiny_fingerprint() -> str:
    """A short hash of everything that determines the cold-started tiny model."""
    from trainer.sft import TINY_SFT

    recipe = {
        "version": TINY_RECIPE_VERSION,
        "seed": TINY_SEED,
        "config": tiny_config(CharTokenizer()).to_dict(),
        "vocab": CharTokenizer().get_vocab(),
        "chat_template": CHAT_TEMPLATE,
        "prompt_template": TINY_PROMPT_TEMPLATE,
        "sft": dataclasses.asdict(TINY_SFT),
    }
    recipe["config"].pop("transformers_version", None)
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()[:12]


def tiny_checkpoint(cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
    """The directory of the cold-started tiny model, training it first if it is not cached.

    An exclusive file lock makes a second process wait for the first one's training instead of
    repeating it; the model is written to a temporary directory and renamed into place, so a
    killed training never leaves a half-written checkpoint that looks complete.
    """
    from trainer.sft import tiny_cold_start

    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f"tiny-char-{tiny_fingerprint()}"
    with open(cache_dir / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        log(f"cold-starting {TINY_MODEL} by SFT (cached at {target} for later runs)")
        model, tokenizer = build_tiny_model(seed=TINY_SEED)
        tiny_cold_start(model, tokenizer, seed=TINY_SEED, template=TINY_PROMPT_TEMPLATE, log=log)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.rename(target)
    return target
