"""'tirlab/tiny-char-search': the tiny model in Search-R1's syntax, the starting point of search-r1-mini.

Search-R1 trains base and instruct models that its prompt alone teaches the tags; the tiny model learns them by
SFT of the shipped cold start ('tirlab/tiny-char'), prompted with the compact 'search_r1_mini' template, in three
steps (trainer.sft.traces.search), built once and shipped beside the other tiny models:

    python -m trainer cold-start --model tirlab/tiny-char-search --ship

1. `SEARCH_COPY_STAGE` ('search-mini-copy'): 0-hop questions answered at once with the right one of the facts they
   state. This is where the tiny model learns to copy a name from its context, in a short, cheap format: trained on
   the search traces alone it never did (loss flat at 0.93 after 375 steps, held-out exact match 0).
2. `SEARCH_READ_1..3` ('search-mini-read'): as many searches as the question's hops, every query and answer copied
   from the question or a passage, at a gentle lr that keeps stage 1's copying (2e-3 undid it).
3. `SEARCH` ('search-mini-sft'): half the traces answer at once, a quarter search once, a quarter twice, whatever
   the question needs, so the model copies as stage 2 taught it but no longer knows how many searches a question
   needs: what RL finds. Greedy, it then answers at once; with 0, 1 and 2 searches a third each it went on
   searching greedily 1.1-1.6 times a question whatever its hops, which left RL little to show on held-out
   questions.

Only `SEARCH` is shipped; rebuilding it trains the stages before it into the model cache first. The measured
steps, seconds and losses of each stage are in docs/presets.md ("search-r1-mini").
"""

from __future__ import annotations

import dataclasses

from trainer.config import TINY_SEARCH_MODEL
from trainer.models.tiny.derived import DerivedTiny
from trainer.sft.traces.search import SEARCH_COPY, SEARCH_MINI, SEARCH_READ, SEARCH_READ_COPY, TEMPLATE


def _stage(suffix: str, traces: str, mix: dict, epochs: int, lr: float, start: DerivedTiny | None) -> DerivedTiny:
    """A stage before the shipped model, built into the model cache when the shipped model is rebuilt."""
    return DerivedTiny(
        name=f"{TINY_SEARCH_MODEL}-{suffix}",
        prefix=f"tiny-char-search-{suffix}",
        version=1,
        traces=traces,
        protocol="search_r1",
        mix=mix,
        epochs=epochs,
        lr=lr,
        template=TEMPLATE,
        start=start,
    )


_READ_MIX = {"copy": dataclasses.asdict(SEARCH_READ_COPY), "search": dataclasses.asdict(SEARCH_READ)}
SEARCH_COPY_STAGE = _stage("copy", "search-mini-copy", dataclasses.asdict(SEARCH_COPY), 1, 3e-3, None)
# Three schedules of 2, 3 and 3 epochs, each warming up again, as the recipe was found and measured.
SEARCH_READ_1 = _stage("read-1", "search-mini-read", _READ_MIX, 2, 1e-3, SEARCH_COPY_STAGE)
SEARCH_READ_2 = _stage("read-2", "search-mini-read", _READ_MIX, 3, 1e-3, SEARCH_READ_1)
SEARCH_READ_3 = _stage("read-3", "search-mini-read", _READ_MIX, 3, 1e-3, SEARCH_READ_2)
SEARCH = DerivedTiny(
    name=TINY_SEARCH_MODEL,
    prefix="tiny-char-search",
    version=2,
    traces="search-mini-sft",
    protocol="search_r1",
    mix=dataclasses.asdict(SEARCH_MINI),
    epochs=4,
    lr=1e-3,
    template=TEMPLATE,
    start=SEARCH_READ_3,
)
