"""search-mini: questions about a seeded, made-up knowledge base, answered by searching its corpus.

The knowledge base holds people, organisations and cities: a person lives in a city and works for an
organisation, an organisation is based in a city. A name is its kind's word and a number ("Agent 4821",
"Firm 512", "Town 37", `KINDS`), so a name matches only itself: in BM25, in the reward's exact match and in the
tiny model's copying. The corpus (`corpus_rows`, Search-R1's jsonl rows, which trainer.data.corpora writes and
indexes as the built-in corpus "search-mini") has one document per person ("Agent 4821 lives in Town 37 and works
for Firm 512.") and one per organisation ("Firm 512 is based in Town 90."); cities have none.

Questions (`search_mini_examples`) come a third each in three kinds, the kind in `data_source`
(search-mini-0hop, -1hop, -2hop) and in `extra_info["hops"]`:
- 0 hops: the subject's document is in the question ("Agent 4821 lives in Town 37 and works for Firm 512. Where
  does Agent 4821 live?"), no search needed;
- 1 hop: one fact of the corpus ("Where does Agent 4821 live?", "Who does Agent 4821 work for?", "Where is Firm 512
  based?"): the subject's own document holds the answer;
- 2 hops: "Where is Agent 4821's employer based?": the person's document names the employer, the employer's
  document its city.
Searching the subject's name puts its document first (tests/trainer/test_search_mini_data.py checks every one).

People and organisations are split by their index: one in `HELD_OUT` is a test one, the others train; a person
works for an organisation of their own split, so no test question's answer (the cities aside, which both share) is
a training fact. Both splits' documents are in the one corpus, as a real retrieval corpus holds far more than a
run's questions. The cold start's SFT traces (trainer.sft.traces.search) ask about neither: each draws a small
knowledge base of its own (`draw_knowledge_base`), indexed in memory the same way (`memory_index`).

`TOPK` is the top-k the mini searches with; `search_results` is one query's results exactly as the search
environment's in-process retriever returns them (what `SearchR1().information` renders).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from trainer.data.arithmetic import example_count
from trainer.trajectory import Example

DATA_SOURCE = "search-mini"
# The top-k the mini searches with: one passage, where Search-R1 retrieves 3 (retriever.topk). A name matches only
# its own documents, so the first passage is the one a question needs (tests check every one); the tiny model learns
# to copy from one passage of about 90 characters in a recipe of 2,000 steps (trainer.models.tiny.search), and a
# trace with the prompt, two searches and an answer stays under about 450 of its 1,024 positions.
TOPK = 1
SEED = 7
CITIES, ORGANISATIONS, PEOPLE = 12, 40, 400
# One person and one organisation in HELD_OUT, by index, is a test one.
HELD_OUT = 4
# A name is its kind's word and a number of the kind's digits ("Agent 4821", "Firm 512", "Town 37"): the number is
# the whole identity, drawn without repeats within a kind, and the kinds' digit counts differ, so a name matches
# only itself in BM25 and in the reward's exact match. Numbers, because the tiny model starts from a cold start
# that copies digits (it writes the question's operands into its code); it did not learn to copy made-up words
# (trainer.models.tiny.search).
KINDS = {"person": ("Agent", 4), "organisation": ("Firm", 3), "city": ("Town", 2)}
HOPS = (0, 1, 2)
LEVELS = ("mixed", "0hop", "1hop", "2hop")

Relation = Literal["lives", "works", "based"]


@dataclass(frozen=True)
class Person:
    name: str
    city: str
    employer: str
    test: bool


@dataclass(frozen=True)
class Organisation:
    name: str
    city: str
    test: bool


@dataclass(frozen=True)
class KnowledgeBase:
    cities: tuple[str, ...]
    organisations: tuple[Organisation, ...]
    people: tuple[Person, ...]

    def organisation(self, name: str) -> Organisation:
        return next(org for org in self.organisations if org.name == name)


def _names(rng: random.Random, kind: str, count: int) -> list[str]:
    """`count` distinct names of a kind: its word and a number of its digits."""
    word, digits = KINDS[kind]
    return [f"{word} {n}" for n in rng.sample(range(10 ** (digits - 1), 10**digits), count)]


@dataclass(frozen=True)
class Sizes:
    """How many of each a knowledge base draws; `held_out` = 0 holds none out."""

    cities: int
    organisations: int
    people: int
    held_out: int


MINI = Sizes(CITIES, ORGANISATIONS, PEOPLE, HELD_OUT)


def draw_knowledge_base(rng: random.Random, sizes: Sizes) -> KnowledgeBase:
    """A knowledge base of new names drawn from `rng`: one person and one organisation in
    `sizes.held_out`, by index, is a test one (none when it is 0); a person works for an organisation of their
    own split."""
    cities = _names(rng, "city", sizes.cities)
    firms = _names(rng, "organisation", sizes.organisations)
    names = _names(rng, "person", sizes.people)

    def test(i: int) -> bool:
        return sizes.held_out > 0 and i % sizes.held_out == 0

    organisations = tuple(Organisation(name, rng.choice(cities), test=test(i)) for i, name in enumerate(firms))
    people = []
    for i, name in enumerate(names):
        employer = rng.choice([org for org in organisations if org.test == test(i)])
        people.append(Person(name, rng.choice(cities), employer.name, test(i)))
    return KnowledgeBase(tuple(cities), organisations, tuple(people))


@cache
def knowledge_base(seed: int = SEED) -> KnowledgeBase:
    """The knowledge base: made-up cities, organisations and people, with their relations."""
    return draw_knowledge_base(random.Random(f"search-mini:kb:{seed}"), MINI)


def person_text(person: Person) -> str:
    return f"{person.name} lives in {person.city} and works for {person.employer}."


def organisation_text(org: Organisation) -> str:
    return f"{org.name} is based in {org.city}."


def corpus_rows(kb: KnowledgeBase | None = None) -> list[dict]:
    """The corpus of `kb` (default the mini's) in Search-R1's jsonl row format: `{"id", "contents":
    '"Title"\\ntext'}`, people first, then organisations; deterministic."""
    kb = kb or knowledge_base()
    rows = [
        {"id": f"person-{i}", "contents": f'"{person.name}"\n{person_text(person)}'}
        for i, person in enumerate(kb.people)
    ]
    rows += [
        {"id": f"org-{i}", "contents": f'"{org.name}"\n{organisation_text(org)}'}
        for i, org in enumerate(kb.organisations)
    ]
    return rows


def search_index(directory: str | Path) -> Any:
    """A retrieval.BM25Index of the corpus, written to `directory` as search-mini.jsonl and indexed there (the
    search environment indexes the same rows, written by trainer.data.corpora)."""
    from retrieval import BM25Index, load_corpus

    path = Path(directory) / "search-mini.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in corpus_rows()))
    return BM25Index.load(load_corpus(path), directory)


def memory_index(kb: KnowledgeBase) -> Any:
    """A retrieval.BM25Index of `kb`'s corpus, scored as `search_index` scores and kept in memory (a cold-start
    trace's own knowledge base)."""
    from retrieval import BM25Index, Corpus

    rows = corpus_rows(kb)
    return BM25Index.in_memory(Corpus.of_rows([(row["id"], row["contents"]) for row in rows]))


def search_results(index: Any, query: str, k: int = TOPK) -> list[dict[str, Any]]:
    """One query's results as a `/retrieve` answer's list holds them, from a retrieval.BM25Index: what the search
    environment's in-process retriever returns and `SearchR1().information` renders."""
    return [{"document": index.corpus.document(hit.index), "score": hit.score} for hit in index.search(query, k)]


# The questions, by relation: {s} the subject.
QUESTIONS: dict[Relation, str] = {
    "lives": "Where does {s} live?",
    "works": "Who does {s} work for?",
    "based": "Where is {s} based?",
}
TWO_HOP = "Where is {s}'s employer based?"


def _question(kb: KnowledgeBase, rng: random.Random, hops: int, test: bool) -> tuple[str, dict[str, Any]]:
    """A question of `hops` hops about an entity of the split, and what it asks (subject, relation, answer...)."""
    people = [p for p in kb.people if p.test == test]
    organisations = [o for o in kb.organisations if o.test == test]
    if hops == 2:
        person = rng.choice(people)
        city = kb.organisation(person.employer).city
        info = {"subject": person.name, "relation": "based", "bridge": person.employer, "answer": city}
        return TWO_HOP.format(s=person.name), info
    # A third of the one-fact questions ask about an organisation, as a third of the relations are theirs.
    relation: Relation = rng.choice(("lives", "works", "based"))
    if relation == "based":
        org = rng.choice(organisations)
        subject, answer, document = org.name, org.city, organisation_text(org)
    else:
        person = rng.choice(people)
        subject, answer = person.name, person.city if relation == "lives" else person.employer
        document = person_text(person)
    question = QUESTIONS[relation].format(s=subject)
    if hops == 0:
        # The subject's whole document first: the answer is read from it as from a passage, the right one of its facts.
        question = f"{document} {question}"
    return question, {"subject": subject, "relation": relation, "answer": answer}


def search_mini_examples(
    size: int | None = None, *, seed: int = 0, split: str = "train", level: str = "mixed"
) -> list[Example]:
    """`size` questions (default 1000 for train, 200 otherwise): 0-, 1- and 2-hop a third each (`level` "mixed"),
    or one kind ("0hop", "1hop", "2hop"). The test split asks about the held-out entities, every other split
    (train, sft) about the rest; the split is part of the seed."""
    if level not in LEVELS:
        raise ValueError(f"unknown search-mini level {level!r}; expected one of {', '.join(LEVELS)}")
    kb = knowledge_base()
    rng = random.Random(f"search-mini:{split}:{seed}:{level}")
    return [
        question_example(
            kb, rng, HOPS[i % 3] if level == "mixed" else int(level[0]), split, id=f"search-mini-{split}-{i}"
        )
        for i in range(example_count(size, split))
    ]


def question_example(kb: KnowledgeBase, rng: random.Random, hops: int, split: str, *, id: str) -> Example:
    """A question of `hops` hops about an entity of `kb` in the split ("test": a held-out one), as an Example."""
    question, info = _question(kb, rng, hops, split == "test")
    return Example(
        id=id,
        prompt=[{"role": "user", "content": question}],
        ground_truth={"target": [info["answer"]]},
        data_source=f"{DATA_SOURCE}-{hops}hop",
        extra_info={"hops": hops, "split": split, **info},
    )


def entities(examples: Sequence[Example]) -> set[str]:
    """The people and organisations the examples ask about (subject and bridge)."""
    out: set[str] = set()
    for example in examples:
        info = example.extra_info or {}
        out.update(name for name in (info.get("subject"), info.get("bridge")) if name)
    return out
