"""The tiny base model's corpus (trainer.models.tiny.base_corpus): what zero RL may assume the base has seen."""

from trainer.data.sft_traces import parse_rows
from trainer.models.tiny.base_corpus import NOTEBOOK_PROMPT, TINY_BASE, BaseCorpus, base_corpus_rows
from trainer.models.tiny.model import TINY_PROMPT_TEMPLATE, CharTokenizer
from trainer.rewards.zerotir import format_problem
from trainer.sft.train import encode_trace


def _questions(rows):
    return [row for row in rows if row["extra_info"]["kind"] == "question"]


def test_without_code_share_no_question_is_ever_answered_with_code():
    rows = base_corpus_rows(BaseCorpus(traces=2000, code_share=0.0))
    questions = _questions(rows)
    notebooks = [row for row in rows if row["extra_info"]["kind"] == "notebook"]
    assert 0.35 < len(notebooks) / len(rows) < 0.45
    assert questions and not any("```python" in row["response"] for row in questions)
    assert all(row["prompt"][0]["content"].startswith("What is ") for row in questions)
    # Notebook text lives under its own prompt, and every row has ZeroTIR's answer format.
    assert all("```python" in row["response"] and "```output" in row["response"] for row in notebooks)
    assert all(row["prompt"][0]["content"].endswith(" with Python.") for row in notebooks)
    assert all(format_problem(row["response"]) is None for row in rows)


def test_the_shipped_recipe_thinks_through_code_in_a_few_percent_of_questions():
    assert TINY_BASE.code_share == 0.03
    questions = _questions(base_corpus_rows(BaseCorpus(traces=20000)))
    with_code = [row for row in questions if "```python" in row["response"]]
    assert 0.02 < len(with_code) / len(questions) < 0.04
    # A question's code prints its own expression and answers with the printed value.
    row = with_code[0]
    expression = row["prompt"][0]["content"].removeprefix("What is ").removesuffix("?")
    assert f"print({expression})" in row["response"]


def test_hard_questions_answered_in_text_are_wrong_guesses_easy_ones_right():
    rows = _questions(base_corpus_rows(BaseCorpus(traces=400, code_share=0.0)))
    for row in rows:
        expression = row["prompt"][0]["content"].removeprefix("What is ").removesuffix("?")
        answer = row["response"].split("\\boxed{")[1].split("}")[0]
        right = str(eval(expression))  # noqa: S307 - our own generated arithmetic
        assert (answer == right) == (row["extra_info"]["difficulty"] == "easy"), row


def test_outputs_are_text_the_model_learns_not_masked_tool_output():
    raw = next(r for r in base_corpus_rows(BaseCorpus(traces=50)) if r["extra_info"]["kind"] == "notebook")
    [row] = parse_rows([raw], protocol="python_markdown", source="base")
    assert row.tool_outputs == 0
    tokenizer = CharTokenizer()
    ids, weights = encode_trace(tokenizer, row, protocol="python_markdown", template=TINY_PROMPT_TEMPLATE)
    # One character per token; a special token (bos, eos) stands as one placeholder character.
    text = "".join(token if len(token) == 1 else "\0" for token in tokenizer.convert_ids_to_tokens(ids))
    value = raw["response"].split("```output\n")[1].split("\n")[0]
    at = text.index("```output\n") + len("```output\n")
    assert text[at : at + len(value)] == value
    assert all(weight > 0 for weight in weights[at : at + len(value)])
    assert raw["prompt"][0]["content"] == NOTEBOOK_PROMPT.format(
        expression=raw["response"].split("print(")[1].split(")")[0]
    )
