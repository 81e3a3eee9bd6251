"""The tiny model's cold start that tirlab ships: there is one for the current recipe, runs start
from it without training, and it does what its report (written when it was built) says."""

import json
from pathlib import Path

import pytest

from trainer.config import TINY_MODEL
from trainer.models import load_policy
from trainer.models.tiny_cold_start import (
    SHIPPED_DIR,
    SHIPPED_REPORT,
    evaluate_cold_start,
    shipped_checkpoint,
    tiny_fingerprint,
)

REBUILD = "python -m trainer cold-start --ship"


@pytest.fixture(scope="module")
def shipped() -> Path:
    path = shipped_checkpoint()
    found = sorted(p.name for p in SHIPPED_DIR.glob("tiny-char-*"))
    assert path is not None, (
        f"no shipped cold start for the tiny model's recipe (fingerprint {tiny_fingerprint()}; shipped: "
        f"{found or 'none'}): the recipe changed, so rebuild it with `{REBUILD}` and commit {SHIPPED_DIR.name}/"
    )
    return path


def test_exactly_the_current_recipe_is_shipped(shipped: Path) -> None:
    assert sorted(p.name for p in SHIPPED_DIR.iterdir()) == [shipped.name]
    names = {p.name for p in shipped.iterdir()}
    assert {"model.safetensors", "config.json", "vocab.json", SHIPPED_REPORT} <= names
    report = json.loads((shipped / SHIPPED_REPORT).read_text())
    assert report["built_with"]["command"] == REBUILD


def test_a_run_of_the_tiny_model_starts_from_it_without_training(shipped: Path, tmp_path: Path) -> None:
    logs: list[str] = []
    model, tokenizer = load_policy(TINY_MODEL, cache_dir=tmp_path / "cache", log=logs.append)
    assert logs == []  # no "cold-starting … by SFT"
    assert not (tmp_path / "cache").exists()
    assert model.config.num_hidden_layers == 4 and tokenizer.vocab_size == model.config.vocab_size


def test_it_does_what_its_report_says(shipped: Path, tmp_path: Path) -> None:
    report = json.loads((shipped / SHIPPED_REPORT).read_text())
    model, tokenizer = load_policy(TINY_MODEL, cache_dir=tmp_path)
    measured = evaluate_cold_start(model, tokenizer, eval_size=report["eval_size"])
    # Greedy decoding of the same weights on the same problems: equal on the machine that built it,
    # a problem or two apart where float reductions round differently.
    for key in ("accuracy", "tool_use"):
        assert measured["greedy"]["all"][key] == pytest.approx(report["greedy"]["all"][key], abs=0.03), key
    # What GRPO needs from it (trainer.models.tiny_cold_start.SFTBudget): easy problems answered,
    # hard ones mostly only through the tool, and a policy still undecided about calling it.
    sampled = measured["sampled_t1"]
    assert sampled["easy"]["accuracy"] >= 0.9
    assert sampled["hard"]["accuracy"] >= 0.3
    for difficulty in ("easy", "hard"):
        assert 0.2 <= sampled[difficulty]["tool_use"] <= 0.9, difficulty
