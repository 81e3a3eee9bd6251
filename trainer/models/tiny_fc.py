"""'tirlab/tiny-char-fc' and '-fc-n1': the tiny model emitting JSON function calls, in ToolRL's and Tool-N1's layouts.

ToolRL and Nemotron-Tool-N1 train instruction-tuned models that can already read a tool list and write
a call; the tiny model learns to by SFT of the shipped cold start ('tirlab/tiny-char') on the
'fc-mini-sft' traces (trainer.fc_traces): requests of trainer.fc_synthetic answered in ToolRL's
layout (`<think></think>`, then one JSON call a line in `<tool_call>`, or a `<response>` where no
offered tool serves), the tools listed one signature a line (the 'tool-signatures' template), the
tool names and argument values weighing 4 times the format around them. One epoch of 40,000 traces,
32 a step, at lr 3e-3 on one thread (1,250 steps):

    python -m trainer cold-start --model tirlab/tiny-char-fc --ship

It leaves a policy that usually writes well-formed calls and often the right ones, but copies a
value wrong or misses a second call often enough for RL to have something to fix.
"""

from __future__ import annotations

from trainer.config import TINY_FC_MODEL, TINY_FC_N1_MODEL
from trainer.fc_traces import FC_MINI, FC_N1_MINI
from trainer.models.tiny_derived import DerivedTiny

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

# Tool-N1's reward reads one JSON list of {"name", "arguments"} (and "[]" for no call), which the model
# above never writes (it scores 0 on every trace of 'fc-mini-sft'): 'tirlab/tiny-char-fc-n1' is it
# fine-tuned on 4,800 traces in that layout (150 steps at lr 1e-3).
FC_N1 = DerivedTiny(
    name=TINY_FC_N1_MODEL,
    prefix="tiny-char-fc-n1",
    version=1,
    traces="fc-n1-mini-sft",
    protocol="tool_call_json",
    mix=FC_N1_MINI,
    epochs=1,
    lr=1e-3,
    template="tool-signatures",
    start=FC,
)
