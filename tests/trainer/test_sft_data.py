import json
from pathlib import Path

import pytest

from trainer.config import BUILTIN_SFT_TRACES
from trainer.models import TINY_PROMPT_TEMPLATE, build_tiny_model
from trainer.sft.data import BUILTIN_TRACES, SFTDataError, load_sft_dataset
from trainer.sft.train import encode_trace


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


PAIR = {
    "prompt": [{"role": "user", "content": "What is 47 * 83?"}],
    "response": "<code>\nprint(47 * 83)\n</code><interpreter>\n3901\n</interpreter>\n<answer>\\boxed{3901}</answer>",
}
MESSAGES = {
    "messages": [
        {"role": "user", "content": "What is 47 * 83?"},
        {"role": "assistant", "content": "<code>\nprint(47 * 83)\n</code>"},
        {"role": "tool", "content": "3901"},
        {"role": "assistant", "content": "<answer>\\boxed{3901}</answer>"},
    ]
}


def test_the_builtin_names_are_the_configs() -> None:
    assert {name: protocol for name, (protocol, _) in BUILTIN_TRACES.items()} == BUILTIN_SFT_TRACES


def test_both_forms_of_a_trace_train_the_same_tokens(tmp_path: Path) -> None:
    pair = load_sft_dataset(str(_write(tmp_path / "a.jsonl", [PAIR])), protocol="retool")
    messages = load_sft_dataset(str(_write(tmp_path / "b.jsonl", [MESSAGES])), protocol="retool")
    assert pair[0].response == messages[0].response and pair[0].tool_outputs == messages[0].tool_outputs == 1
    _, tokenizer = build_tiny_model(seed=0)
    encoded = [
        encode_trace(tokenizer, rows[0], protocol="retool", template=TINY_PROMPT_TEMPLATE) for rows in (pair, messages)
    ]
    assert encoded[0] == encoded[1]
    ids, mask = encoded[0]
    masked = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if not m]))
    assert masked.endswith("<interpreter>\n3901\n</interpreter>\n")


def test_a_question_string_is_a_user_message(tmp_path: Path) -> None:
    row = {"prompt": "What is 2 + 2?", "response": "\\boxed{4}"}
    (trace,) = load_sft_dataset(str(_write(tmp_path / "q.jsonl", [row])), protocol="python_markdown")
    assert trace.example.prompt == [{"role": "user", "content": "What is 2 + 2?"}] and trace.tool_outputs == 0


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["{not json"], "line 1: not JSON"),
        ([PAIR, [1, 2]], "row 2: expected a JSON object"),
        ([{"prompt": "q"}], "expected 'messages', or 'prompt' and 'response'"),
        ([{"prompt": "q", "response": ""}], "'response' must be a non-empty string"),
        ([{**PAIR, "tool_outputs": -1}], "'tool_outputs' must be a non-negative integer"),
        (
            [{**PAIR, "response": "```python\nprint(1)\n```\n```output\n1\n```\n\\boxed{1}", "tool_outputs": 1}],
            "'tool_outputs' is 1 but the 'retool' protocol finds 0 tool output block",
        ),
        ([{**PAIR, "choice_weight": "high"}], "'choice_weight' must be a number"),
        ([{**PAIR, "tools": {"name": "f"}}], "'tools' must be a list of tool objects"),
        ([{**PAIR, "weighted_spans": [[0, 10_000, 2.0]]}], "each weighted span is"),
        ([{"prompt": [{"role": "system", "content": "s"}], "response": "x"}], "'prompt' has no user message"),
        ([{"messages": [{"role": "user", "content": "q"}]}], "needs a user message, then an assistant message"),
        (
            [
                {
                    "messages": [
                        {"role": "user", "content": "q"},
                        {"role": "assistant", "content": "hm"},
                        {"role": "tool", "content": "1"},
                    ]
                }
            ],
            "does not end with a complete call in the 'retool' protocol",
        ),
        (
            [{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": 3}]}],
            "string 'role' and 'content'",
        ),
        ([], "no traces"),
    ],
)
def test_bad_traces_are_refused_naming_the_row(tmp_path: Path, rows: list, message: str) -> None:
    with pytest.raises(SFTDataError, match=message):
        load_sft_dataset(str(_write(tmp_path / "bad.jsonl", rows)), protocol="retool")


def test_a_missing_file_a_parquet_file_and_a_protocol_mismatch_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SFTDataError, match="neither a built-in trace set .* nor a file"):
        load_sft_dataset(str(tmp_path / "missing.jsonl"), protocol="retool")
    parquet = tmp_path / "t.parquet"
    parquet.write_bytes(b"PAR1....")
    with pytest.raises(SFTDataError, match="not parquet"):
        load_sft_dataset(str(parquet), protocol="retool")
    with pytest.raises(SFTDataError, match="written in the 'python_markdown' protocol"):
        load_sft_dataset("tiny-cold-start", protocol="retool")


def test_a_builtin_trace_set_loads_in_its_protocol() -> None:
    rows = load_sft_dataset("retool-mini-sft", protocol="retool")
    assert len(rows) == 4000 and all("<answer>\\boxed{" in row.response for row in rows)
    assert any(row.tool_outputs for row in rows)
