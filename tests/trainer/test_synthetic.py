import re
from collections import Counter

import pytest

from trainer.data.arithmetic import _evaluate, arithmetic_examples

EASY = re.compile(r"What is (\d) ([-+*]) (\d)\?")
HARD = re.compile(r"What is (\d{2}) \* (\d{2})\?")


def question(example) -> str:
    (message,) = example.prompt
    assert message["role"] == "user"
    return message["content"]


def test_same_seed_same_problems_other_seed_other_problems() -> None:
    first = arithmetic_examples(50, seed=3)
    assert first == arithmetic_examples(50, seed=3)
    assert [question(e) for e in first] != [question(e) for e in arithmetic_examples(50, seed=4)]


def test_splits_draw_different_problems() -> None:
    train = [question(e) for e in arithmetic_examples(50, seed=0, difficulty="hard", split="train")]
    test = [question(e) for e in arithmetic_examples(50, seed=0, difficulty="hard", split="test")]
    assert train != test


def test_easy_problems_are_one_operation_on_single_digits() -> None:
    examples = arithmetic_examples(300, seed=1, difficulty="easy")
    for example in examples:
        match = EASY.fullmatch(question(example))
        assert match, question(example)
        a, operator, b = int(match[1]), match[2], int(match[3])
        expected = {"+": a + b, "-": a - b, "*": a * b}[operator]
        assert example.ground_truth == str(expected)
        assert expected >= 0
        assert example.extra_info["difficulty"] == "easy"
    assert {EASY.fullmatch(question(e))[2] for e in examples} == {"+", "-", "*"}


def test_hard_problems_are_products_of_two_two_digit_numbers_with_four_digit_answers() -> None:
    examples = arithmetic_examples(300, seed=2, difficulty="hard")
    for example in examples:
        match = HARD.fullmatch(question(example))
        assert match, question(example)
        a, b = int(match[1]), int(match[2])
        assert 32 <= a <= 99 and 32 <= b <= 99
        assert example.ground_truth == str(a * b)
        assert example.extra_info["difficulty"] == "hard"
    # Every answer has 4 digits: the one length the tiny model learns to copy quickly.
    assert {len(e.ground_truth) for e in examples} == {4}


def test_mixed_holds_both_difficulties_and_records_each() -> None:
    examples = arithmetic_examples(200, seed=0)
    counts = Counter(e.extra_info["difficulty"] for e in examples)
    assert set(counts) == {"easy", "hard"}
    assert 60 < counts["easy"] < 140


def test_examples_are_uniform() -> None:
    example = arithmetic_examples(1, seed=5, split="test")[0]
    assert example.id == "arithmetic-test-0"
    assert example.data_source == "arithmetic"
    assert example.tools is None
    assert example.extra_info is not None
    assert example.extra_info["difficulty"] in ("easy", "hard")
    recorded = {key: example.extra_info[key] for key in ("split", "index", "seed")}
    assert recorded == {"split": "test", "index": 0, "seed": 5}
    assert len({e.id for e in arithmetic_examples(100)}) == 100


def test_default_sizes() -> None:
    assert len(arithmetic_examples()) == 1000
    assert len(arithmetic_examples(split="test")) == 200
    assert arithmetic_examples(0) == []


def test_precedence_in_evaluation() -> None:
    assert _evaluate([2, 3, 4], ["+", "*"]) == 14
    assert _evaluate([2, 3, 4], ["*", "-"]) == 2
    assert _evaluate([10, 3, 4], ["-", "-"]) == 3
    assert _evaluate([10, 3, 4], ["-", "*"]) == -2


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="difficulty"):
        arithmetic_examples(1, difficulty="medium")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="size"):
        arithmetic_examples(-1)
