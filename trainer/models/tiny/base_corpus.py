"""The tiny *base* model's corpus: arithmetic answers and Python notebook text, but no tool call.

ZeroTIR trains tool use by RL from a base model that was never fine-tuned to call a tool ("zero"
RL), counting on what pretraining left in it: it knows arithmetic text and has read Python code with
its printed output. This corpus gives the tiny model that past, and nothing more:

- **questions answered in text**: "What is 7 + 5?" answered in ZeroTIR's format,
  ``<think>7 + 5</think>\\n<answer>\\boxed{12}</answer>``; right on easy problems, a plausible wrong
  guess on hard ones (a tiny model does not multiply two-digit numbers in its head);
- **notebook text** under its own kind of prompt ("Compute 47 * 83 with Python."): a ```python block,
  its ```output block and the result restated in an answer, all of it *text*, learned token by token,
  nothing executed, nothing masked: the model has read outputs, never been fed one.

A question never gets code in its answer unless `code_share` says so (default 0): with it, a small
share of questions' answers think through a notebook snippet, the smallest change to the corpus
that lets RL find the tool from "What is ...?" on its own (measured in the zerotir-mini preset's
comment). The rows are trainer.data.sft_traces rows with `tool_outputs: 0`, so the output blocks are
trained on, as pretraining text is.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from trainer.data.arithmetic import arithmetic_examples
from trainer.protocols import Feedback, get_protocol
from trainer.sft.traces.arithmetic import _expression, _wrong_guess
from trainer.trajectory import ToolExecution

NOTEBOOK_PROMPT = "Compute {expression} with Python."
# Outputs read as ZeroTIR's sandbox prints them (the zerotir-mini preset's tools.feedback); one token is one
# character for the tiny model, so its token cap counts characters.
_FEEDBACK = Feedback("zerotir", count_tokens=len)


@dataclass(frozen=True)
class BaseCorpus:
    """The base model's corpus and training budget (see the module docstring)."""

    traces: int = 48000
    epochs: int = 1
    lr: float = 3e-3
    batch_size: int = 32
    easy_share: float = 0.7
    # Share of rows that are notebook text rather than answered questions.
    notebook_share: float = 0.4
    # Share of answered questions whose answer thinks through a notebook snippet.
    code_share: float = 0.03
    content_weight: float = 8.0


TINY_BASE = BaseCorpus()


def base_corpus_rows(corpus: BaseCorpus | None = None, *, seed: int = 0) -> list[dict]:
    """The corpus's trainer.data.sft_traces rows, in a seeded order."""
    corpus = corpus or TINY_BASE
    rng = random.Random(f"base-corpus:{seed}")
    easy = round(corpus.traces * corpus.easy_share)
    problems = arithmetic_examples(easy, seed=seed, difficulty="easy", split="base") + arithmetic_examples(
        corpus.traces - easy, seed=seed, difficulty="hard", split="base"
    )
    rng.shuffle(problems)
    protocol = get_protocol("python_markdown")
    rows = []
    for example in problems:
        expression, value = _expression(example), str(example.ground_truth)
        difficulty = str(example.extra_info["difficulty"])
        notebook = rng.random() < corpus.notebook_share
        with_code = notebook or rng.random() < corpus.code_share
        spans: list[tuple[int, int]] = []
        if with_code:
            code = f"print({expression})\n"
            call = f"```python\n{code}```\n"
            output = ToolExecution(call=code, status="ok", output=value + "\n")
            think = "<think>" + protocol.append_output(call, output, feedback=_FEEDBACK)
            start = think.index("print(") + len("print(")
            spans.append((start, start + len(expression) + 1))
            answer = value
        else:
            think = f"<think>{expression}"
            answer = value if difficulty == "easy" else _wrong_guess(int(value), rng)
        response = f"{think}</think>\n<answer>\\boxed{{{answer}}}</answer>"
        if answer == value:
            at = response.index("\\boxed{") + len("\\boxed{")
            spans.append((at, at + len(answer) + 1))
        content = NOTEBOOK_PROMPT.format(expression=expression) if notebook else example.prompt[-1]["content"]
        rows.append(
            {
                "prompt": [{"role": "user", "content": content}],
                "response": response,
                "tool_outputs": 0,
                "weighted_spans": [[a, b, corpus.content_weight] for a, b in spans],
                "extra_info": {"difficulty": difficulty, "kind": "notebook" if notebook else "question"},
            }
        )
    return rows
