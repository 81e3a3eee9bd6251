"""'tirlab/tiny-char-swe': the tiny model in codeact_mini's syntax, the starting point of swe-mini.

SkyRL-v0 trains models that already act as OpenHands' CodeAct agent; the tiny model learns the three tools'
compact spelling by SFT of the shipped cold start ('tirlab/tiny-char') on the 'swe-mini-sft' traces
(trainer.sft.traces.swe: edits that pick among plausible fixes, the issue's reproducer run only sometimes,
finishing undecided), built once and shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-swe --ship

Without a shipped build for the current recipe, the first run trains it into the run's model cache.
"""

from __future__ import annotations

import dataclasses

from trainer.config import TINY_SWE_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.traces.swe import SWE_MINI

SWE = DerivedTiny(
    name=TINY_SWE_MODEL,
    prefix="tiny-char-swe",
    version=2,
    traces="swe-mini-sft",
    protocol="codeact_mini",
    mix=dataclasses.asdict(SWE_MINI),
    epochs=2,
    lr=3e-3,
)
