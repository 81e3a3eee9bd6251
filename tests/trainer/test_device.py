"""`model.device`: where the policy trains and, with engine 'hf', generates."""

import pytest
import torch

from tests.model_cache import MODEL_CACHE
from trainer.config import validate_config
from trainer.loop.setup import policy_device
from trainer.loop.train import run_training
from trainer.report.client import Reporter

GPU = torch.cuda.is_available()


def _config(model, device: str) -> dict:
    return {
        "model": {"name_or_path": str(model), "device": device},
        "data": {"prompt_template": "plain", "max_response_tokens": 24},
        "rollout": {"prompts_per_step": 2, "group_size": 2},
        "schedule": {"max_steps": 1},
    }


@pytest.mark.skipif(GPU, reason="checks the CPU-only answer")
def test_auto_is_the_cpu_without_a_gpu_and_cuda_is_refused_with_the_reason() -> None:
    assert policy_device(validate_config({})) == "cpu"
    with pytest.raises(ValueError, match="model.device 'cuda': no CUDA GPU is visible"):
        policy_device(validate_config({"model": {"device": "cuda"}}))


def test_an_unknown_device_is_refused_by_the_config() -> None:
    with pytest.raises(ValueError, match="model.device"):
        validate_config({"model": {"device": "tpu"}})


@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("device", ["auto", "cuda"])
def test_the_hf_engine_trains_and_generates_on_the_gpu(random_tiny, tmp_path, device) -> None:
    with Reporter(tmp_path) as reporter:
        trainer = run_training(
            validate_config(_config(random_tiny, device)), reporter=reporter, out_dir=tmp_path, model_cache=MODEL_CACHE
        )
    assert next(trainer.model.parameters()).device.type == "cuda"
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 1
