"""Function-calling SFT traces: ToolRL's layout, the right calls, their tools in the prompt, the
values weighted -- and scored right by ToolRL's reward."""

import json

from trainer.data.function_calling import function_calling_examples
from trainer.data.sft_traces import parse_record
from trainer.models import build_tiny_model
from trainer.protocols.prompts import prompt_text
from trainer.rewards import score
from trainer.sft.traces.function_calling import function_calling_traces
from trainer.sft.train import encode_trace


def test_each_trace_makes_its_examples_calls_in_toolrls_layout_and_scores_full_marks() -> None:
    rows = function_calling_traces(60, seed=1, level="hard")
    assert rows == function_calling_traces(60, seed=1, level="hard")
    examples = function_calling_examples(60, seed=1, level="hard", split="sft")
    for row, example in zip(rows, examples, strict=True):
        assert row["tools"] == example.tools and row["prompt"] == example.prompt
        result = score("toolrl", row["response"], example.ground_truth)
        assert result.correct and result.total == (4.0 if example.ground_truth else 1.0)
        if example.ground_truth:
            block = row["response"].split("<tool_call>\n")[1].split("\n</tool_call>")[0]
            assert [json.loads(line) for line in block.split("\n")] == [
                {"name": c["name"], "parameters": c["arguments"]} for c in example.ground_truth
            ]
        else:
            assert "<response>" in row["response"] and "<tool_call>" not in row["response"]


def test_the_weighted_spans_are_the_names_and_values() -> None:
    row = next(r for r in function_calling_traces(40, seed=0, level="hard") if r["extra_info"]["calls"] == 2)
    example = next(
        e for e in function_calling_examples(40, seed=0, level="hard", split="sft") if e.prompt == row["prompt"]
    )
    weighted = [row["response"][a:b] for a, b, w in row["weighted_spans"] if w == 4.0]
    expected = []
    for call in example.ground_truth:
        expected += [json.dumps(call["name"]), *(json.dumps(v) for v in call["arguments"].values())]
    assert weighted == expected


def test_in_tool_n1s_layout_each_trace_scores_full_marks_under_its_reward_and_not_toolrls_layout() -> None:
    rows = function_calling_traces(60, seed=1, level="hard", layout="list")
    examples = function_calling_examples(60, seed=1, level="hard", split="sft")
    assert any(not e.ground_truth for e in examples) and any(len(e.ground_truth) == 2 for e in examples)
    for row, example in zip(rows, examples, strict=True):
        assert score("tool_n1", row["response"], example.ground_truth).total == 1.0
        block = row["response"].split("<tool_call>")[1].split("</tool_call>")[0]
        assert json.loads(block) == example.ground_truth  # one list, "arguments"; [] when no call is due
        weighted = [row["response"][a:b] for a, b, _ in row["weighted_spans"]]
        assert weighted == [json.dumps(x) for c in example.ground_truth for x in (c["name"], *c["arguments"].values())]
    # ToolRL's layout does not score under Tool-N1's reward: why tirlab/tiny-char-tool-n1 learns Tool-N1's.
    lines = function_calling_traces(60, seed=1, level="hard")
    assert all(
        score("tool_n1", row["response"], e.ground_truth).total == 0.0 for row, e in zip(lines, examples, strict=True)
    )


def test_the_prompt_a_trace_trains_on_lists_its_tools() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    record = function_calling_traces(1, seed=0, level="easy")[0]
    row = parse_record(record, protocol="tool_call_json", number=1, where="line 1")
    prompt = prompt_text(tokenizer, row.example, "tool_call_json", "tool-signatures")
    assert all(f"{tool['name']}(" in prompt for tool in record["tools"])
    ids, mask = encode_trace(tokenizer, row, protocol="tool_call_json", template="tool-signatures")
    trained = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if m]))
    assert trained.startswith("<think></think>\n<tool_call>\n{") and prompt not in trained
