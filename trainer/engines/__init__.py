"""Generation engines for rollouts: the interface (base), the transformers engine (hf) and the
vLLM engine for GPUs (vllm, imported on its own: it needs the vllm package only when constructed)."""

from trainer.engines.base import Engine, FinishReason, GenerationOutput, GenerationRequest, Tokenizer

__all__ = ["Engine", "FinishReason", "GenerationOutput", "GenerationRequest", "Tokenizer"]
