import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer.data.datasets import (
    BUILTIN_FILES,
    DatasetError,
    DatasetFormat,
    detect_format,
    inspect_dataset,
    iter_examples,
    load_dataset,
    load_examples,
)
from trainer.trajectory import Example

REPO = Path(__file__).resolve().parents[2]
GSM8K_TEST = REPO / "data" / "gsm8k" / "test.jsonl"

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {"city": {"type": "str"}},
}
TIME_TOOL = {"name": "get_time", "description": "Current time", "parameters": {}}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def gsm8k_row(number: str = "72") -> dict[str, str]:
    return {"question": "How many?", "answer": f"48 + 24 = 72\n#### {number}"}


def fc_row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "question": "Weather in Paris?",
        "tools": [WEATHER_TOOL, TIME_TOOL],
        "ground_truth": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    }
    row.update(overrides)
    return row


def message_type() -> pa.DataType:
    return pa.struct([("role", pa.string()), ("content", pa.string())])


def verl_table(rows: int = 3) -> pa.Table:
    return pa.table(
        {
            "data_source": ["openai/gsm8k"] * rows,
            "prompt": [
                [
                    {"role": "system", "content": "Think step by step."},
                    {"role": "user", "content": f"What is {i} + 1?"},
                ]
                for i in range(rows)
            ],
            "ability": ["math"] * rows,
            "reward_model": [
                {"ground_truth": str(i + 1), "style": "rule"} for i in range(rows)
            ],
            "extra_info": [{"index": 100 + i, "split": "test"} for i in range(rows)],
        },
        schema=pa.schema(
            [
                ("data_source", pa.string()),
                ("prompt", pa.list_(message_type())),
                ("ability", pa.string()),
                (
                    "reward_model",
                    pa.struct([("ground_truth", pa.string()), ("style", pa.string())]),
                ),
                (
                    "extra_info",
                    pa.struct([("index", pa.int64()), ("split", pa.string())]),
                ),
            ]
        ),
    )


def write_parquet(path: Path, table: pa.Table) -> Path:
    pq.write_table(table, path)
    return path


@pytest.fixture
def verl_file(tmp_path: Path) -> Path:
    return write_parquet(tmp_path / "train.parquet", verl_table())


def error_for(path: Path, **kwargs: Any) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        inspect_dataset(path, **kwargs)
    return info.value


# Detection


def test_detects_jsonl_qa_from_question_and_answer(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "qa.jsonl", [{"question": "2+2?", "answer": 4}])
    assert detect_format(path) is DatasetFormat.JSONL_QA


def test_detects_gsm8k_when_answer_has_hash_marker(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "math.jsonl", [gsm8k_row()])
    assert detect_format(path) is DatasetFormat.GSM8K


def test_detects_function_calling_from_tools_key(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "fc.jsonl", [fc_row()])
    assert detect_format(path) is DatasetFormat.FUNCTION_CALLING


def test_detects_parquet_by_magic_bytes_not_file_name(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "misnamed.jsonl", verl_table())
    assert detect_format(path) is DatasetFormat.VERL_PARQUET


def test_jsonl_named_parquet_is_detected_as_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.parquet", [gsm8k_row()])
    assert detect_format(path) is DatasetFormat.GSM8K


def test_detection_skips_leading_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text('\n  \n{"question": "q", "answer": "a"}\n', encoding="utf-8")
    assert detect_format(path) is DatasetFormat.JSONL_QA


def test_unrecognised_row_names_missing_fields_and_accepted_formats(
    tmp_path: Path,
) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"prompt": "hi", "label": 1}])
    err = error_for(path)
    assert err.line == 1
    assert "fields 'question' and 'answer' are missing" in str(err)
    for name in ("jsonl_qa", "gsm8k", "function_calling", "verl_parquet"):
        assert name in str(err)


def test_unrecognised_row_names_the_single_missing_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"question": "2+2?"}])
    err = error_for(path)
    assert err.field == "answer"
    assert str(err).startswith("line 1: field 'answer' is missing")


def test_real_gsm8k_test_file_is_read_whole(tmp_path: Path) -> None:
    info = inspect_dataset(GSM8K_TEST)
    assert info.format is DatasetFormat.GSM8K
    assert info.row_count == 1319
    assert info.preview[0]["ground_truth"] == "18"
    assert info.columns == ["question", "answer"]


# Inspection


def test_preview_holds_the_first_rows_as_json_safe_dicts(verl_file: Path) -> None:
    info = inspect_dataset(verl_file, preview_rows=2)
    assert info.preview == [
        {
            "id": "100",
            "prompt": [
                {"role": "system", "content": "Think step by step."},
                {"role": "user", "content": "What is 0 + 1?"},
            ],
            "ground_truth": "1",
            "data_source": "openai/gsm8k",
            "tools": None,
        },
        {
            "id": "101",
            "prompt": [
                {"role": "system", "content": "Think step by step."},
                {"role": "user", "content": "What is 1 + 1?"},
            ],
            "ground_truth": "2",
            "data_source": "openai/gsm8k",
            "tools": None,
        },
    ]
    assert json.loads(json.dumps(info.preview)) == info.preview


def test_preview_is_short_when_the_file_is(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "math.jsonl", [gsm8k_row(), gsm8k_row("3")])
    info = inspect_dataset(path, preview_rows=5)
    assert [row["ground_truth"] for row in info.preview] == ["72", "3"]
    assert info.row_count == 2


def test_checksum_and_size_describe_the_file_bytes(verl_file: Path) -> None:
    data = verl_file.read_bytes()
    info = inspect_dataset(verl_file)
    assert info.checksum == hashlib.sha256(data).hexdigest()
    assert info.size_bytes == len(data)


def test_parquet_columns_are_the_schema_columns(verl_file: Path) -> None:
    info = inspect_dataset(verl_file)
    assert info.columns == [
        "data_source",
        "prompt",
        "ability",
        "reward_model",
        "extra_info",
    ]
    assert info.row_count == 3


def test_jsonl_columns_are_the_union_of_keys_in_order(tmp_path: Path) -> None:
    rows = [{"question": "a", "answer": 1}, {"id": "x", "question": "b", "answer": 2}]
    info = inspect_dataset(write_jsonl(tmp_path / "qa.jsonl", rows))
    assert info.columns == ["question", "answer", "id"]


def test_filename_is_named_in_error_messages(tmp_path: Path) -> None:
    path = tmp_path / "upload-7f3a"
    path.write_text('{"question": "q", "answer": "a"}\n{oops\n', encoding="utf-8")
    err = error_for(path, filename="train.jsonl")
    assert str(err).startswith("train.jsonl: line 2: invalid JSON")
    assert err.line == 2


# Malformed files


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert str(error_for(path)) == "the file is empty"


def test_file_of_blank_lines_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n   \n\t\n", encoding="utf-8")
    assert str(error_for(path)) == "the file is empty"


def test_parquet_without_rows_is_empty(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "empty.parquet", verl_table(rows=0))
    assert str(error_for(path)) == "the file is empty"


def test_oversized_file_is_rejected_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as file:
        # Sparse NUL bytes: reading them would fail as binary, not as too large.
        file.truncate(3 * 1024 * 1024)
    err = error_for(path, max_bytes=2 * 1024 * 1024)
    assert str(err) == "file is 3 MB, over the limit of 2 MB"


def test_nul_byte_means_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(b'{"question": "q", "answer": "a"}\n\x00\x01\x02\n')
    err = error_for(path)
    assert str(err) == "line 2: binary file, expected JSONL or parquet"


def test_invalid_utf8_means_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"question": "caf\u00e9", "answer": "a"}\n'.encode("latin-1"))
    assert "binary file, expected JSONL or parquet" in str(error_for(path))


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(gsm8k_row())] * 2 + ['{"question": "q" "answer": "#### 1"}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = error_for(path)
    assert str(err) == "line 3: invalid JSON (Expecting ',' delimiter at column 18)"


def test_json_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "list.jsonl", [gsm8k_row(), [1, 2]])
    assert str(error_for(path)) == "line 2: expected a JSON object, got list"


def test_missing_field_names_line_and_field(tmp_path: Path) -> None:
    rows: list[Any] = [{"question": "q", "answer": 1}] * 6 + [{"question": "q"}]
    err = error_for(write_jsonl(tmp_path / "qa.jsonl", rows))
    assert str(err) == "line 7: field 'answer' is missing"
    assert (err.line, err.field) == (7, "answer")


def test_wrong_type_names_expected_and_actual_type(tmp_path: Path) -> None:
    rows: list[Any] = [{"question": "q", "answer": 1}] * 3
    rows.append({"question": ["q"], "answer": 1})
    err = error_for(write_jsonl(tmp_path / "qa.jsonl", rows))
    assert str(err) == "line 4: field 'question' must be a string, got list"


def test_qa_answer_must_be_string_or_number(tmp_path: Path) -> None:
    rows = [{"question": "q", "answer": "a"}, {"question": "q", "answer": True}]
    err = error_for(write_jsonl(tmp_path / "qa.jsonl", rows))
    assert (
        str(err) == "line 2: field 'answer' must be a string or a number, got boolean"
    )


def test_bad_row_deep_in_file_is_found_at_inspection(tmp_path: Path) -> None:
    rows: list[Any] = [gsm8k_row()] * 8999 + [{"question": 5, "answer": "#### 1"}]
    err = error_for(write_jsonl(tmp_path / "big.jsonl", rows))
    assert err.line == 9000


def test_gsm8k_row_without_hash_marker_names_its_line(tmp_path: Path) -> None:
    rows = [gsm8k_row()] * 39 + [{"question": "q", "answer": "just 72"}]
    err = error_for(write_jsonl(tmp_path / "math.jsonl", rows))
    assert str(err) == "line 40: field 'answer' has no final '#### <number>'"


def test_gsm8k_final_answer_must_be_a_number(tmp_path: Path) -> None:
    rows = [gsm8k_row(), gsm8k_row("seventy-two")]
    err = error_for(write_jsonl(tmp_path / "math.jsonl", rows))
    assert str(err) == (
        "line 2: field 'answer' must end with '#### <number>', got '#### seventy-two'"
    )


def test_unreadable_parquet_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1" + b"\x00garbage" * 20)
    assert str(error_for(path)).startswith("cannot read parquet file (")


def test_corrupt_parquet_pages_are_reported_on_one_line(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "t.parquet", verl_table(rows=200))
    data = bytearray(path.read_bytes())
    # Damage the data pages but leave the footer, so opening succeeds.
    for offset in range(200, 1200, 7):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    message = str(error_for(path))
    assert message.startswith("cannot read parquet file (")
    assert "\n" not in message


@pytest.mark.parametrize("column", ["prompt", "reward_model", "data_source"])
def test_parquet_missing_required_column_is_named(tmp_path: Path, column: str) -> None:
    path = write_parquet(tmp_path / "t.parquet", verl_table().drop_columns([column]))
    err = error_for(path)
    assert err.field == column
    assert str(err).startswith(f"column '{column}' is missing")


def test_parquet_prompt_must_be_chat_messages(tmp_path: Path) -> None:
    table = verl_table().set_column(
        1, "prompt", pa.array(["What is 1 + 1?"] * 3, pa.string())
    )
    err = error_for(write_parquet(tmp_path / "t.parquet", table))
    assert str(err) == (
        "row 0: column 'prompt' must be a non-empty list of chat messages "
        "{role, content}, got string"
    )


def test_parquet_message_without_content_names_the_row(tmp_path: Path) -> None:
    prompts = [[{"role": "user", "content": "q"}]] * 2 + [[{"role": "user"}]]
    table = verl_table().set_column(
        1, "prompt", pa.array(prompts, pa.list_(message_type()))
    )
    err = error_for(write_parquet(tmp_path / "t.parquet", table))
    assert err.row == 2
    assert str(err) == (
        "row 2: column 'prompt': message 1 must have a string 'role' and 'content'"
    )


def test_parquet_reward_model_without_ground_truth_names_the_row(
    tmp_path: Path,
) -> None:
    reward_type = pa.struct([("ground_truth", pa.string()), ("style", pa.string())])
    rewards = [
        {"ground_truth": "1", "style": "rule"},
        {"ground_truth": None, "style": "rule"},
        {"ground_truth": "3", "style": "rule"},
    ]
    table = verl_table().set_column(3, "reward_model", pa.array(rewards, reward_type))
    err = error_for(write_parquet(tmp_path / "t.parquet", table))
    assert str(err) == "row 1: column 'reward_model' has no 'ground_truth'"
    assert (err.row, err.field) == (1, "reward_model")


def test_call_to_unknown_tool_names_the_line(tmp_path: Path) -> None:
    bad = fc_row(ground_truth=[{"name": "book_flight", "arguments": {}}])
    err = error_for(write_jsonl(tmp_path / "fc.jsonl", [fc_row(), bad]))
    assert str(err) == (
        "line 2: field 'ground_truth': call 1 names tool 'book_flight', "
        "which is not in 'tools'"
    )


def test_tool_without_name_is_rejected(tmp_path: Path) -> None:
    row = fc_row(tools=[WEATHER_TOOL, {"description": "nameless"}])
    err = error_for(write_jsonl(tmp_path / "fc.jsonl", [row]))
    assert str(err) == "line 1: field 'tools': tool 2 has no string 'name'"


def test_function_calling_row_without_ground_truth_is_rejected(
    tmp_path: Path,
) -> None:
    row = fc_row()
    del row["ground_truth"]
    err = error_for(write_jsonl(tmp_path / "fc.jsonl", [fc_row(), row]))
    assert str(err) == "line 2: field 'ground_truth' is missing"


def test_function_calling_row_without_prompt_is_rejected(tmp_path: Path) -> None:
    row = fc_row()
    del row["question"]
    err = error_for(write_jsonl(tmp_path / "fc.jsonl", [row]))
    assert str(err) == "line 1: field 'question', 'query' or 'messages' is missing"


def test_string_encoded_tools_must_be_valid_json(tmp_path: Path) -> None:
    row = fc_row(tools='[{"name": "get_weather"')
    err = error_for(write_jsonl(tmp_path / "fc.jsonl", [row]))
    assert str(err).startswith("line 1: field 'tools' is a string but not valid JSON (")


def test_explicit_format_must_match_the_file(verl_file: Path) -> None:
    with pytest.raises(DatasetError, match="but the file is parquet"):
        load_examples(verl_file, DatasetFormat.GSM8K)


def test_dataset_error_keeps_its_position_through_pickling() -> None:
    err = DatasetError("field 'answer' is missing", line=7, field="answer")
    copy = pickle.loads(pickle.dumps(err))
    assert (str(copy), copy.line, copy.field) == (str(err), 7, "answer")


# Reading examples


def test_jsonl_qa_examples(tmp_path: Path) -> None:
    rows = [
        {"question": "2+2?", "answer": 4},
        {"id": "q-2", "question": "Capital of France?", "answer": " Paris "},
        {"question": "Half of 7?", "answer": 3.5, "extra_info": {"index": 9}},
    ]
    examples = load_examples(write_jsonl(tmp_path / "qa.jsonl", rows))
    assert examples == [
        Example(
            id="1",
            prompt=[{"role": "user", "content": "2+2?"}],
            ground_truth="4",
            data_source="jsonl_qa",
        ),
        Example(
            id="q-2",
            prompt=[{"role": "user", "content": "Capital of France?"}],
            ground_truth="Paris",
            data_source="jsonl_qa",
        ),
        Example(
            id="9",
            prompt=[{"role": "user", "content": "Half of 7?"}],
            ground_truth="3.5",
            data_source="jsonl_qa",
            extra_info={"index": 9},
        ),
    ]


def test_gsm8k_ground_truth_drops_thousands_separators(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "math.jsonl", [gsm8k_row("1,000")])
    (example,) = iter_examples(path)
    assert example == Example(
        id="1",
        prompt=[{"role": "user", "content": "How many?"}],
        ground_truth="1000",
        data_source="gsm8k",
    )


def test_example_ids_default_to_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "math.jsonl"
    path.write_text(
        f"{json.dumps(gsm8k_row())}\n\n{json.dumps(gsm8k_row())}\n", encoding="utf-8"
    )
    assert [example.id for example in iter_examples(path)] == ["1", "3"]


def test_verl_examples_keep_prompt_and_extra_info(verl_file: Path) -> None:
    first = next(iter_examples(verl_file))
    assert first == Example(
        id="100",
        prompt=[
            {"role": "system", "content": "Think step by step."},
            {"role": "user", "content": "What is 0 + 1?"},
        ],
        ground_truth="1",
        data_source="openai/gsm8k",
        extra_info={"index": 100, "split": "test"},
    )


def test_verl_ids_default_to_row_index(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "t.parquet", verl_table().drop_columns(["extra_info"])
    )
    assert [example.id for example in iter_examples(path)] == ["0", "1", "2"]


def test_function_calling_examples(tmp_path: Path) -> None:
    (example,) = load_examples(write_jsonl(tmp_path / "fc.jsonl", [fc_row(id=7)]))
    assert example == Example(
        id="7",
        prompt=[{"role": "user", "content": "Weather in Paris?"}],
        ground_truth=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
        data_source="function_calling",
        tools=[WEATHER_TOOL, TIME_TOOL],
    )


def test_function_calling_prompt_from_messages(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Time?"},
    ]
    row = fc_row(
        ground_truth=[{"name": "get_time", "arguments": {}}], messages=messages
    )
    del row["question"]
    (example,) = load_examples(write_jsonl(tmp_path / "fc.jsonl", [row]))
    assert example.prompt == messages


def test_empty_call_list_is_a_valid_ground_truth(tmp_path: Path) -> None:
    (example,) = load_examples(
        write_jsonl(tmp_path / "fc.jsonl", [fc_row(ground_truth=[])])
    )
    assert example.ground_truth == []


def test_xlam_string_encoded_tools_and_answers(tmp_path: Path) -> None:
    row = {
        "id": 4,
        "query": "Weather in Oslo and the time?",
        "tools": json.dumps([WEATHER_TOOL, TIME_TOOL]),
        "answers": json.dumps(
            [
                {"name": "get_weather", "arguments": {"city": "Oslo"}},
                {"name": "get_time", "arguments": {}},
            ]
        ),
    }
    path = write_jsonl(tmp_path / "xlam.jsonl", [row])
    assert detect_format(path) is DatasetFormat.FUNCTION_CALLING
    (example,) = load_examples(path)
    assert example.id == "4"
    assert example.prompt == [
        {"role": "user", "content": "Weather in Oslo and the time?"}
    ]
    assert example.tools == [WEATHER_TOOL, TIME_TOOL]
    assert example.ground_truth == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"name": "get_time", "arguments": {}},
    ]


def test_toolrl_parameters_alias_becomes_arguments(tmp_path: Path) -> None:
    row = fc_row(ground_truth=[{"name": "get_weather", "parameters": {"city": "Rome"}}])
    (example,) = load_examples(write_jsonl(tmp_path / "toolrl.jsonl", [row]))
    assert example.ground_truth == [
        {"name": "get_weather", "arguments": {"city": "Rome"}}
    ]


def test_json_encoded_call_arguments_are_decoded(tmp_path: Path) -> None:
    call = {"name": "get_weather", "arguments": '{"city": "Lima"}'}
    (example,) = load_examples(
        write_jsonl(tmp_path / "fc.jsonl", [fc_row(ground_truth=[call])])
    )
    assert example.ground_truth == [
        {"name": "get_weather", "arguments": {"city": "Lima"}}
    ]


def test_openai_style_tools_are_named_by_their_function(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": WEATHER_TOOL}]
    (example,) = load_examples(
        write_jsonl(tmp_path / "fc.jsonl", [fc_row(tools=tools)])
    )
    assert example.tools == tools


def test_load_examples_matches_iter_examples(verl_file: Path) -> None:
    assert load_examples(verl_file) == list(iter_examples(verl_file))


# Dataset references


def test_load_dataset_arithmetic_is_the_seeded_generator() -> None:
    from trainer.data.arithmetic import arithmetic_examples

    examples = load_dataset("arithmetic", seed=7, size=20)
    assert examples == arithmetic_examples(20, seed=7)
    assert load_dataset("arithmetic", seed=7, size=20, split="test") == arithmetic_examples(20, seed=7, split="test")
    assert {e.extra_info["difficulty"] for e in load_dataset("arithmetic:easy", size=10)} == {"easy"}
    assert {e.extra_info["difficulty"] for e in load_dataset("arithmetic:hard", size=10)} == {"hard"}
    with pytest.raises(DatasetError, match="difficulty 'medium'"):
        load_dataset("arithmetic:medium")


def test_load_dataset_gsm8k_reads_the_repository_files() -> None:
    first = load_dataset("gsm8k", size=2)
    assert [e.id for e in first] == ["1", "2"]
    assert first[0].ground_truth == "72"  # Natalia's clips, the first train problem
    assert first[0].data_source == "gsm8k"
    assert len(load_dataset("gsm8k-test")) == 1319


def test_a_builtin_file_name_means_its_file_whatever_the_split() -> None:
    # A run's val_dataset is loaded with split="test": `gsm8k` must still be the train file, as on the dashboard.
    assert load_dataset("gsm8k", split="test", size=3) == load_dataset(str(BUILTIN_FILES["gsm8k"].path), size=3)
    assert load_dataset("gsm8k-test", split="train", size=3) == load_examples(GSM8K_TEST)[:3]


def test_load_dataset_reads_a_file_path(verl_file: Path) -> None:
    assert load_dataset(str(verl_file)) == load_examples(verl_file)
    assert load_dataset(str(verl_file), size=1) == load_examples(verl_file)[:1]


def test_load_dataset_unknown_reference_names_the_accepted_forms(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="built-in name .*arithmetic.*gsm8k.* or the path"):
        load_dataset(str(tmp_path / "missing.jsonl"))
    with pytest.raises(DatasetError, match="dashboard upload"):
        load_dataset("dataset:12")
    with pytest.raises(DatasetError, match="size"):
        load_dataset("arithmetic", size=-1)


def test_toolrl_release_shape_keeps_text_ground_truth_and_extra_info(tmp_path: Path) -> None:
    # A verl parquet row as ToolRL ships it: the ground truth in ToolRL's text form, kept as text
    # for the toolrl reward to parse, and split/index in extra_info.
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    truth = f"<think>Weather first.</think>\n<tool_call>\n{call}\n</tool_call>"
    table = pa.table(
        {
            "data_source": ["rlla"],
            "prompt": [[{"role": "system", "content": "You are a helpful dialogue assistant..."},
                        {"role": "user", "content": "Weather in Paris?"}]],
            "ability": ["tool"],
            "reward_model": [{"ground_truth": truth, "style": "rule"}],
            "extra_info": [{"index": 4, "split": "train"}],
        }
    )
    (example,) = load_examples(write_parquet(tmp_path / "rlla.parquet", table))
    assert (example.id, example.ground_truth, example.data_source) == ("4", truth, "rlla")
    assert example.extra_info == {"index": 4, "split": "train"}
    assert example.prompt[1] == {"role": "user", "content": "Weather in Paris?"}


def test_verl_tools_column_is_carried(tmp_path: Path) -> None:
    table = verl_table(2).append_column("tools", pa.array([json.dumps([WEATHER_TOOL]), None]))
    first, second = load_examples(write_parquet(tmp_path / "fc.parquet", table))
    assert first.tools == [WEATHER_TOOL]
    assert second.tools is None


def test_verl_tools_column_must_hold_named_tools(tmp_path: Path) -> None:
    table = verl_table(1).append_column("tools", pa.array([json.dumps([{"description": "no name"}])]))
    err = error_for(write_parquet(tmp_path / "fc.parquet", table))
    assert (err.row, err.field) == (0, "tools")
    assert "tool 1 has no string 'name'" in str(err)
