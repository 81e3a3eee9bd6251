"""A file of problems is split into its benchmarks by each row's data source: counted at inspection, read from
verl parquet's column and from an optional 'data_source' field of a JSONL row."""

import json
from pathlib import Path
from typing import Any

import pytest

from tests.torl_data import torl_test_parquet_bytes
from trainer.data.datasets import DatasetError, data_source_counts, inspect_dataset, iter_examples


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_verl_parquet_of_three_sources_counts_rows_per_source_in_order_of_first_appearance(tmp_path: Path) -> None:
    path = tmp_path / "test.parquet"
    path.write_bytes(torl_test_parquet_bytes({"aime24": 3, "math500": 4, "aime25": 2}))
    info = inspect_dataset(path)
    assert info.row_count == 9
    assert list(info.data_sources.items()) == [("aime24", 3), ("math500", 4), ("aime25", 2)]
    assert data_source_counts(path) == info.data_sources


def test_a_jsonl_row_may_name_its_data_source(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        [
            {"question": "1+1?", "answer": "2", "data_source": "aime24"},
            {"question": "2+2?", "answer": "4"},
        ],
    )
    assert [example.data_source for example in iter_examples(path)] == ["aime24", "jsonl_qa"]
    assert inspect_dataset(path).data_sources == {"aime24": 1, "jsonl_qa": 1}


def test_a_gsm8k_row_without_a_data_source_keeps_the_formats_name(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gsm8k.jsonl", [{"question": "How many?", "answer": "3 + 4 = 7\n#### 7"}])
    assert inspect_dataset(path).data_sources == {"gsm8k": 1}


def test_a_function_calling_row_may_name_its_data_source(tmp_path: Path) -> None:
    row = {
        "question": "Weather in Paris?",
        "tools": [{"name": "get_weather", "parameters": {}}],
        "ground_truth": [{"name": "get_weather", "arguments": {}}],
    }
    path = write_jsonl(tmp_path / "calls.jsonl", [{**row, "data_source": "xlam"}, row])
    assert inspect_dataset(path).data_sources == {"xlam": 1, "function_calling": 1}


@pytest.mark.parametrize("value", [7, ["aime24"], ""], ids=["number", "list", "empty"])
def test_a_data_source_other_than_a_nonempty_string_is_refused_with_its_line(tmp_path: Path, value: Any) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        [{"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": "4", "data_source": value}],
    )
    with pytest.raises(DatasetError) as info:
        inspect_dataset(path)
    assert (info.value.line, info.value.field) == (2, "data_source")
    assert str(info.value).startswith("line 2: field 'data_source' ")


def test_sft_traces_have_no_data_sources(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "traces.jsonl", [{"prompt": "1+1?", "response": "2"}])
    assert inspect_dataset(path).data_sources == {}
