"""SFT traces as a dataset file: detected, validated by trainer.sft.data's parser, their protocol named,
and refused where problems for RL are read (and problems refused where traces are)."""

import json
from pathlib import Path
from typing import Any

import pytest

from trainer.config import BUILTIN_SFT_TRACES
from trainer.data.datasets import (
    BUILTIN_DATASETS,
    DatasetError,
    DatasetFormat,
    dataset_misuse,
    detect_format,
    inspect_dataset,
    iter_traces,
    load_dataset,
)
from trainer.sft.data import builtin_trace_rows, load_sft_dataset

RETOOL_PAIR = {
    "prompt": [{"role": "user", "content": "What is 47 * 83?"}],
    "response": "<code>\nprint(47 * 83)\n</code><interpreter>\n3901\n</interpreter>\n<answer>\\boxed{3901}</answer>",
}
RETOOL_MESSAGES = {
    "messages": [
        {"role": "user", "content": "What is 47 * 83?"},
        {"role": "assistant", "content": "<code>\nprint(47 * 83)\n</code>"},
        {"role": "tool", "content": "3901"},
        {"role": "assistant", "content": "<answer>\\boxed{3901}</answer>"},
    ]
}
MARKDOWN_MESSAGES = {
    "messages": [
        {"role": "user", "content": "What is 12 * 12?"},
        {"role": "assistant", "content": "```python\nprint(12 * 12)\n```"},
        {"role": "tool", "content": "144"},
        {"role": "assistant", "content": "\\boxed{144}"},
    ]
}
NO_TOOLS = {"prompt": "What is 2 + 2?", "response": "2 + 2 = 4, so \\boxed{4}"}


def write(path: Path, rows: list[Any], *, bom: bool = False) -> Path:
    text = "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)
    path.write_text(("\ufeff" if bom else "") + text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (RETOOL_PAIR, DatasetFormat.SFT_TRACES),
        (RETOOL_MESSAGES, DatasetFormat.SFT_TRACES),
        ({**RETOOL_MESSAGES, "tools": [{"name": "f"}], "ground_truth": []}, DatasetFormat.FUNCTION_CALLING),
        ({**RETOOL_PAIR, "question": "q", "answer": "1"}, DatasetFormat.JSONL_QA),
    ],
    ids=["prompt-response", "messages", "messages-with-tools", "with-question-and-answer"],
)
def test_traces_are_told_from_problems_by_their_first_record(tmp_path, row, expected):
    assert detect_format(write(tmp_path / "t.jsonl", [row])) is expected


def test_a_record_of_neither_kind_names_both_kinds_in_the_refusal(tmp_path):
    with pytest.raises(DatasetError, match=r"line 1: .*'prompt' and 'response' \(sft_traces\)"):
        detect_format(write(tmp_path / "t.jsonl", [{"prompt": "only a prompt"}]))


@pytest.mark.parametrize(
    ("rows", "protocol"),
    [
        ([RETOOL_PAIR, NO_TOOLS], "retool"),
        ([RETOOL_MESSAGES, RETOOL_PAIR], "retool"),
        ([MARKDOWN_MESSAGES, NO_TOOLS], "python_markdown"),
        ([NO_TOOLS, NO_TOOLS], None),
    ],
    ids=["retool-pairs", "retool-messages", "markdown-messages", "no-tool-calls"],
)
def test_inspect_names_the_protocol_the_traces_are_written_in(tmp_path, rows, protocol):
    info = inspect_dataset(write(tmp_path / "t.jsonl", rows))
    assert (info.format, info.row_count, info.protocol) == (DatasetFormat.SFT_TRACES, len(rows), protocol)


@pytest.mark.parametrize(("name", "protocol"), BUILTIN_SFT_TRACES.items())
def test_the_builtin_trace_sets_written_to_a_file_are_detected_in_their_protocol(tmp_path, name, protocol):
    # The first and the last rows: 'search-mini-read' begins with copy traces.
    traces = builtin_trace_rows(name)
    rows = traces[:150] + traces[-150:]
    info = inspect_dataset(write(tmp_path / f"{name}.jsonl", rows))
    # 'search-mini-copy' answers at once, never searching: no call names a protocol, and every one fits it.
    expected = None if name == "search-mini-copy" else protocol
    assert (info.format, info.row_count, info.protocol) == (DatasetFormat.SFT_TRACES, 300, expected)


def test_the_preview_shows_prompt_and_response_with_its_tool_outputs(tmp_path):
    info = inspect_dataset(write(tmp_path / "t.jsonl", [RETOOL_MESSAGES]))
    (row,) = info.preview
    assert row["prompt"] == [{"role": "user", "content": "What is 47 * 83?"}]
    assert "<interpreter>\n3901\n</interpreter>" in row["response"] and row["tool_outputs"] == 1
    assert {"messages"} == set(info.columns)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([RETOOL_PAIR, {"prompt": "q", "response": ""}], "line 2: 'response' must be a non-empty string"),
        ([RETOOL_PAIR, {"messages": [{"role": "user", "content": "q"}]}], "line 2: 'messages' needs a user message"),
        ([RETOOL_PAIR, {"prompt": "q", "response": "r", "tool_outputs": -1}], "line 2: 'tool_outputs' must be"),
        # A retool file whose third trace calls in markdown: refused as the retool parser says.
        (
            [RETOOL_MESSAGES, RETOOL_PAIR, MARKDOWN_MESSAGES],
            "line 3: messages[2] is a tool output, but the assistant text before it does not end with a "
            "complete call in the 'retool' protocol",
        ),
        (["[1, 2]"], "line 1: expected a JSON object, got list"),
    ],
    ids=["empty-response", "no-assistant", "negative-outputs", "mixed-protocols", "not-an-object"],
)
def test_a_bad_trace_is_refused_with_its_line_and_the_parsers_reason(tmp_path, rows, message):
    with pytest.raises(DatasetError) as caught:
        inspect_dataset(write(tmp_path / "t.jsonl", rows), filename="t.jsonl")
    assert str(caught.value).startswith("t.jsonl: " + message), str(caught.value)


def test_an_accepted_traces_file_is_one_the_trainer_loads_in_its_protocol(tmp_path):
    # Written with a BOM, as editors on Windows do: the upload accepts it, so the trainer must read it.
    path = write(tmp_path / "t.jsonl", [RETOOL_MESSAGES, RETOOL_PAIR, NO_TOOLS], bom=True)
    info = inspect_dataset(path)
    loaded = load_sft_dataset(str(path), protocol=info.protocol)
    assert list(iter_traces(path, info.protocol)) == loaded
    assert [row.tool_outputs for row in loaded] == [1, 1, 0]


@pytest.mark.parametrize("ref", ["file", *BUILTIN_SFT_TRACES])
def test_traces_are_refused_as_problems_for_rl(tmp_path, ref):
    if ref == "file":
        ref = str(write(tmp_path / "traces.jsonl", [RETOOL_PAIR]))
    with pytest.raises(DatasetError, match="holds SFT traces; use it as sft.dataset"):
        load_dataset(ref)


@pytest.mark.parametrize("ref", [*BUILTIN_DATASETS, "arithmetic:mixed"])
def test_problems_are_refused_as_sft_traces(ref):
    assert "not SFT traces; use it as data.train_dataset" in dataset_misuse(ref, sft=True)
    assert dataset_misuse(ref, sft=False) is None


def test_a_stored_datasets_format_decides_what_it_holds():
    assert dataset_misuse("dataset:7", sft=True, format="sft_traces") is None
    assert "holds SFT traces" in dataset_misuse("dataset:7", sft=False, format="sft_traces")
    assert "not SFT traces" in dataset_misuse("dataset:8", sft=True, format="gsm8k")
    assert dataset_misuse("my/file.jsonl", sft=True) is None  # unknown: the reader judges it
