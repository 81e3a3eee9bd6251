"""bench/quickstart.py's --seed: the preset's own config with only the seed changed, since the
trainer's CLI takes a seed only in a config file."""

import json

from bench.quickstart import seeded_config
from trainer.config import RunConfig
from trainer.presets import preset_config


def test_a_seeded_config_is_the_preset_with_another_seed(tmp_path):
    path = seeded_config("otc-mini", 2, tmp_path / "config.json")
    config = RunConfig.model_validate(json.loads(path.read_text()))
    assert config.seed == 2
    assert config.model_copy(update={"seed": preset_config("otc-mini").seed}) == preset_config("otc-mini")


def test_a_config_with_overrides_is_the_preset_with_those_values(tmp_path):
    path = seeded_config("zerotir-mini", None, tmp_path / "config.json", {"tools": {"max_tool_calls": 0}})
    config = RunConfig.model_validate_json(path.read_text())
    expected = preset_config("zerotir-mini")
    assert config.tools.max_tool_calls == 0 and config.seed == expected.seed
    assert config.model_copy(update={"tools": expected.tools}) == expected
