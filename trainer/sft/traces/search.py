"""Seeded SFT traces for search-mini in Search-R1's syntax: the tags, the real passages, and no sense of when
to search.

Each trace answers a training question of search-mini (trainer.data.search_mini, the "sft" split: the training
entities) in the search_r1 protocol: `<search> query </search>`, the observation the search environment feeds
back, and at the end `<answer> … </answer>`. The observation is real: BM25 over the search-mini corpus with the
mini's top-k (`search_mini.TOPK`), rendered by `SearchR1().information` from `search_mini.search_results`,
exactly as the environment's in-process retriever gives it. No `<think>`: the tiny model's context is short
(Search-R1's format-aware reward, which wants one, is off by default).

What the traces leave open is what RL has to find: how many searches a question needs. A trace makes 0, 1 or 2
searches, a third each whatever the question's hops:
- the first query is the question's subject; the second the entity the subject's document names for a
  follow-up (the employer for a person, the city for an organisation): the 2-hop question's bridge;
- the answer is read from the retrieved text where it is there: a 1-hop question is answered right after one
  search; a 2-hop question after one search answers the bridge (the employer: wrong), after two the employer's
  city (right);
- without the passages it needs, the trace guesses: a city or an organisation of the knowledge base, never the
  right one; a 0-hop question's answer is copied from its fact, searched or not.
So the cold start is right on 0-hop questions, on 1-hop ones two times in three and on 2-hop ones one time in
three; a policy that learns to search once for one hop and twice for two is right on all of them.

`python -m trainer sft-traces search-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import random
import re
import tempfile
from dataclasses import dataclass
from typing import Any

from trainer.data.search_mini import TOPK, knowledge_base, search_index, search_mini_examples, search_results
from trainer.protocols.search_r1 import SearchR1
from trainer.trajectory import Example

PROTOCOL = "search_r1"
TEMPLATE = "search_r1_mini"
_PERSON = re.compile(r"^(?P<name>.+) lives in (?P<city>\w+) and works for (?P<employer>.+)\.$")
_ORGANISATION = re.compile(r"^(?P<name>.+) is based in (?P<city>\w+)\.$")


@dataclass(frozen=True)
class SearchMiniMix:
    """The 'search-mini-sft' traces."""

    traces: int = 4000
    # The weight of a query's and an answer's text in the loss: the names the model must copy.
    content_weight: float = 3.0
    seed: int = 5


SEARCH_MINI = SearchMiniMix()


def _facts(results: list[dict[str, Any]]) -> dict[str, str]:
    """What the first passage says: a person's city and employer, or an organisation's city."""
    if not results:
        return {}
    text = results[0]["document"]["contents"].split("\n", 1)[1]
    match = _PERSON.match(text) or _ORGANISATION.match(text)
    return match.groupdict() if match else {}


def search_trace(
    example: Example, searches: int, index: Any, rng: random.Random, mix: SearchMiniMix = SEARCH_MINI
) -> dict:
    """One trace of `searches` searches (0, 1 or 2) answering `example`, searched in `index`."""
    protocol = SearchR1()
    kb = knowledge_base()
    info = example.extra_info or {}
    hops, relation, subject = info["hops"], info["relation"], info["subject"]
    response, spans = "", []

    def write(text: str, content: str) -> None:
        nonlocal response
        at = len(response) + text.index(content)
        spans.append([at, at + len(content), mix.content_weight])
        response += text

    found: dict[str, str] = {}
    query = subject
    for made in range(searches):
        write(f"<search> {query} </search>", query)
        results = search_results(index, query, TOPK)
        response += protocol.information(results)
        facts = _facts(results)
        if made == 0:
            found = facts
            # The follow-up: a person's employer, an organisation's city.
            query = facts.get("employer") or facts.get("city") or subject
        else:
            found = {"bridge_" + key: value for key, value in facts.items()} | found

    if hops == 0:
        answer = info["answer"]  # the question states it
    elif hops == 1 and found:
        answer = found["employer"] if relation == "works" else found["city"]
    elif hops == 2 and "bridge_city" in found:
        answer = found["bridge_city"]
    elif hops == 2 and found:
        answer = found["employer"]  # the bridge, not its city: wrong
    else:
        pool = [o.name for o in kb.organisations if not o.test] if relation == "works" else list(kb.cities)
        answer = rng.choice([name for name in pool if name != info["answer"]])
    write(f"<answer> {answer} </answer>", answer)
    return {
        "prompt": example.prompt,
        "response": response,
        "tool_outputs": searches,
        "weighted_spans": spans,
        "extra_info": {"hops": hops, "searches": searches, "correct": answer == info["answer"]},
    }


def search_traces(mix: SearchMiniMix = SEARCH_MINI) -> list[dict]:
    """`mix.traces` seeded traces on search-mini's training questions (split "sft"): for each hop count, the
    searches cycle 0, 1, 2."""
    rng = random.Random(f"search-traces:{mix.seed}")
    examples = search_mini_examples(mix.traces, seed=mix.seed, split="sft")
    with tempfile.TemporaryDirectory() as directory:
        index = search_index(directory)
        return [search_trace(example, (i // 3) % 3, index, rng, mix) for i, example in enumerate(examples)]
