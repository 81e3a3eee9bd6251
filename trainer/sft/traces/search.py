"""Seeded SFT traces for search-mini in Search-R1's syntax: the tags, the real passages, and no sense of when
to search.

Each trace answers a question in search-mini's form (trainer.data.search_mini) in the search_r1 protocol:
`<search> query </search>`, the observation the search environment feeds back, and at the end
`<answer> … </answer>`. No `<think>`: the tiny model's context is short (Search-R1's format-aware reward, which
wants one, is off by default).

Every trace asks about a knowledge base of its own: new names (`TRACE_KB`: a few people, organisations
and cities), its own corpus, searched with the mini's BM25 and top-k (`search_mini.TOPK`) and rendered by
`SearchR1().information`, exactly as the environment's in-process retriever renders a search of the mini's
corpus. A name may come back in another trace but its facts all but never do, so nothing can be learnt by heart:
the loss falls only by copying a name from the question into the query and from the passages into the next query
and the answer -- what a question about the mini's held-out entities needs. (Traces over the mini's 300 training
people taught the tiny model those people's facts instead: it answered 0.29 of training questions and 0.005 of
held-out ones.)

What the 'search-mini-sft' traces leave open is what RL has to find: how many searches a question needs. A trace
makes 0, 1 or 2 searches by a cycle (`SEARCH_MINI.searches`: half answer at once, a quarter search once, a quarter
twice) whatever the question's hops:
- the first query is the question's subject; the second the entity the subject's document names for a
  follow-up (the employer for a person, the city for an organisation): the 2-hop question's bridge;
- the answer is read from the retrieved text where it is there: a 1-hop question is answered right after one
  search; a 2-hop question after one search answers the bridge (the employer: wrong), after two the employer's
  city (right);
- without the passages it needs, the trace guesses a city or an organisation of its knowledge base, never the
  right one, and the guess is not trained on (`guess_weight` 0: a name drawn at random teaches nothing but random
  digits); a 0-hop question's answer is copied from its fact, searched or not.
A policy that searches once for one hop and twice for two is right on all of them.

Two more trace sets teach what these assume, in the stages before them (trainer.models.tiny.search):
'search-mini-copy' (`copy_traces`: 0-hop questions answered at once, copying the right one of the facts they
state) and 'search-mini-read' (`read_traces`: as many searches as the hops, every trace right).

`python -m trainer sft-traces search-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from trainer.data.search_mini import (
    HOPS,
    TOPK,
    KnowledgeBase,
    Sizes,
    draw_knowledge_base,
    memory_index,
    question_example,
    search_results,
)
from trainer.protocols.search_r1 import SearchR1
from trainer.trajectory import Example

PROTOCOL = "search_r1"
TEMPLATE = "search_r1_mini"
_PERSON = re.compile(r"^(?P<name>.+) lives in (?P<city>.+) and works for (?P<employer>.+)\.$")
_ORGANISATION = re.compile(r"^(?P<name>.+) is based in (?P<city>.+)\.$")
# A trace's own knowledge base: as the mini's, an organisation employs several people and a city is home to several
# people and organisations (so a search for a follow-up finds others beside it), at a fraction of the size.
TRACE_KB = Sizes(cities=4, organisations=3, people=6, held_out=0)


@dataclass(frozen=True)
class SearchMiniMix:
    """The 'search-mini-sft' traces."""

    traces: int = 4000
    # The weight of a query's and an answer's text in the loss: the names the model must copy (as the tiny cold
    # start's traces weigh their expressions and answers, trainer.sft.traces.arithmetic.SFTBudget).
    content_weight: float = 8.0
    seed: int = 5
    # Every trace draws its own knowledge base of these sizes.
    kb: Sizes = TRACE_KB
    # How many searches a trace makes: whatever the question needs, the next of a cycle of counts ("any" is "012",
    # 0, 1 and 2 alike), or "needed": as many as its hops (the reading stage, every trace right).
    searches: str = "any"
    # The weight of a guessed answer's text (a trace without the passages it needs): 0, nothing to learn from a name
    # drawn at random. Weighed like the copied names, the guesses taught the model to write random digits: sampled
    # at temperature 1, it then miscopied even 0-hop answers (exact match 0.25, where the model before it had 1.00).
    guess_weight: float = 0.0


# Half the traces answer at once, a quarter search once, a quarter twice, whatever the question needs: greedy, the
# cold start then answers at once (held-out exact match 0.075 and 0 on 1- and 2-hop questions), sampled it searches
# a question 0.64 to 0.79 times whatever its hops (search-r1-mini's step 0, docs/presets.md), so RL has to find how
# many searches each question needs. With 0, 1 and 2 alike ("any") it searched greedily 1.1-1.6 times whatever the
# hops (trainer.models.tiny.search).
SEARCH_MINI = SearchMiniMix(searches="0012")


# The 'search-mini-copy' traces: 0-hop questions answered at once with the fact they state (`copy_traces`).
SEARCH_COPY = SearchMiniMix(traces=9600, seed=6)
# The 'search-mini-read' traces: as many searches as the hops, every answer read from a passage, with a fifth of
# the copy traces' kind (their own seed's first 2,000) kept in, so that the copying the first stage taught stays.
SEARCH_READ = SearchMiniMix(searches="needed")
SEARCH_READ_COPY = SearchMiniMix(traces=2000, seed=6)


def _facts(results: list[dict[str, Any]]) -> dict[str, str]:
    """What the first passage says: a person's city and employer, or an organisation's city."""
    if not results:
        return {}
    text = results[0]["document"]["contents"].split("\n", 1)[1]
    match = _PERSON.match(text) or _ORGANISATION.match(text)
    return match.groupdict() if match else {}


def search_trace(
    example: Example,
    searches: int,
    kb: KnowledgeBase,
    index: Any,
    rng: random.Random,
    mix: SearchMiniMix = SEARCH_MINI,
) -> dict:
    """One trace of `searches` searches (0, 1 or 2) answering `example` about `kb`, searched in `index`."""
    protocol = SearchR1()
    info = example.extra_info or {}
    hops, relation, subject = info["hops"], info["relation"], info["subject"]
    response, spans = "", []

    def write(text: str, content: str, weight: float = mix.content_weight) -> None:
        nonlocal response
        at = len(response) + text.index(content)
        spans.append([at, at + len(content), weight])
        response += text

    found: dict[str, str] = {}
    query = subject
    weight = mix.content_weight  # the answer's: a guess's is mix.guess_weight
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
        pool = [o.name for o in kb.organisations] if relation == "works" else list(kb.cities)
        answer = rng.choice([name for name in pool if name != info["answer"]])
        weight = mix.guess_weight
    write(f"<answer> {answer} </answer>", answer, weight)
    return {
        "prompt": example.prompt,
        "response": response,
        "tool_outputs": searches,
        "weighted_spans": spans,
        "extra_info": {"hops": hops, "searches": searches, "correct": answer == info["answer"]},
    }


def trace_questions(mix: SearchMiniMix = SEARCH_MINI) -> list[tuple[KnowledgeBase, Example]]:
    """The traces' questions, each with the knowledge base of its own it asks about: the hops cycle 0, 1, 2."""
    rng = random.Random(f"search-traces:kb:{mix.seed}")
    questions = []
    for i in range(mix.traces):
        kb = draw_knowledge_base(rng, mix.kb)
        questions.append((kb, question_example(kb, rng, HOPS[i % 3], "sft", id=f"search-mini-sft-{i}")))
    return questions


def copy_traces(mix: SearchMiniMix = SEARCH_COPY) -> list[dict]:
    """`mix.traces` short traces that copy a 0-hop question's stated answer, each about a knowledge base of its
    own, no search. They teach the tiny model to copy a name from its context -- the skill every search trace
    needs -- in a few hundred cheap steps: trained on the search traces alone, it never learnt to (loss flat at
    0.93 after 375 steps), while 300 steps of these made it copy every held-out 0-hop answer."""
    rng = random.Random(f"search-copy:{mix.seed}")
    traces = []
    for i in range(mix.traces):
        kb = draw_knowledge_base(rng, mix.kb)
        example = question_example(kb, rng, 0, "sft", id=f"search-mini-copy-{i}")
        traces.append(search_trace(example, 0, kb, None, rng, mix))
    return traces


def search_traces(mix: SearchMiniMix = SEARCH_MINI) -> list[dict]:
    """`mix.traces` seeded traces answering `trace_questions(mix)`: for each hop count, the searches cycle
    0, 1, 2 (`mix.searches` "any"), or as many as the hops ("needed")."""
    cycle = "012" if mix.searches == "any" else mix.searches
    if cycle != "needed" and not (cycle and set(cycle) <= set("012")):
        raise ValueError(f"unknown searches {mix.searches!r}; expected 'any', 'needed' or a cycle of 0, 1 and 2")
    rng = random.Random(f"search-traces:{mix.seed}")

    def searches(i: int, example: Example) -> int:
        # The questions' hops cycle 0, 1, 2, so each hop count runs through the cycle in turn.
        return example.extra_info["hops"] if cycle == "needed" else int(cycle[(i // 3) % len(cycle)])

    return [
        search_trace(example, searches(i, example), kb, memory_index(kb), rng, mix)
        for i, (kb, example) in enumerate(trace_questions(mix))
    ]


def read_traces() -> list[dict]:
    """The 'search-mini-read' traces: `SEARCH_READ_COPY`'s copy traces, then `SEARCH_READ`'s search traces."""
    return copy_traces(SEARCH_READ_COPY) + search_traces(SEARCH_READ)
