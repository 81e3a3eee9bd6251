"""'tirlab/tiny-char-search': the tiny model in Search-R1's syntax, the starting point of search-r1-mini.

Search-R1 trains base and instruct models that its prompt alone teaches the tags; the tiny model learns them by
SFT of the shipped cold start ('tirlab/tiny-char') on the 'search-mini-sft' traces (trainer.sft.traces.search:
0, 1 or 2 searches a third each whatever the question needs, the real passages, the answer read from them),
prompted with the compact 'search_r1_mini' template, built once and shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-search --ship

Without a shipped build for the current recipe, the first run trains it into the run's model cache.
"""

from __future__ import annotations

import dataclasses

from trainer.config import TINY_SEARCH_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.traces.search import SEARCH_MINI, TEMPLATE

SEARCH = DerivedTiny(
    name=TINY_SEARCH_MODEL,
    prefix="tiny-char-search",
    version=1,
    traces="search-mini-sft",
    protocol="search_r1",
    mix=dataclasses.asdict(SEARCH_MINI),
    epochs=3,
    lr=3e-3,
    template=TEMPLATE,
)
