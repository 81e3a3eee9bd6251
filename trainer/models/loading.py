"""`load_policy`: the model and tokenizer a run config names.

The tiny quickstart model is cold-started on first use and cached (trainer.models.tiny.cold_start),
SmolLM2 is converted from its GGUF package and cached (trainer.models.smollm2), so later runs load
either from disk in seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import TINY_BASE_MODEL, TINY_INIT_MODEL, TINY_MODEL
from trainer.models.smollm2 import SMOLLM2_MODEL, smollm2_checkpoint
from trainer.models.tiny.artist import ARTIST
from trainer.models.tiny.base import base_checkpoint
from trainer.models.tiny.cold_start import TINY_SEED, tiny_checkpoint
from trainer.models.tiny.derived import DerivedTiny
from trainer.models.tiny.function_calling import ARTIST_FC, FC, TOOL_N1, TOOLRL
from trainer.models.tiny.model import CharTokenizer, build_tiny_model
from trainer.models.tiny.retool import RETOOL
from trainer.models.tiny.search import SEARCH
from trainer.models.tiny.swe import SWE

DEFAULT_CACHE_DIR = Path("var/models")
# Tiny models fine-tuned from the cold start (trainer.models.tiny.derived), by name.
DERIVED: dict[str, DerivedTiny] = {
    recipe.name: recipe for recipe in (ARTIST, RETOOL, FC, TOOLRL, TOOL_N1, ARTIST_FC, SWE, SEARCH)
}
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_policy(
    name_or_path: str,
    *,
    dtype: str = "float32",
    cache_dir: Path = DEFAULT_CACHE_DIR,
    log: Callable[[str], None] = print,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The policy and its tokenizer, in eval mode: `TINY_MODEL` (cold-started: shipped, or trained
    and cached under `cache_dir`), `TINY_BASE_MODEL` and the `DERIVED` ones (the same for the base
    model and the fine-tuned ones: ARTIST's format, JSON calls), `TINY_INIT_MODEL` (randomly
    initialised from the cold start's seed), `SMOLLM2_MODEL` (converted from its GGUF package and
    cached under `cache_dir`), a local Hugging Face directory, or a hub id (needs a network)."""
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    if name_or_path == TINY_INIT_MODEL:
        # The cold start's starting point: nothing to cache, it is built from its seed in a moment.
        model, tokenizer = build_tiny_model(seed=TINY_SEED)
        return model.to(_DTYPES[dtype]).eval(), tokenizer
    if name_or_path == TINY_MODEL:
        path: Path | None = tiny_checkpoint(cache_dir, log=log)
    elif name_or_path == TINY_BASE_MODEL:
        path = base_checkpoint(cache_dir, log=log)
    elif name_or_path in DERIVED:
        path = DERIVED[name_or_path].checkpoint(cache_dir, log=log)
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
