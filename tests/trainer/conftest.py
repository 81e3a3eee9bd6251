"""Fixtures shared by the trainer's test files."""

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def random_tiny(tmp_path_factory) -> Path:
    """An untrained tiny model saved as a local Hugging Face directory: fast, and enough to check the plumbing."""
    from trainer.models import build_tiny_model  # torch and transformers: only for the tests that need them

    path = tmp_path_factory.mktemp("tiny-random")
    model, tokenizer = build_tiny_model(seed=0)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
