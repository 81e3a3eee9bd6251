"""The dataset a verl run reads (trainer.verl.data): the rows tirlab's trainer trains on, loaded and
filtered by its own code, each with the prompt the trainer renders for it, in the columns verl's
RLHFDataset reads. (That verl reads them and tirlab's agent loop continues them: tests/verl.)"""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trainer.config import TINY_MODEL, validate_config
from trainer.loop.setup import run_data, run_prompt_template
from trainer.models import CharTokenizer
from trainer.protocols.prompts import build_prompt
from trainer.verl.data import AGENT_NAME, RunConfigFileError, load_run_config, write_verl_dataset

COLUMNS = {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"}


@pytest.fixture
def tokenizer() -> CharTokenizer:
    return CharTokenizer()


def _rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def _quiet(message: str) -> None:
    pass


def test_each_row_holds_the_prompt_tirlabs_trainer_renders(tmp_path: Path, tokenizer: CharTokenizer) -> None:
    config = validate_config({"data": {"train_dataset": "arithmetic"}})
    count = write_verl_dataset(config, split="train", path=tmp_path / "train.parquet", tokenizer=tokenizer, log=_quiet)
    train, _ = run_data(config, template=run_prompt_template(config), tokenizer=tokenizer, log=_quiet)
    rows = _rows(tmp_path / "train.parquet")
    assert count == len(rows) == len(train)
    assert set(rows[0]) == COLUMNS
    for index, (row, example) in enumerate(zip(rows, train, strict=True)):
        prompt = build_prompt(example, config.tools.protocol, run_prompt_template(config)).render(tokenizer)
        assert row["extra_info"]["prompt_text"] == prompt
        assert row["extra_info"]["index"] == index and row["extra_info"]["example_id"] == example.id
        assert row["prompt"] == [{"role": "user", "content": example.prompt[-1]["content"]}]
        assert row["reward_model"] == {"style": "rule", "ground_truth": example.ground_truth}
        assert json.loads(row["extra_info"]["ground_truth"]) == example.ground_truth
        assert row["agent_name"] == AGENT_NAME and row["data_source"] == example.data_source


def test_overlong_prompts_are_dropped_as_the_trainer_drops_them(tmp_path: Path, tokenizer: CharTokenizer) -> None:
    config = validate_config({"data": {"max_prompt_tokens": 34, "overlong_prompts": "drop"}})
    logged: list[str] = []
    path = tmp_path / "t.parquet"
    count = write_verl_dataset(config, split="train", path=path, tokenizer=tokenizer, log=logged.append)
    kept, _ = run_data(config, template=run_prompt_template(config), tokenizer=tokenizer, log=_quiet)
    assert 0 < count == len(kept) < 1000
    assert "dropped" in logged[0]
    assert [row["extra_info"]["example_id"] for row in _rows(path)] == [e.id for e in kept]


def test_calls_and_tools_travel_as_json(tmp_path: Path, tokenizer: CharTokenizer) -> None:
    config = validate_config(
        {
            "data": {"train_dataset": "function-calling", "max_prompt_tokens": 1024},
            "tools": {"protocol": "tool_call_json"},
            "reward": {"name": "tool_n1"},
        }
    )
    write_verl_dataset(config, split="train", path=tmp_path / "fc.parquet", tokenizer=tokenizer, log=_quiet)
    train, _ = run_data(config, template=run_prompt_template(config), tokenizer=tokenizer, log=_quiet)
    row, example = _rows(tmp_path / "fc.parquet")[0], train[0]
    assert isinstance(example.ground_truth, list)
    assert json.loads(row["reward_model"]["ground_truth"]) == example.ground_truth
    assert json.loads(row["extra_info"]["ground_truth"]) == example.ground_truth
    assert json.loads(row["extra_info"]["tools"]) == example.tools
    assert row["ability"] == "none"


def test_the_validation_split_is_the_val_dataset(tmp_path: Path, tokenizer: CharTokenizer) -> None:
    config = validate_config({"data": {"val_dataset": "arithmetic"}})
    count = write_verl_dataset(config, split="val", path=tmp_path / "val.parquet", tokenizer=tokenizer, log=_quiet)
    _, val = run_data(config, template=run_prompt_template(config), tokenizer=tokenizer, log=_quiet)
    rows = _rows(tmp_path / "val.parquet")
    assert count == len(val) == 200
    assert [row["extra_info"]["example_id"] for row in rows] == [e.id for e in val]
    assert {row["extra_info"]["split"] for row in rows} == {"val"}


def test_the_extra_val_datasets_join_the_validation_split_with_their_data_sources(
    tmp_path: Path, tokenizer: CharTokenizer
) -> None:
    config = validate_config({"data": {"val_dataset": "arithmetic", "extra_val_datasets": ["function-calling"]}})
    write_verl_dataset(config, split="val", path=tmp_path / "val.parquet", tokenizer=tokenizer, log=_quiet)
    rows = _rows(tmp_path / "val.parquet")
    sources = [row["data_source"] for row in rows]
    # verl splits its validation metrics by data_source (val-core/<data_source>/…): one benchmark each.
    assert sources[0] == "arithmetic" and sources[-1] == "function-calling" and len(set(sources)) == 2
    ids = [row["extra_info"]["example_id"] for row in rows]
    assert len(ids) == len(set(ids)) and ids[-1].startswith("function-calling#")


def test_a_validation_split_without_a_val_dataset_is_refused(tmp_path: Path, tokenizer: CharTokenizer) -> None:
    with pytest.raises(ValueError, match="data.val_dataset is not set"):
        write_verl_dataset(validate_config({}), split="val", path=tmp_path / "v.parquet", tokenizer=tokenizer)


def test_an_unknown_split_is_refused(tmp_path: Path, tokenizer: CharTokenizer) -> None:
    with pytest.raises(ValueError, match="split must be 'train' or 'val'"):
        write_verl_dataset(validate_config({}), split="test", path=tmp_path / "v.parquet", tokenizer=tokenizer)  # type: ignore[arg-type]


def test_a_tiny_model_has_no_tokenizer_verl_can_load(tmp_path: Path) -> None:
    config = validate_config({"model": {"name_or_path": TINY_MODEL}})
    with pytest.raises(ValueError, match="model.name_or_path 'tirlab/tiny-char'"):
        write_verl_dataset(config, split="train", path=tmp_path / "t.parquet")


def test_the_run_config_file_is_read_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "run-config.json"
    path.write_text(json.dumps({"tools": {"protocol": "retool"}}))
    assert load_run_config(str(path)).tools.protocol == "retool"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tools": {"max_tool_calls": -1}}))
    with pytest.raises(RunConfigFileError, match="tools.max_tool_calls"):
        load_run_config(str(bad))
    with pytest.raises(RunConfigFileError, match="no file"):
        load_run_config(str(tmp_path / "missing.json"))
