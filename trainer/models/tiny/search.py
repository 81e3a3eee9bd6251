"""'tirlab/tiny-char-search': the tiny model in Search-R1's syntax, the starting point of search-r1-mini.

Search-R1 trains base and instruct models that its prompt alone teaches the tags; the tiny model learns them by
SFT of the shipped cold start ('tirlab/tiny-char') on the 'search-mini-sft' traces (trainer.sft.traces.search:
0, 1 or 2 searches a third each whatever the question needs, the real passages, the answer read from them),
prompted with the compact 'search_r1_mini' template, built once and shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-search --ship

It is two SFT stages on the same traces: `SEARCH_FIRST` (3 epochs at lr 3e-3, 375 steps, 1,703 s on 2 cores, loss
5.41 -> 0.50), then `SEARCH` from it (2 epochs at lr 2e-3, 250 steps, 1,078 s, loss 0.54 -> 0.29, still falling).
Only `SEARCH` is shipped; rebuilding it trains `SEARCH_FIRST` into the model cache first.

Not yet the start search-r1-mini needs: greedy on 60 test questions it writes the syntax (0.88 end in an
<answer>, 1.17 searches on average) but does not copy the made-up names -- its queries and answers are
names of the right shape, rarely the right one (accuracy 0.017). The irreducible loss of the traces (the
search-or-answer choices, the guesses) is about 0.04, so copying is what the remaining 0.29 is.
Without a shipped build for the current recipe, the first run trains it into the run's model cache.
"""

from __future__ import annotations

import dataclasses

from trainer.config import TINY_SEARCH_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.traces.search import SEARCH_MINI, TEMPLATE

SEARCH_FIRST = DerivedTiny(
    name=f"{TINY_SEARCH_MODEL}-first",
    prefix="tiny-char-search-first",
    version=1,
    traces="search-mini-sft",
    protocol="search_r1",
    mix=dataclasses.asdict(SEARCH_MINI),
    epochs=3,
    lr=3e-3,
    template=TEMPLATE,
)
SEARCH = DerivedTiny(
    name=TINY_SEARCH_MODEL,
    prefix="tiny-char-search",
    version=1,
    traces="search-mini-sft",
    protocol="search_r1",
    mix=dataclasses.asdict(SEARCH_MINI),
    epochs=2,
    lr=2e-3,
    template=TEMPLATE,
    start=SEARCH_FIRST,
)
