"""Policy models: the project's tiny character-level model, SmolLM2 from its GGUF package, and loading of
Hugging Face models."""

from trainer.models.loading import DEFAULT_CACHE_DIR, load_policy
from trainer.models.smollm2 import SMOLLM2_MODEL, smollm2_checkpoint
from trainer.models.tiny.cold_start import tiny_checkpoint
from trainer.models.tiny.model import (
    CHAT_TEMPLATE,
    TINY_PROMPT_TEMPLATE,
    CharTokenizer,
    build_tiny_model,
    tiny_config,
)

__all__ = [
    "CHAT_TEMPLATE",
    "DEFAULT_CACHE_DIR",
    "SMOLLM2_MODEL",
    "TINY_PROMPT_TEMPLATE",
    "CharTokenizer",
    "build_tiny_model",
    "load_policy",
    "smollm2_checkpoint",
    "tiny_checkpoint",
    "tiny_config",
]
