"""The new-run page's word on the GPU presets agrees with the trainer: a preset needs a GPU exactly when
trainer.presets says so (Preset.needs_gpu, engine 'vllm'), and the page says this machine lacks one
exactly when the trainer's own check would refuse such a run here (trainer.loop.setup)."""

import pytest

from trainer.loop.setup import check_vllm_available
from trainer.presets import PRESETS_REGISTRY, preset_config
from webapp.ui.new_run_views import _preset_groups, gpu_engine_missing

GPU_PRESETS = [name for name, preset in PRESETS_REGISTRY.items() if preset.needs_gpu]


@pytest.mark.parametrize("preset", GPU_PRESETS)
def test_the_page_says_a_gpu_is_missing_exactly_when_the_trainer_refuses(preset):
    try:
        check_vllm_available(preset_config(preset))
    except ValueError as exc:
        missing = gpu_engine_missing()
        assert missing and missing in str(exc)
    else:
        assert gpu_engine_missing() == ""


def test_the_menu_groups_follow_the_registry():
    groups = _preset_groups()
    assert [group["gpu"] for group in groups] == [False, True]
    for group in groups:
        assert [p["name"] for p in group["presets"]] == [
            name for name, preset in PRESETS_REGISTRY.items() if preset.needs_gpu is group["gpu"]
        ]
    assert "quickstart" in [p["name"] for p in groups[0]["presets"]]
    assert "torl" in [p["name"] for p in groups[1]["presets"]]
