"""The suite's model cache, and the tiny model's cold start for it.

The tests that run the tiny model ask for the `tiny_model_cache` fixture. Normally the cold start is
the shipped one (trainer/models/shipped/) and nothing is built. While a change to the model's recipe
has not been shipped yet (`python -m trainer cold-start --ship`), the first such test trains it by
SFT into the cache (minutes of CPU; tests/tiers.py sends that test first, so the other workers run
the rest meanwhile), and the others wait on the checkpoint's file lock, then load it.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODEL_CACHE = Path(os.environ.get("TIRLAB_VAR_DIR") or REPO / "var") / "models"
FIXTURE = "tiny_model_cache"


@pytest.fixture(scope="session")
def tiny_model_cache() -> Path:
    """The model cache, with the cold-started tiny model (`TINY_MODEL`) in it."""
    from trainer.models import tiny_checkpoint

    tiny_checkpoint(MODEL_CACHE)
    return MODEL_CACHE
