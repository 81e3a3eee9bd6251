"""search-mini: questions about a seeded, made-up knowledge base, answered by searching its corpus.

The knowledge base holds people (a made-up first and last name), cities and organisations: a person lives in a
city and works for an organisation, an organisation is based in a city. Every name is made of made-up words, all
distinct and none inside another (nor inside the questions' own words), so a name matches only itself: in BM25,
in the reward's exact match and in the tiny model's copying. The corpus (`corpus_rows`, Search-R1's jsonl rows,
which trainer.data.corpora writes and indexes as the built-in corpus "search-mini") has one document per person
("Ria Vos lives in Pellar and works for Quon Labs.") and one per organisation ("Quon Labs is based in Dask.");
cities have none.

Questions (`search_mini_examples`) come a third each in three kinds, the kind in `data_source`
(search-mini-0hop, -1hop, -2hop) and in `extra_info["hops"]`:
- 0 hops: the fact is in the question ("Ria Vos lives in Pellar. Where does Ria Vos live?"), no search needed;
- 1 hop: one fact of the corpus ("Where does Ria Vos live?", "Who does Ria Vos work for?", "Where is Quon Labs
  based?"): the subject's own document holds the answer;
- 2 hops: "Where is Ria Vos's employer based?": the person's document names the employer, the employer's
  document its city.
Searching the subject's name puts its document first (tests/trainer/test_search_mini_data.py checks every one).

People and organisations are split by their index: one in `HELD_OUT` is a test one, the others train (and make
the SFT traces, trainer.sft.traces.search); a person works for an organisation of their own split, so no test
question's answer (the cities aside, which both share) is a training fact. Both splits' documents are in the one
corpus, as a real retrieval corpus holds far more than a run's questions.

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
# Search-R1's retriever.topk. Three passages of about 70 characters each make an observation of about 250
# characters; a trace with the prompt, two searches and an answer stays under about 800 (the tiny model has
# 1,024 positions, tests check the traces' lengths).
TOPK = 3
SEED = 7
CITIES, ORGANISATIONS, PEOPLE = 12, 40, 400
FIRST_NAMES, LAST_NAMES = 30, 30
# One person and one organisation in HELD_OUT, by index, is a test one.
HELD_OUT = 4
ORG_SUFFIXES = ("Labs", "Corp", "Group", "Bank", "Media")
HOPS = (0, 1, 2)
LEVELS = ("mixed", "0hop", "1hop", "2hop")
# The words of the questions and documents: no made-up word may be inside one.
_TEMPLATE_WORDS = tuple("lives in and works for is based where does live who work employer the doc title".split())
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"

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


def _word(rng: random.Random) -> str:
    """A made-up capitalised word: two or three consonant-vowel syllables, sometimes closed by a consonant."""
    syllables = rng.choice((1, 2, 2))
    word = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables))
    if syllables == 1 or rng.random() < 0.5:
        word += rng.choice(_CONSONANTS)
    return word.capitalize()


def _words(rng: random.Random, count: int, taken: list[str]) -> list[str]:
    """`count` new words, none inside another, inside a word already taken or containing one, nor inside a word
    of the questions and documents."""
    out: list[str] = []
    while len(out) < count:
        word = _word(rng)
        low = word.lower()
        if any(low in other for other in _TEMPLATE_WORDS) or any(
            low in other.lower() or other.lower() in low for other in (*taken, *out)
        ):
            continue
        out.append(word)
    return out


@cache
def knowledge_base(seed: int = SEED) -> KnowledgeBase:
    """The knowledge base: made-up cities, organisations and people, with their relations."""
    rng = random.Random(f"search-mini:kb:{seed}")
    taken = list(ORG_SUFFIXES)
    cities = _words(rng, CITIES, taken)
    stems = _words(rng, ORGANISATIONS, taken + cities)
    firsts = _words(rng, FIRST_NAMES, taken + cities + stems)
    lasts = _words(rng, LAST_NAMES, taken + cities + stems + firsts)
    organisations = tuple(
        Organisation(f"{stem} {rng.choice(ORG_SUFFIXES)}", rng.choice(cities), test=i % HELD_OUT == 0)
        for i, stem in enumerate(stems)
    )
    names = rng.sample([f"{first} {last}" for first in firsts for last in lasts], PEOPLE)
    people = []
    for i, name in enumerate(names):
        test = i % HELD_OUT == 0
        employer = rng.choice([org for org in organisations if org.test == test])
        people.append(Person(name, rng.choice(cities), employer.name, test))
    return KnowledgeBase(tuple(cities), organisations, tuple(people))


def person_text(person: Person) -> str:
    return f"{person.name} lives in {person.city} and works for {person.employer}."


def organisation_text(org: Organisation) -> str:
    return f"{org.name} is based in {org.city}."


def corpus_rows() -> list[dict]:
    """The corpus in Search-R1's jsonl row format: `{"id", "contents": '"Title"\\ntext'}`, people first, then
    organisations; deterministic."""
    kb = knowledge_base()
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


def search_results(index: Any, query: str, k: int = TOPK) -> list[dict[str, Any]]:
    """One query's results as a `/retrieve` answer's list holds them, from a retrieval.BM25Index: what the search
    environment's in-process retriever returns and `SearchR1().information` renders."""
    return [{"document": index.corpus.document(hit.index), "score": hit.score} for hit in index.search(query, k)]


# The questions, by relation: {s} the subject, {a} the answer (in a 0-hop question's fact).
QUESTIONS: dict[Relation, str] = {
    "lives": "Where does {s} live?",
    "works": "Who does {s} work for?",
    "based": "Where is {s} based?",
}
FACTS: dict[Relation, str] = {
    "lives": "{s} lives in {a}.",
    "works": "{s} works for {a}.",
    "based": "{s} is based in {a}.",
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
        subject, answer = org.name, org.city
    else:
        person = rng.choice(people)
        subject, answer = person.name, person.city if relation == "lives" else person.employer
    question = QUESTIONS[relation].format(s=subject)
    if hops == 0:
        question = f"{FACTS[relation].format(s=subject, a=answer)} {question}"
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
    test = split == "test"
    examples = []
    for i in range(example_count(size, split)):
        hops = HOPS[i % 3] if level == "mixed" else int(level[0])
        question, info = _question(kb, rng, hops, test)
        examples.append(
            Example(
                id=f"search-mini-{split}-{i}",
                prompt=[{"role": "user", "content": question}],
                ground_truth={"target": [info["answer"]]},
                data_source=f"{DATA_SOURCE}-{hops}hop",
                extra_info={"hops": hops, "split": split, **info},
            )
        )
    return examples


def entities(examples: Sequence[Example]) -> set[str]:
    """The people and organisations the examples ask about (subject and bridge)."""
    out: set[str] = set()
    for example in examples:
        info = example.extra_info or {}
        out.update(name for name in (info.get("subject"), info.get("bridge")) if name)
    return out
