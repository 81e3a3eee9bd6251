"""The suite's model cache, and the tiny model's cold start in it.

Building the cold start (SFT, minutes of CPU; trainer.models.tiny_checkpoint) is the longest single
step of a run from an empty cache. The tests that need it ask for the `tiny_model_cache` fixture:
the first one builds it (tests/tiers.py sends that test first, so the other workers run the rest
meanwhile), and the others wait on the checkpoint's file lock, then load it.
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
