"""'tirlab/tiny-char-artist': the tiny model in ARTIST's format, the starting point of artist-mini.

ARTIST trains instruction-tuned models that can already follow its <think>/<python>/<output>/<answer>
format; the tiny model learns it by SFT of the shipped cold start ('tirlab/tiny-char') on the
'artist-mini-sft' traces (trainer.sft.traces.artist): 3 epochs of 16,000 at lr 3e-3, 32 a step, the
trainer's SFT loop on one thread with the runs' seed 0 (1,500 steps, 852 s with another build on the
other core). artist-mini ran 375 steps of it in every run while it had 4,000 traces; now it is done
once and shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-artist --ship

retrains it and rewrites its report (tests/trainer/test_shipped_cold_start.py fails, naming the
command, when the recipe changes without it). Without a shipped build for the current recipe, the
first run trains it into the run's model cache.
"""

from __future__ import annotations

import dataclasses

from trainer.config import TINY_ARTIST_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.traces.artist import ARTIST_MINI

ARTIST = DerivedTiny(
    name=TINY_ARTIST_MODEL,
    prefix="tiny-char-artist",
    version=1,
    traces="artist-mini-sft",
    protocol="artist",
    mix=dataclasses.asdict(ARTIST_MINI),
    epochs=3,
    lr=3e-3,
)
