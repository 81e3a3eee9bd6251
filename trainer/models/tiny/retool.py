"""'tirlab/tiny-char-retool': the tiny model in ReTool's syntax, the starting point of retool-mini's RL.

ReTool's first stage is SFT on <code>/<interpreter> traces; retool-mini ran it in every run (375 steps,
about 170 s of every run on 2 cores) before its RL stage, always on the same traces with the same seed,
so always to the same weights. Those weights are this recipe: SFT of the shipped cold start
('tirlab/tiny-char') on the 'retool-mini-sft' traces (trainer.sft.data.RETOOL_MINI, which leave it
undecided about calling), 3 epochs of 4,000 at lr 3e-3, 32 a step, the trainer's SFT loop on one thread
with the runs' seed 0 -- what a run's SFT phase does with the settings retool-mini had. Done once and
shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-retool --ship

A run can still do both stages itself: the tiny cold start with `sft.dataset` 'retool-mini-sft'
(tests/trainer/test_sft_then_rl.py runs that path end to end).
"""

from __future__ import annotations

from trainer.config import TINY_RETOOL_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.data import RETOOL_MINI

RETOOL = DerivedTiny(
    name=TINY_RETOOL_MODEL,
    prefix="tiny-char-retool",
    version=1,
    traces="retool-mini-sft",
    protocol="retool",
    mix=RETOOL_MINI,
    epochs=3,
    lr=3e-3,
)
