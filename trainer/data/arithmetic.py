"""A seeded synthetic arithmetic dataset for the CPU quickstart.

Easy problems are one operation on single-digit operands ("What is 7 + 5?"), small enough that a
tiny model can learn them in minutes; hard problems multiply two two-digit numbers from 32 to 99
("What is 47 * 83?"), which no tiny model does in its head: calling the Python tool pays off.

Hard problems are this uniform for the quickstart's tiny character-level model, whose tool calls
copy the expression into print() and the tool's output into \\boxed{}: it learns to copy text of
one length within minutes, text of many lengths only by luck. With two or three operands up to 99
and + - * (answers of 1 to 7 characters) its cold start copied answers of 4 or more characters in
one run of three; with products of 10..99 it copied every 4-digit answer but few 3-digit ones (18%
of those problems). From 32 up, every expression has 7 characters and every answer 4 digits.

Chain problems multiply three such numbers ("What is 47 * 83 * 59?"), drawn again until the product
has 6 digits: every first product has 4 digits and every answer 6, so their calls and answers have
one length too. They need two tool calls from a policy that, as ARTIST-mini's traces teach it
(trainer.sft.traces.artist), runs one multiplication per call; a hard problem needs one.
``multi`` mixes hard and chain problems, ``mixed`` easy and hard ones; adding levels left the
streams of the older ones as they were (a new level draws only where it is chosen).

The same seed, split and size always give the same problems, so a quickstart run is reproducible
and its validation set never changes between runs.
"""

from __future__ import annotations

import random
from typing import Literal

from trainer.trajectory import Example

Difficulty = Literal["easy", "hard", "chain", "mixed", "multi"]
DIFFICULTIES: tuple[str, ...] = ("easy", "hard", "chain", "mixed", "multi")
# The levels a mix draws from, with equal odds.
MIXES: dict[str, tuple[str, str]] = {"mixed": ("easy", "hard"), "multi": ("hard", "chain")}
DATA_SOURCE = "arithmetic"
DEFAULT_SIZES = {"train": 1000, "test": 200}

_OPERATORS = ("+", "-", "*")


def example_count(size: int | None, split: str) -> int:
    """How many examples a seeded generator makes: `size`, or by default 1000 for train and 200 otherwise."""
    count = DEFAULT_SIZES.get(split, DEFAULT_SIZES["test"]) if size is None else size
    if count < 0:
        raise ValueError(f"size must be >= 0, got {count}")
    return count


def arithmetic_examples(
    size: int | None = None,
    *,
    seed: int = 0,
    difficulty: Difficulty = "mixed",
    split: str = "train",
) -> list[Example]:
    """``size`` problems (default 1000 for train, 200 otherwise); a mix (``mixed``, ``multi``) draws
    each problem's difficulty from its two levels with equal odds. Ground truths are exact integer strings."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
    count = example_count(size, split)
    # A string seed is hashed (SHA-512) by random.Random, so every split gets its own stream that is
    # the same in every process and Python version, unlike hash() of a str.
    rng = random.Random(f"arithmetic:{seed}:{split}")
    examples = []
    for index in range(count):
        level = rng.choice(MIXES[difficulty]) if difficulty in MIXES else difficulty
        expression, value = _LEVELS[level](rng)
        examples.append(
            Example(
                id=f"arithmetic-{split}-{index}",
                prompt=[{"role": "user", "content": f"What is {expression}?"}],
                ground_truth=str(value),
                data_source=DATA_SOURCE,
                extra_info={"difficulty": level, "split": split, "index": index, "seed": seed},
            )
        )
    return examples


def _easy(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(0, 9), rng.randint(0, 9)
    operator = rng.choice(_OPERATORS)
    if operator == "-" and a < b:
        a, b = b, a  # easy answers stay non-negative: a sign is one more thing for a tiny model to learn
    return f"{a} {operator} {b}", _evaluate([a, b], [operator])


def _hard(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(32, 99), rng.randint(32, 99)
    return f"{a} * {b}", a * b


def _chain(rng: random.Random) -> tuple[str, int]:
    while True:
        a, b, c = rng.randint(32, 99), rng.randint(32, 99), rng.randint(32, 99)
        if a * b * c >= 100_000:  # at most 99**3 = 970299: 6 digits
            return f"{a} * {b} * {c}", a * b * c


_LEVELS = {"easy": _easy, "hard": _hard, "chain": _chain}


def _evaluate(operands: list[int], operators: list[str]) -> int:
    """Value of ``operands[0] op operands[1] op ...`` with * before + and -, in exact integers."""
    terms = [operands[0]]
    signs = [1]
    for operator, operand in zip(operators, operands[1:], strict=True):
        if operator == "*":
            terms[-1] *= operand
        else:
            terms.append(operand)
            signs.append(1 if operator == "+" else -1)
    return sum(sign * term for sign, term in zip(signs, terms, strict=True))
