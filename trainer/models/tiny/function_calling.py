"""'tirlab/tiny-char-fc' and '-fc-n1': the tiny model emitting JSON function calls, in ToolRL's and Tool-N1's layouts.

ToolRL and Nemotron-Tool-N1 train instruction-tuned models that can already read a tool list and write
a call; the tiny model learns to by SFT of the shipped cold start ('tirlab/tiny-char') on the
'fc-mini-sft' traces (trainer.sft.traces.function_calling): requests of trainer.data.function_calling answered in
ToolRL's
layout (`<think></think>`, then one JSON call a line in `<tool_call>`, or a `<response>` where no
offered tool serves), the tools listed one signature a line (the 'tool-signatures' template), the
tool names and argument values weighing 4 times the format around them. One epoch of 40,000 traces,
32 a step, at lr 3e-3 on one thread (1,250 steps):

    python -m trainer cold-start --model tirlab/tiny-char-fc --ship

It leaves a policy that usually writes well-formed calls and often the right ones, but copies a
value wrong or misses a second call often enough for RL to have something to fix.
"""

from __future__ import annotations

from trainer.config import TINY_ARTIST_FC_MODEL, TINY_FC_MODEL, TINY_TOOL_N1_MODEL, TINY_TOOLRL_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.traces.function_calling import FC_MINI, TOOL_N1_MINI, TOOLRL_MINI
from trainer.sft.traces.tool_chains import ARTIST_FC_MINI

FC = DerivedTiny(
    name=TINY_FC_MODEL,
    prefix="tiny-char-fc",
    version=1,
    traces="fc-mini-sft",
    protocol="tool_call_json",
    mix=FC_MINI,
    epochs=1,
    lr=3e-3,
    template="tool-signatures",
)

# The minis' starting points. The model above writes well-formed calls too reliably for RL to have much to
# fix in 20 steps (toolrl-mini from it: exact calls 0.43 -> 0.43). ToolRL and Tool-N1 start RL from
# instruction-tuned models that leave out the reasoning block, write calls in other syntaxes and stop
# short; these are that model fine-tuned on traces with those flaws (trainer.sft.traces.function_calling.MINI_FLAWS),
# 150
# steps at lr 1e-3, so that each mini starts undecided on them, as artist-mini starts undecided on how
# many calls to make.
TOOLRL = DerivedTiny(
    name=TINY_TOOLRL_MODEL,
    prefix="tiny-char-toolrl",
    version=1,
    traces="toolrl-mini-sft",
    protocol="tool_call_json",
    mix=TOOLRL_MINI,
    epochs=1,
    lr=1e-3,
    template="tool-signatures",
    start=FC,
)

# Tool-N1's reward reads one JSON list of {"name", "arguments"} (and "[]" for no call), which the model
# above never writes (it scores 0 on every trace of 'fc-mini-sft'): 'tirlab/tiny-char-tool-n1' learns that
# layout in the same fine-tuning, with the same flaws.
TOOL_N1 = DerivedTiny(
    name=TINY_TOOL_N1_MODEL,
    prefix="tiny-char-tool-n1",
    version=1,
    traces="tool-n1-mini-sft",
    protocol="tool_call_json",
    mix=TOOL_N1_MINI,
    epochs=1,
    lr=1e-3,
    template="tool-signatures",
    start=FC,
)

# ARTIST's function calling is multi-turn: the model reads a tool's result and uses it in its next call.
# 'tirlab/tiny-char-artist-fc' is the JSON-call model fine-tuned on tool chains in ARTIST's syntax
# (trainer.data.tool_chains), undecided on purpose about looking the flight up before booking it (CHAIN_FLAWS).
ARTIST_FC = DerivedTiny(
    name=TINY_ARTIST_FC_MODEL,
    prefix="tiny-char-artist-fc",
    version=1,
    traces="artist-fc-mini-sft",
    protocol="artist_fc",
    mix=ARTIST_FC_MINI,
    # Two passes (800 steps): after one (400 steps, 2,517 s) the policy copied the flight number from the
    # prompt on 43% of one-call tasks at temperature 1 and RL could not make the chains' bookings right.
    epochs=2,
    lr=2e-3,
    template="tool-signatures",
    start=FC,
)
