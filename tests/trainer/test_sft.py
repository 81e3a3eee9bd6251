import re

import pytest

from trainer.data.arithmetic import arithmetic_examples
from trainer.data.sft_traces import parse_rows
from trainer.models import TINY_PROMPT_TEMPLATE, build_tiny_model
from trainer.protocols.prompts import prompt_text
from trainer.sft.traces.arithmetic import choice_position, tool_use_traces
from trainer.sft.train import encode_trace, evaluate, sft_train

PROTOCOL = "python_markdown"


def _rows(size: int, protocol: str = PROTOCOL, **kwargs):
    return parse_rows(tool_use_traces(size, seed=1, protocol=protocol, **kwargs), protocol=protocol, source="test")


def _encode(tokenizer, row, protocol: str = PROTOCOL):
    return encode_trace(tokenizer, row, protocol=protocol, template=TINY_PROMPT_TEMPLATE)


def _prompt(tokenizer, row, protocol: str = PROTOCOL) -> str:
    return prompt_text(tokenizer, row.example, protocol, TINY_PROMPT_TEMPLATE)


def test_traces_are_seeded_half_tool_calls_and_right_only_when_they_should_be() -> None:
    rows = tool_use_traces(400, seed=1)
    assert rows == tool_use_traces(400, seed=1)
    traces = parse_rows(rows, protocol=PROTOCOL, source="test")
    tool = [t for t in traces if t.tool_outputs]
    assert 0.4 < len(tool) / len(traces) < 0.6
    for difficulty in ("easy", "hard"):
        share = sum(t.tool_outputs for t in traces if t.difficulty == difficulty)
        assert 0.35 < share / sum(t.difficulty == difficulty for t in traces) < 0.65
    for trace in traces:
        expression = re.search(r"What is (.+)\?", trace.example.prompt[-1]["content"])[1]
        value = str(eval(expression))  # the generator's operands are plain integers
        boxed = re.fullmatch(r".*\\boxed\{(-?\d+)\}", trace.response, re.DOTALL)[1]
        if trace.tool_outputs:
            assert trace.response == (
                f"```python\nprint({expression})\n```\n```output\n{value}\n```\n\\boxed{{{value}}}"
            )
        elif trace.difficulty == "easy":
            assert boxed == value
        else:
            assert boxed != value and len(boxed.lstrip("-")) == len(value.lstrip("-"))


def test_retool_traces_use_retool_syntax_and_its_tool_text() -> None:
    traces = _rows(40, protocol="retool", feedback="retool")
    call = next(t for t in traces if t.tool_outputs)
    expression = re.search(r"What is (.+)\?", call.example.prompt[-1]["content"])[1]
    value = str(eval(expression))
    # The recipe's sandbox tool feeds back stdout + stderr as printed, newline included.
    assert call.response == (
        f"<code>\nprint({expression})\n</code><interpreter>\n{value}\n\n</interpreter>\n<answer>\\boxed{{{value}}}</answer>"
    )
    with pytest.raises(ValueError, match="no trace format for protocol 'artist'"):
        tool_use_traces(4, seed=1, protocol="artist")


def test_loss_mask_covers_model_text_and_eos_but_not_prompt_or_tool_output() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    traces = _rows(40)
    trace = next(t for t in traces if t.tool_outputs)
    ids, mask = _encode(tokenizer, trace)
    prompt = _prompt(tokenizer, trace)
    assert len(ids) == len(mask) == len(prompt) - len("<|bos|>") + 1 + len(trace.response) + 1
    trained = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if m]))
    masked = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if not m]))
    value = re.search(r"\\boxed\{(.+)\}", trace.response)[1]
    assert masked == prompt + f"\n{value}\n```\n"
    assert trained.startswith("```python\nprint(") and trained.endswith(f"```output\\boxed{{{value}}}<|eos|>")

    direct = next(t for t in traces if not t.tool_outputs)
    ids, mask = _encode(tokenizer, direct)
    assert sum(mask) == len(direct.response) + 1


def test_retool_tool_text_is_masked_as_in_rl() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    trace = next(t for t in _rows(20, protocol="retool", feedback="retool") if t.tool_outputs)
    ids, mask = _encode(tokenizer, trace, protocol="retool")
    masked = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if not m]))
    assert masked.removeprefix(_prompt(tokenizer, trace, "retool")).startswith("<interpreter>")
    assert masked.endswith("</interpreter>\n")


def test_a_skewed_mix_is_reweighted_so_the_policy_starts_undecided() -> None:
    traces = _rows(2000, tool_share={"easy": 0.2, "hard": 0.8})
    for difficulty, share in (("easy", 0.2), ("hard", 0.8)):
        picked = [t for t in traces if t.difficulty == difficulty]
        tool = [t for t in picked if t.tool_outputs]
        assert abs(len(tool) / len(picked) - share) < 0.05
        assert {t.choice_weight for t in tool} == {0.5 / share}
        assert {t.choice_weight for t in picked if not t.tool_outputs} == {0.5 / (1 - share)}
        # The choice the loss sees: calling and answering weigh about the same on every difficulty.
        weighted = sum(t.choice_weight for t in tool) / sum(t.choice_weight for t in picked)
        assert abs(weighted - 0.5) < 0.05
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        tool_use_traces(10, seed=1, tool_share=1.0)


def test_content_weight_falls_on_the_expression_and_right_answers_only() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    plain_rows, rows = _rows(60), _rows(60, content_weight=4.0)

    def weighted(trace, weight):
        ids, mask = _encode(tokenizer, trace)
        return "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if m == weight]))

    tool = next(t for t in rows if t.tool_outputs)
    expression = re.search(r"What is (.+)\?", tool.example.prompt[-1]["content"])[1]
    value = re.search(r"\\boxed\{(.+)\}", tool.response)[1]
    assert weighted(tool, 4.0) == f"{expression}){value}}}"
    easy = next(t for t in rows if not t.tool_outputs and t.difficulty == "easy")
    assert weighted(easy, 4.0) == easy.response[len("\\boxed{") :]
    guess = next(t for t in rows if not t.tool_outputs and t.difficulty == "hard")
    assert weighted(guess, 4.0) == ""  # a wrong guess is never something to learn harder
    # Content weighting changes neither the ids nor the positions that are trained.
    for plain, trace in zip(plain_rows, rows, strict=True):
        plain_ids, plain_mask = _encode(tokenizer, plain)
        ids, mask = _encode(tokenizer, trace)
        assert ids == plain_ids and [m > 0 for m in mask] == [m > 0 for m in plain_mask]


def test_the_choice_token_carries_the_choice_weight() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    for trace in _rows(40, tool_share=0.25)[:6]:
        ids, mask = _encode(tokenizer, trace)
        first = len(tokenizer.encode(_prompt(tokenizer, trace), add_special_tokens=False))
        assert mask[first] == trace.choice_weight == (2.0 if trace.tool_outputs else 0.5 / 0.75)
        assert tokenizer.convert_ids_to_tokens(ids[first]) == ("`" if trace.tool_outputs else "\\")
        assert set(mask[first + 1 :]) <= {0.0, 1.0}


def test_where_call_and_answer_share_a_prefix_the_weight_falls_where_they_part() -> None:
    # ReTool's <code> and <answer> both open with "<": the choice is the next character. Weighting the
    # "<" (as the traces once did) left the "c"/"a" at the raw shares, so retool-mini's SFT made the
    # policy call on 90% of hard problems instead of starting undecided.
    assert choice_position("python_markdown") == 0 and choice_position("retool") == 1
    _, tokenizer = build_tiny_model(seed=0)
    share = 0.25
    for trace in _rows(40, "retool", tool_share=share)[:8]:
        ids, mask = _encode(tokenizer, trace, "retool")
        first = len(tokenizer.encode(_prompt(tokenizer, trace, "retool"), add_special_tokens=False))
        chosen = "c" if trace.tool_outputs else "a"
        assert tokenizer.convert_ids_to_tokens(ids[first : first + 2]) == ["<", chosen]
        assert mask[first] == 1.0
        assert mask[first + 1] == (0.5 / share if trace.tool_outputs else 0.5 / (1 - share))


def test_sft_loss_decreases_and_reports_progress() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    seen = []
    losses = sft_train(
        model,
        tokenizer,
        _rows(16) * 4,
        protocol=PROTOCOL,
        template=TINY_PROMPT_TEMPLATE,
        epochs=1,
        lr=3e-3,
        batch_size=8,
        seed=0,
        log=lambda _: None,
        progress=lambda step, total, loss, elapsed: seen.append((step, total, loss)),
    )
    assert len(losses) == 8
    assert sum(losses[-2:]) / 2 < sum(losses[:2]) / 2 - 0.3
    assert not model.training
    assert [(step, total) for step, total, _ in seen] == [(step, 8) for step in range(1, 9)]
    assert [loss for _, _, loss in seen] == losses


def test_greedy_evaluation_reports_accuracy_and_tool_use_per_difficulty() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    examples = arithmetic_examples(4, seed=0, difficulty="mixed", split="test")
    summary = evaluate(model, tokenizer, examples, template=TINY_PROMPT_TEMPLATE, max_new_tokens=8)
    assert summary["all"]["n"] == 4
    assert sum(summary[d]["n"] for d in ("easy", "hard") if d in summary) == 4
    assert 0.0 <= summary["all"]["accuracy"] <= 1.0 and 0.0 <= summary["all"]["tool_use"] <= 1.0
