"""The SFT cold start reports its loss as a metric at every SFT step (`sft/loss`), which the run
page charts; the run's local record keeps those steps apart from the RL steps' metrics.jsonl.

The model is tirlab/tiny-char-init (random weights, built in memory)."""

import json

import pytest

from tests.trainer.test_report import read_jsonl
from tests.trainer.test_sft_phase import PhaseRecorder, _config, traces  # noqa: F401 (traces: a fixture)
from trainer.config import TINY_INIT_MODEL, validate_config
from trainer.contract import SFT_LOSS, is_sft_metric
from trainer.models import load_policy
from trainer.report.client import METRICS_FILE, SFT_METRICS_FILE, Reporter
from trainer.sft.phase import run_sft


class MetricRecorder(PhaseRecorder):
    def __init__(self) -> None:
        super().__init__()
        self.metrics: list[tuple[int, dict]] = []

    def log_metrics(self, step, values):
        self.metrics.append((step, dict(values)))


def test_every_sft_step_reports_its_loss_as_a_metric(traces, tmp_path):  # noqa: F811
    model, tokenizer = load_policy(TINY_INIT_MODEL)
    config = validate_config(_config(traces, epochs=1, batch_size=16, learning_rate=3e-3))
    reporter = MetricRecorder()
    run_sft(model, tokenizer, config, template="plain", reporter=reporter, out_dir=tmp_path, log=lambda _: None)
    losses = json.loads((tmp_path / "sft.json").read_text())["losses"]
    assert reporter.metrics == [(step, {SFT_LOSS: loss}) for step, loss in enumerate(losses, start=1)]
    # The phase says the same step, beside it.
    assert [done for _, done, _, _, _ in reporter.phases] == list(range(1, len(losses) + 1))


def test_the_sft_metrics_are_recorded_apart_from_the_rl_steps(tmp_path):
    assert is_sft_metric(SFT_LOSS) and not is_sft_metric("accuracy") and not is_sft_metric("sfts/x")
    with Reporter(tmp_path) as reporter:
        reporter.log_metrics(1, {SFT_LOSS: 1.5})
        reporter.log_metrics(2, {SFT_LOSS: 1.25})
        reporter.log_metrics(0, {"accuracy": 0.25})
        reporter.log_metrics(1, {"accuracy": 0.5, SFT_LOSS: 1.0})  # both in one step: split by axis
    assert [(m["step"], m["values"]) for m in read_jsonl(tmp_path / METRICS_FILE)] == [
        (0, {"accuracy": 0.25}),
        (1, {"accuracy": 0.5}),
    ]
    assert [(m["step"], m["values"]) for m in read_jsonl(tmp_path / SFT_METRICS_FILE)] == [
        (1, {SFT_LOSS: 1.5}),
        (2, {SFT_LOSS: 1.25}),
        (1, {SFT_LOSS: 1.0}),
    ]


@pytest.mark.parametrize("values", [{}, {"accuracy": 0.1}])
def test_a_step_without_sft_metrics_stays_in_metrics_jsonl(tmp_path, values):
    with Reporter(tmp_path) as reporter:
        reporter.log_metrics(3, values)
    assert [m["values"] for m in read_jsonl(tmp_path / METRICS_FILE)] == [values]
    assert not (tmp_path / SFT_METRICS_FILE).exists()
