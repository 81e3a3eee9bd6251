"""What the verl tests share: a model directory verl's HFModelConfig loads (verl/workers/config/model.py)."""

from pathlib import Path

import pytest
from transformers import AutoTokenizer, LlamaConfig

from trainer.models.smollm2 import smollm2_gguf


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2's tokenizer (from its GGUF package: a real BPE tokenizer with a chat template) beside a
    one-layer Llama config: no weights, which neither the agent loop nor the reward manager loads."""
    gguf = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    path = tmp_path_factory.mktemp("smollm2-tokenizer")
    tokenizer.save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        eos_token_id=tokenizer.eos_token_id,
        architectures=["LlamaForCausalLM"],
    )
    config.save_pretrained(path)
    return path
