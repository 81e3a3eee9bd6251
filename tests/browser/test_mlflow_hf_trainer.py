"""A Hugging Face Trainer with report_to=["mlflow"] pointed at tirlab: its loss curve on the run page,
and what it logs once at its end (train_runtime, total_flos, …) as values above the charts.

A tiny Llama built from a config (no hub) trains for a few steps on CPU; transformers' own
MLflowCallback starts the run, logs the model config and TrainingArguments as params and the loss at
every logging step (asynchronously, as it does with mlflow >= 2.8), and ends the run.
"""

from __future__ import annotations

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, log_in, screenshot, toggle_theme
from tests.webapp.mlflow_helpers import api_token, mlflow_client_env
from webapp.runs.models import Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
pytest.importorskip("mlflow")
STEPS = 12


def train_tiny_llama(output_dir) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    model = LlamaForCausalLM(config)
    # A sequence the model can learn to continue, so that the loss falls: 0 1 2 ... 15, shifted.
    data = [{"input_ids": torch.arange(i, i + 16) % 64, "labels": torch.arange(i, i + 16) % 64} for i in range(64)]
    args = TrainingArguments(
        output_dir=str(output_dir),
        run_name="tiny-llama-sft",
        max_steps=STEPS,
        logging_steps=1,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        report_to=["mlflow"],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    Trainer(model=model, args=args, train_dataset=data).train()


def test_a_hugging_face_trainer_run_shows_its_loss_curve(page, live_server, researcher, monkeypatch, tmp_path, client):
    with mlflow_client_env(monkeypatch, live_server.url, token=api_token(researcher)):
        monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "hf-trainer")
        train_tiny_llama(tmp_path / "out")

    run = Run.objects.get(source="mlflow")
    assert run.name == "tiny-llama-sft" and run.experiment.name == "hf-trainer" and run.status == "succeeded"
    assert run.config["max_steps"] == str(STEPS) and run.config["model_type"] == "llama"

    # tirlab's own API has the curve.
    client.force_login(researcher)
    loss = client.get(f"/api/v1/runs/{run.pk}/metrics/?keys=loss").json()["series"]["loss"]
    assert loss["step"] == list(range(1, STEPS + 1))
    assert loss["last"][-1] < loss["last"][0]

    # And the run page draws it first, with the params as a tree and no buttons that cannot work.
    log_in(page, live_server, f"/runs/{run.pk}/")
    page.wait_for_function("window.tirlabRunPage && window.tirlabRunPage.headlineRenderedMs !== null")
    headline = page.eval_on_selector_all("#headline-charts .chart", "divs => divs.map(d => d.dataset.key)")
    assert "loss" in headline
    steps = page.evaluate("document.querySelector(\".chart[data-key='loss']\").data[2].customdata.map(c => c[0])")
    assert steps == list(range(1, STEPS + 1))
    # What the Trainer logs once, at its end, is a value each above the charts, not a chart of one point.
    page.wait_for_function("window.tirlabRunPage.allLoadedMs")
    once = ["total_flos", "train_loss", "train_runtime", "train_samples_per_second", "train_steps_per_second"]
    shown = page.eval_on_selector_all(
        "#metric-singles .metric-single",
        "items => items.map(i => [i.querySelector('dt').innerText, i.querySelector('.single-step').innerText])",
    )
    assert shown == [[key, f"step {STEPS}"] for key in once]
    charted = page.eval_on_selector_all(".chart[data-key]", "divs => divs.map(d => d.dataset.key)")
    assert not set(once) & set(charted) and {"loss", "grad_norm", "learning_rate", "epoch"} <= set(charted)
    assert "MLflow" in page.inner_text(".run-meta")
    assert page.locator("#cancel-form").count() == 0 and page.locator("#fork").count() == 0
    assert page.locator("#params-tree code.param-name", has_text="learning_rate").count() == 1
    screenshot(page, "run_page_mlflow.png")
    toggle_theme(page)
    screenshot(page, "run_page_mlflow_dark.png")
    toggle_theme(page)
    assert_readable_in_both_themes(
        page,
        ".run-meta .chip",
        "#params-tree li.param-leaf:first-child",
        "#mlflow-tags tr:first-child td",
        "#metric-singles .metric-single[data-key='train_runtime'] .single-value",
    )
