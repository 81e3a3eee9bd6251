"""Generation engines for rollouts: the interface (base) and the transformers engine (hf)."""

from trainer.engines.base import Engine, FinishReason, GenerationOutput, GenerationRequest, Tokenizer

__all__ = ["Engine", "FinishReason", "GenerationOutput", "GenerationRequest", "Tokenizer"]
