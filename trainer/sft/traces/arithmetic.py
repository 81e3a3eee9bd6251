"""Seeded tool-use traces on arithmetic problems, the SFT data of tirlab's CPU cold starts.

A trace either answers directly -- right on easy problems, a plausible wrong guess on hard ones --
or calls the tool, prints the expression and copies the real output into its answer. The shares
of each kind, and a reweighted loss on the first token, where the policy chooses, decide how
undecided the trained policy starts (see `tool_use_traces`). The same generator writes the traces
in any protocol that executes code: only the call and answer syntax differ (`CALL_FORMATS`).

These are the built-in SFT datasets of trainer.sft.data ('tiny-cold-start', 'retool-mini-sft');
`python -m trainer sft-traces NAME --out FILE` writes one as JSONL, the format a researcher's own
traces take.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from trainer.data.arithmetic import arithmetic_examples
from trainer.protocols import Feedback, FeedbackStyle, get_protocol
from trainer.trajectory import Example, ToolExecution

# How a trace calls the tool and gives its answer, per protocol: the call's text with the code in
# it, and the answer's. The call ends at the protocol's stop marker, where the tool output follows.
CALL_FORMATS: dict[str, str] = {
    "python_markdown": "```python\n{code}```\n",
    # ReTool's recipe (verl-recipe retool/retool.py) runs a <code> block's body; the system prompt asks
    # for ```python fences inside it, which the tiny model does without: the body alone runs as well.
    "retool": "<code>\n{code}</code>",
}
ANSWER_FORMATS: dict[str, str] = {
    "python_markdown": "\\boxed{{{answer}}}",
    "retool": "<answer>\\boxed{{{answer}}}</answer>",
}

_QUESTION = re.compile(r"What is (?P<expression>.+)\?$")


def choice_position(protocol: str) -> int:
    """Where a call and a direct answer first differ in `protocol`'s syntax: the character at which
    the policy chooses between them (the first for ```python / \\boxed, the "c" or "a" after the "<"
    that ReTool's <code> and <answer> share)."""
    call, answer = CALL_FORMATS[protocol], ANSWER_FORMATS[protocol]
    return next(i for i, (a, b) in enumerate(zip(call, answer, strict=False)) if a != b)

# The cached cold start is one fixed model, whatever the run's seed: runs differ in RL, not in
# their starting point, and a single cache entry serves them all.
TINY_SEED = 0


@dataclass(frozen=True)
class SFTBudget:
    """How the tiny model's cold start is trained: 1500 steps, four to eight minutes on 2 idle CPU cores.

    Two skills take longest: answering easy problems from memory (300 facts) and, in tool calls,
    copying the expression into print() and the tool's output into \\boxed{} (a tiny model learns to
    copy late and suddenly). The traces therefore favour them: 70% of problems are easy, 75% of those
    answered directly, and 90% of hard ones go through the tool; the choice token is reweighted so
    the policy still starts undecided (`Trace.choice_weight`), and the tokens that carry the content
    (expression, right answer) weigh `content_weight` times the format around them. Every trace is
    seen once.

    Measured with the 7-character products of trainer.data.arithmetic (2 idle cores, seed 0; the shipped
    model's report.json, from `python -m trainer cold-start --ship`): 458 s of training (241 s on an
    earlier machine of the same kind); sampled at temperature 1, easy accuracy 1.0 with tool use
    0.60, hard accuracy 0.56 with tool use 0.57 (0.985 of the tool calls right). The previous
    recipe (1000 steps, half the traces calling the tool on each difficulty, equal weights, hard
    problems of two or three operands up to 999) reached sampled accuracy 0.185, hard 0.01.
    """

    traces: int = 48000
    epochs: int = 1
    lr: float = 3e-3
    batch_size: int = 32
    easy_share: float = 0.7
    tool_share_easy: float = 0.25
    tool_share_hard: float = 0.9
    content_weight: float = 8.0


TINY_SFT = SFTBudget()


def tiny_cold_start_traces(
    *, protocol: str = "python_markdown", budget: SFTBudget | None = None, seed: int = TINY_SEED
) -> list[dict]:
    """The cold start's traces (trainer.data.sft_traces rows); with the defaults, the built-in SFT dataset
    'tiny-cold-start'."""
    budget = budget or TINY_SFT
    return tool_use_traces(
        budget.traces,
        seed=seed,
        protocol=protocol,
        tool_share={"easy": budget.tool_share_easy, "hard": budget.tool_share_hard},
        easy_share=budget.easy_share,
        content_weight=budget.content_weight,
    )


def tool_use_traces(
    size: int,
    *,
    seed: int,
    protocol: str = "python_markdown",
    tool_share: float | Mapping[str, float] = 0.5,
    easy_share: float = 0.5,
    content_weight: float = 1.0,
    feedback: FeedbackStyle = "tirlab",
) -> list[dict]:
    """`size` seeded traces (trainer.data.sft_traces rows) on arithmetic problems, `easy_share` of them easy
    and the rest hard, in a seeded order; a share of each difficulty's traces call the tool
    (`tool_share`: one share for all, or one per difficulty), the others answer directly.

    Whatever the shares, the choice token of each trace weighs 1/2 over the share of its kind
    (`choice_weight` where the choice is the response's first character, else a weighted span on the
    character where call and answer part, `choice_position`): the weighted shares of calling and
    answering are then 1/2 each, so the
    cold-started policy calls the tool about half the time on every difficulty, while the mix can
    give the slow skills (easy answers from memory, copying on hard problems) more examples. The
    spans that carry what must be exact (the expression in print(), a right answer) weigh
    `content_weight` (`weighted_spans`). Tool outputs are written in the `feedback` style the RL
    run uses (`tools.feedback`), so the cold start reads the text it will be fed.
    """
    if protocol not in CALL_FORMATS:
        raise ValueError(f"no trace format for protocol {protocol!r}; expected one of {', '.join(CALL_FORMATS)}")
    tools = get_protocol(protocol)
    parting = choice_position(protocol)
    rng = random.Random(f"sft-traces:{seed}")
    easy = round(size * easy_share)
    problems = arithmetic_examples(easy, seed=seed, difficulty="easy", split="sft") + arithmetic_examples(
        size - easy, seed=seed, difficulty="hard", split="sft"
    )
    rng.shuffle(problems)
    rows = []
    for example in problems:
        expression = _expression(example)
        value = example.ground_truth
        difficulty = str(example.extra_info["difficulty"])
        share = tool_share[difficulty] if isinstance(tool_share, Mapping) else tool_share
        if not 0.0 < share < 1.0:
            raise ValueError(f"tool share must be strictly between 0 and 1, got {share} for {difficulty}")
        calls = rng.random() < share
        spans: list[tuple[int, int]] = []
        if calls:
            code = f"print({expression})\n"
            call = CALL_FORMATS[protocol].format(code=code)
            execution = ToolExecution(call=code, status="ok", output=value + "\n")
            response = tools.append_output(call, execution, feedback=Feedback(feedback))
            start = call.index("print(") + len("print(")
            spans.append((start, start + len(expression) + 1))  # the expression and its closing parenthesis
            tool_outputs = 1
            answer: str | None = value
        else:
            response, tool_outputs = "", 0
            # A hard problem's direct answer is a guess: it is what the policy does, not what to learn.
            answer = value if difficulty == "easy" else None
        boxed = answer if answer is not None else _wrong_guess(int(value), rng)
        text = ANSWER_FORMATS[protocol].format(answer=boxed)
        at = len(response) + text.index(boxed)
        response += text
        if answer is not None:
            spans.append((at, at + len(boxed) + 1))  # the answer and its closing brace
        choice = 0.5 / (share if calls else 1.0 - share)
        weighted = [[a, b, content_weight] for a, b in spans] if content_weight != 1.0 else []
        if parting:  # the first character is common to both branches: weight the one that differs
            weighted = [[parting, parting + 1, choice], *weighted]
        rows.append(
            {
                "prompt": example.prompt,
                "response": response,
                "tool_outputs": tool_outputs,
                "choice_weight": 1.0 if parting else choice,
                "weighted_spans": weighted,
                "extra_info": {"difficulty": difficulty},
            }
        )
    return rows


def _expression(example: Example) -> str:
    match = _QUESTION.match(example.prompt[-1]["content"])
    if match is None:
        raise ValueError(f"not an arithmetic question: {example.prompt[-1]['content']!r}")
    return match["expression"]


def _wrong_guess(value: int, rng: random.Random) -> str:
    """A confident-looking wrong answer: right magnitude and leading digits, wrong trailing half."""
    digits = str(abs(value))
    keep = len(digits) - max(1, len(digits) // 2)
    while True:
        tail = "".join(rng.choice("0123456789") for _ in range(len(digits) - keep))
        guess = int(digits[:keep] + tail) * (-1 if value < 0 else 1)
        if guess != value:
            return str(guess)
