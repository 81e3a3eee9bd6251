import re

import pytest

from trainer.models import TINY_PROMPT_TEMPLATE, build_tiny_model
from trainer.sft import encode_trace, evaluate, sft_train, tool_use_traces
from trainer.synthetic import arithmetic_examples


def _traces(size: int):
    _, tokenizer = build_tiny_model(seed=0)
    return tokenizer, tool_use_traces(tokenizer, size, seed=1, template=TINY_PROMPT_TEMPLATE)


def test_traces_are_seeded_half_tool_calls_and_right_only_when_they_should_be() -> None:
    tokenizer, traces = _traces(400)
    assert traces == tool_use_traces(tokenizer, 400, seed=1, template=TINY_PROMPT_TEMPLATE)
    tool = [t for t in traces if t.tool_outputs]
    assert 0.4 < len(tool) / len(traces) < 0.6
    for difficulty in ("easy", "hard"):
        share = sum(t.tool_outputs for t in traces if t.difficulty == difficulty)
        assert 0.35 < share / sum(t.difficulty == difficulty for t in traces) < 0.65
    for trace in traces:
        expression = re.search(r"What is (.+)\?", trace.prompt)[1]
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


def test_loss_mask_covers_model_text_and_eos_but_not_prompt_or_tool_output() -> None:
    tokenizer, traces = _traces(40)
    trace = next(t for t in traces if t.tool_outputs)
    ids, mask = encode_trace(tokenizer, trace)
    assert len(ids) == len(mask) == len(trace.prompt) - len("<|bos|>") + 1 + len(trace.response) + 1
    trained = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if m]))
    masked = "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if not m]))
    value = re.search(r"\\boxed\{(.+)\}", trace.response)[1]
    assert masked == trace.prompt + f"\n{value}\n```\n"
    assert trained.startswith("```python\nprint(") and trained.endswith(f"```output\\boxed{{{value}}}<|eos|>")

    direct = next(t for t in traces if not t.tool_outputs)
    ids, mask = encode_trace(tokenizer, direct)
    assert sum(mask) == len(direct.response) + 1


def test_a_skewed_mix_is_reweighted_so_the_policy_starts_undecided() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    traces = tool_use_traces(
        tokenizer, 2000, seed=1, template=TINY_PROMPT_TEMPLATE, tool_share={"easy": 0.2, "hard": 0.8}
    )
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
        tool_use_traces(tokenizer, 10, seed=1, template=TINY_PROMPT_TEMPLATE, tool_share=1.0)


def test_content_weight_falls_on_the_expression_and_right_answers_only() -> None:
    tokenizer, traces = _traces(60)

    def weighted(trace, weight):
        ids, mask = encode_trace(tokenizer, trace, content_weight=4.0)
        return "".join(tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask, strict=True) if m == weight]))

    tool = next(t for t in traces if t.tool_outputs)
    expression = re.search(r"What is (.+)\?", tool.prompt)[1]
    value = re.search(r"\\boxed\{(.+)\}", tool.response)[1]
    assert weighted(tool, 4.0) == f"{expression}){value}}}"
    easy = next(t for t in traces if not t.tool_outputs and t.difficulty == "easy")
    assert weighted(easy, 4.0) == easy.response[len("\\boxed{") :]
    guess = next(t for t in traces if not t.tool_outputs and t.difficulty == "hard")
    assert weighted(guess, 4.0) == ""  # a wrong guess is never something to learn harder
    # Content weighting changes neither the ids nor the positions that are trained.
    for trace in (tool, easy, guess):
        plain_ids, plain = encode_trace(tokenizer, trace)
        ids, mask = encode_trace(tokenizer, trace, content_weight=4.0)
        assert ids == plain_ids and [m > 0 for m in mask] == [m > 0 for m in plain]


def test_the_choice_token_carries_the_choice_weight() -> None:
    _, tokenizer = build_tiny_model(seed=0)
    traces = tool_use_traces(tokenizer, 40, seed=1, template=TINY_PROMPT_TEMPLATE, tool_share=0.25)
    for trace in traces[:6]:
        ids, mask = encode_trace(tokenizer, trace)
        first = len(tokenizer.encode(trace.prompt, add_special_tokens=False))
        assert mask[first] == trace.choice_weight == (2.0 if trace.tool_outputs else 0.5 / 0.75)
        assert tokenizer.convert_ids_to_tokens(ids[first]) == ("`" if trace.tool_outputs else "\\")
        assert set(mask[first + 1 :]) <= {0.0, 1.0}


def test_sft_loss_decreases() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    _, traces = _traces(16)
    losses = sft_train(model, tokenizer, traces * 4, epochs=1, lr=3e-3, batch_size=8, seed=0, log=lambda _: None)
    assert len(losses) == 8
    assert sum(losses[-2:]) / 2 < sum(losses[:2]) / 2 - 0.3
    assert not model.training


def test_greedy_evaluation_reports_accuracy_and_tool_use_per_difficulty() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    examples = arithmetic_examples(4, seed=0, difficulty="mixed", split="test")
    summary = evaluate(model, tokenizer, examples, template=TINY_PROMPT_TEMPLATE, max_new_tokens=8)
    assert summary["all"]["n"] == 4
    assert sum(summary[d]["n"] for d in ("easy", "hard") if d in summary) == 4
    assert 0.0 <= summary["all"]["accuracy"] <= 1.0 and 0.0 <= summary["all"]["tool_use"] <= 1.0
