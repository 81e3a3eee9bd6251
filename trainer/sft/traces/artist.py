"""Seeded ARTIST traces for ARTIST-mini: one multiplication per <python> call, and undecided about
how many calls to make.

A trace thinks first (ARTIST's format reward wants a response that opens with <think>), then calls
the tool or answers. Each call prints one product of two numbers: on a hard problem ("47 * 83")
the product itself, on a chain ("47 * 83 * 59") the first two factors, then the first output times
the third. That is the skill a character-level model can copy (trainer.data.arithmetic): a whole chain in
one print() never appears, so a chain needs two calls and a hard product one.

What the traces leave open is when to stop. At every point where a trace either calls the tool
("<python>") or answers ("<answer>"), a share of the traces does each; the character where the two
part (the "p" or "a" after "<") is reweighted so that the trained policy takes each branch with
the odds in `ArtistMiniMix`, whatever the mix of the data (as trainer.sft.traces.arithmetic does for its
first token). The cold-started policy therefore answers hard problems without the tool half the
time, stops after one call on half of the chains, and adds a redundant second call to some hard
problems; an answer without the tool's result is a wrong guess. RL then has to find the number of
calls each kind of problem needs.

`python -m trainer sft-traces artist-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from trainer.data.arithmetic import arithmetic_examples
from trainer.protocols import Feedback, get_protocol
from trainer.sft.traces.arithmetic import _expression, _wrong_guess
from trainer.trajectory import ToolExecution

PROTOCOL = "artist"
THINK = "<think></think>\n"  # empty: the format reward asks for the block, the tiny model has nothing to put in it
CALL = "<python>\nprint({code})\n</python>"
ANSWER = "<answer>\\boxed{{{answer}}}</answer>"


@dataclass(frozen=True)
class Choice:
    """One call-or-answer point: `share` of the traces call there, and the loss weights make the
    trained policy call with probability `odds`."""

    share: float
    odds: float

    def weight(self, calls: bool) -> float:
        return self.odds / self.share if calls else (1.0 - self.odds) / (1.0 - self.share)


@dataclass(frozen=True)
class ArtistMiniMix:
    """The 'artist-mini-sft' traces: 16,000, 60% of them chains (the second call, which composes the
    first output with the third factor, is the new skill), most of them calling, so that copying
    gets the examples; the choice weights leave the policy at even odds on each call it still has
    to learn to make, and at 1 in 20 for a redundant second call on a hard problem.

    Measured (bench/quickstart.py --preset artist-mini --window 5, each model trained 3 epochs):
    with 4,000 traces the second call's copy of the first output was usually a digit off, and chain
    accuracy stayed near 0.04 through RL (0.02 at step 0); with 16,000 it is 0.36-0.41 at step 0 and
    RL raises it. At 1 in 5 for the redundant call, RL also drifted hard products to 1.7 calls per
    response (ARTIST's reward does not charge a call that repeats one); at 1 in 20 they settle near
    one (1.12 over steps 15-19)."""

    traces: int = 16000
    chain_share: float = 0.6
    first_call: Choice = Choice(share=0.8, odds=0.5)
    chain_second_call: Choice = Choice(share=0.7, odds=0.5)
    hard_extra_call: Choice = Choice(share=0.2, odds=0.05)
    content_weight: float = 8.0


ARTIST_MINI = ArtistMiniMix()


def artist_traces(mix: ArtistMiniMix = ARTIST_MINI, *, seed: int = 2) -> list[dict]:
    """`mix.traces` seeded traces (trainer.data.sft_traces rows) on hard and chain problems, in ARTIST's
    syntax with tool outputs in tirlab's feedback text (the text the RL run feeds back)."""
    tools = get_protocol(PROTOCOL)
    feedback = Feedback("tirlab")
    rng = random.Random(f"artist-traces:{seed}")
    chains = round(mix.traces * mix.chain_share)
    problems = arithmetic_examples(chains, seed=seed, difficulty="chain", split="sft") + arithmetic_examples(
        mix.traces - chains, seed=seed, difficulty="hard", split="sft"
    )
    rng.shuffle(problems)
    rows = []
    for example in problems:
        difficulty = str(example.extra_info["difficulty"])
        factors = _expression(example).split(" * ")
        value = example.ground_truth
        response, spans = THINK, []
        # Each step multiplies the running value by the next factor: 47 * 83, then 3901 * 59.
        steps = [f"{factors[0]} * {factors[1]}", *(f"{{}} * {factor}" for factor in factors[2:])]
        if difficulty == "hard":
            steps.append(steps[0])  # the redundant call: the same product again
        choices = [mix.first_call] + [mix.chain_second_call if difficulty == "chain" else mix.hard_extra_call]
        needed = len(factors) - 1
        result: str | None = None
        for index, step in enumerate(steps):
            calls = rng.random() < choices[index].share
            spans.append((len(response) + 1, len(response) + 2, choices[index].weight(calls)))  # "p" or "a"
            if not calls:
                break
            code = step.format(result)
            call = CALL.format(code=code)
            start = len(response) + call.index("print(") + len("print(")
            spans.append((start, start + len(code) + 1, mix.content_weight))  # the expression and ")"
            left, right = code.split(" * ")
            result = str(int(left) * int(right))
            execution = ToolExecution(call=f"print({code})\n", status="ok", output=result + "\n")
            response = tools.append_output(response + call, execution, feedback=feedback)
        calls_made = tools.count_tool_calls(response)
        correct = calls_made >= needed
        answer = value if correct else _wrong_guess(int(value), rng)
        text = ANSWER.format(answer=answer)
        at = len(response) + text.index(answer)
        response += text
        if correct:
            spans.append((at, at + len(answer) + 1, mix.content_weight))  # the answer and "}"
        rows.append(
            {
                "prompt": example.prompt,
                "response": response,
                "tool_outputs": calls_made,
                "weighted_spans": [list(span) for span in spans],
                "extra_info": {"difficulty": difficulty, "tool_calls": calls_made},
            }
        )
    return rows
