"""`sft.*` in a run: the SFT phase before RL trains the loaded model on the named traces.

The model is tirlab/tiny-char-init (random weights, built in memory; trained with one thread as
the trainer trains the tiny models)."""

import json
from pathlib import Path

import pytest
import torch

from tests.model_cache import MODEL_CACHE
from trainer.cli import main
from trainer.config import TINY_INIT_MODEL, validate_config
from trainer.data.sft_traces import SFTDataError
from trainer.loop.train import Trainer
from trainer.models import load_policy


class PhaseRecorder:
    """A reporter that keeps what the SFT phase reports."""

    stopped_by_dashboard = False

    def __init__(self) -> None:
        self.phases: list[tuple] = []

    def set_phase(self, name, done, total, eta_s=None, detail=""):
        self.phases.append((name, done, total, eta_s, detail))

    def log_metrics(self, step, values): ...
    def log_trajectories(self, trajectories): ...
    def log(self, message, level="info"): ...


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sft") / "traces.jsonl"
    assert main(["sft-traces", "tiny-cold-start", "--rows", "48", "--out", str(path)]) == 0
    return path


def _config(traces: Path | None, **sft) -> dict:
    return {
        "model": {"name_or_path": TINY_INIT_MODEL},
        "data": {"prompt_template": "plain"},
        "sft": {"enabled": traces is not None, "dataset": None if traces is None else str(traces), **sft},
        "grpo": {"kl_coef": 0.1},
    }


def _trainer(config: dict, out: Path, reporter=None, **kwargs) -> Trainer:
    return Trainer(
        validate_config(config),
        reporter=reporter or PhaseRecorder(),
        out_dir=out,
        model_cache=MODEL_CACHE,
        log=lambda _: None,
        **kwargs,
    )


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_the_sft_phase_trains_the_policy_reports_progress_and_is_the_kl_reference(traces, tmp_path):
    reporter = PhaseRecorder()
    trainer = _trainer(_config(traces, epochs=2, batch_size=16, learning_rate=3e-3), tmp_path, reporter)
    loaded, _ = load_policy(TINY_INIT_MODEL)
    assert not _same_weights(trainer.model, loaded)
    # RL starts from the SFT's result, and so does the KL term's reference.
    assert _same_weights(trainer.ref_model, trainer.model)
    steps = 2 * 48 // 16
    assert [(name, done, total) for name, done, total, _, _ in reporter.phases] == [
        ("sft", done, steps) for done in range(1, steps + 1)
    ]
    assert reporter.phases[-1][3] == 0.0 and reporter.phases[0][3] > 0  # time left
    assert reporter.phases[-1][4].startswith("loss ")
    losses = json.loads((tmp_path / "sft.json").read_text())["losses"]
    assert len(losses) == steps and losses[-1] < losses[0]
    assert trainer.sft_summary["steps"] == steps and trainer.sft_summary["traces"] == 48


def test_epochs_and_learning_rate_are_what_the_config_says(traces, tmp_path):
    one = json.loads((_trainer(_config(traces, batch_size=16), tmp_path / "a").out_dir / "sft.json").read_text())[
        "losses"
    ]
    slower = _trainer(_config(traces, batch_size=16, learning_rate=1e-6), tmp_path / "b")
    assert len(one) == 3
    assert json.loads((tmp_path / "b" / "sft.json").read_text())["losses"][-1] > one[-1]
    loaded, _ = load_policy(TINY_INIT_MODEL)
    # At 1e-6 the weights barely move, but they move.
    deltas = [(x - y).abs().max().item() for x, y in zip(slower.model.parameters(), loaded.parameters(), strict=True)]
    assert 0 < max(deltas) < 1e-3


def test_without_sft_or_on_resume_the_loaded_weights_are_kept(traces, tmp_path):
    loaded, _ = load_policy(TINY_INIT_MODEL)
    assert _same_weights(_trainer(_config(None), tmp_path / "off").model, loaded)
    resumed = _trainer(_config(traces), tmp_path / "resume", sft=False)
    assert _same_weights(resumed.model, loaded)
    assert not (tmp_path / "resume" / "sft.json").exists()


def test_unreadable_traces_fail_before_any_training_with_the_reason(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "What is 1 + 1?"}\n')
    reporter = PhaseRecorder()
    with pytest.raises(SFTDataError, match="row 1: expected 'messages', or 'prompt' and 'response'"):
        _trainer(_config(bad), tmp_path / "out", reporter)
    assert reporter.phases == []
