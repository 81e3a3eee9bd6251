"""search-mini's data (trainer.data.search_mini) and its cold start's traces (trainer.sft.traces.search): a made-up
knowledge base whose names match only themselves, questions of 0, 1 and 2 hops on disjoint train and test
entities, a corpus BM25 finds each subject's document in, and traces whose observations are what the search
environment feeds back."""

import collections
import dataclasses
import json
import re
from pathlib import Path

import pytest

from retrieval import load_corpus
from trainer.data.datasets import BUILTIN_DATASETS, GENERATORS, load_dataset
from trainer.data.search_mini import (
    DATA_SOURCE,
    TOPK,
    corpus_rows,
    entities,
    knowledge_base,
    memory_index,
    search_index,
    search_mini_examples,
    search_results,
)
from trainer.models.tiny.model import CharTokenizer
from trainer.protocols.prompts import TEMPLATES
from trainer.protocols.search_r1 import SearchR1
from trainer.rewards import score
from trainer.rewards.search_r1 import golden_answers
from trainer.sft.data import load_sft_dataset
from trainer.sft.traces.search import (
    PROTOCOL,
    SEARCH_MINI,
    SEARCH_READ,
    TEMPLATE,
    SearchMiniMix,
    copy_traces,
    read_traces,
    search_traces,
    trace_questions,
)
from trainer.sft.train import encode_trace

# The tiny model has 1,024 positions; a trace leaves room for a longer answer or a query gone astray.
MAX_TRACE_TOKENS = 900
_SEARCH = re.compile(r"<search> (?P<query>.*?) </search>")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return search_index(tmp_path_factory.mktemp("search-mini"))


MIX = SearchMiniMix(traces=600)


@pytest.fixture(scope="module")
def traces() -> list[dict]:
    return search_traces(MIX)


def _documents() -> dict[str, str]:
    """Each document's title (unquoted) -> its text."""
    return {row["contents"].split("\n")[0].strip('"'): row["contents"].split("\n", 1)[1] for row in corpus_rows()}


def test_names_are_distinct_and_each_is_its_kind_s_word_and_number() -> None:
    kb = knowledge_base()
    kinds = {"Town": (kb.cities, 2), "Firm": ([o.name for o in kb.organisations], 3)}
    kinds["Agent"] = ([p.name for p in kb.people], 4)
    numbers = []
    for word, (names, digits) in kinds.items():
        assert len(set(names)) == len(names)
        for name in names:
            assert re.fullmatch(rf"{word} [1-9]\d{{{digits - 1}}}", name), name
            numbers.append(name.split()[1])
    # No number is another kind's too (the digit counts differ), so a name's number matches only its documents.
    assert len(set(numbers)) == len(numbers)


def test_the_corpus_is_deterministic_and_loads_as_a_search_r1_corpus(tmp_path: Path) -> None:
    rows = corpus_rows()
    assert rows == corpus_rows()
    kb = knowledge_base()
    assert len(rows) == len(kb.people) + len(kb.organisations)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    corpus = load_corpus(path)
    assert len(corpus) == len(rows)
    assert corpus.document(0)["title"] == kb.people[0].name
    assert rows[0]["contents"] == f'"{kb.people[0].name}"\n{kb.people[0].name} lives in {kb.people[0].city} and ' + (
        f"works for {kb.people[0].employer}."
    )
    assert max(len(row["contents"]) for row in rows) <= 80


def test_searching_a_name_puts_its_document_first(index) -> None:
    kb = knowledge_base()
    for name in (*(p.name for p in kb.people), *(o.name for o in kb.organisations)):
        results = search_results(index, name, TOPK)
        assert len(results) == TOPK
        assert results[0]["document"]["title"] == name, name
        assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)


def test_search_results_are_what_the_environment_s_retriever_returns(index) -> None:
    from trainer.envs.search.retriever import LocalRetriever

    retriever = LocalRetriever(index, TOPK)
    for query in ("Where is it based?", knowledge_base().people[3].name, knowledge_base().organisations[1].name):
        assert retriever.search(query) == search_results(index, query, TOPK)


def test_train_and_test_ask_about_disjoint_people_and_organisations() -> None:
    train = search_mini_examples(1500, split="train")
    test = search_mini_examples(600, split="test")
    sft = search_mini_examples(1500, split="sft")
    assert entities(train) and entities(test)
    assert not entities(train) & entities(test)
    assert not entities(sft) & entities(test)
    kb = knowledge_base()
    held_out = {p.name for p in kb.people if p.test} | {o.name for o in kb.organisations if o.test}
    assert entities(test) <= held_out and not entities(train) & held_out
    # Nor does a test question's answer name a training organisation.
    train_orgs = {o.name for o in kb.organisations if not o.test}
    assert not {e.extra_info["answer"] for e in test} & train_orgs
    # Both splits' documents are in the one corpus.
    titles = set(_documents())
    assert entities(train) | entities(test) <= titles


def test_the_questions_are_a_third_of_each_hop_count() -> None:
    examples = search_mini_examples(300, seed=4, split="train")
    counts = collections.Counter(e.data_source for e in examples)
    assert counts == {f"{DATA_SOURCE}-{hops}hop": 100 for hops in (0, 1, 2)}
    assert all(e.data_source == f"search-mini-{e.extra_info['hops']}hop" for e in examples)
    assert all(len(e.prompt) == 1 and e.prompt[0]["role"] == "user" for e in examples)
    assert search_mini_examples(30, seed=4) == search_mini_examples(30, seed=4)
    assert search_mini_examples(30, seed=4) != search_mini_examples(30, seed=5)
    only = search_mini_examples(20, level="2hop", split="test")
    assert {e.extra_info["hops"] for e in only} == {2}


def test_the_golden_answers_are_the_corpus_facts() -> None:
    documents = _documents()
    for example in search_mini_examples(600, seed=1, split="train") + search_mini_examples(300, split="test"):
        info = example.extra_info
        (answer,) = golden_answers(example.ground_truth)
        question = example.prompt[0]["content"]
        subject = documents[info["subject"]]
        if info["hops"] == 2:
            assert question == f"Where is {info['subject']}'s employer based?"
            assert subject.endswith(f"works for {info['bridge']}.")
            assert documents[info["bridge"]] == f"{info['bridge']} is based in {answer}."
        else:
            relation = {"lives": f"lives in {answer}", "works": f"works for {answer}.", "based": f"based in {answer}."}
            assert relation[info["relation"]] in subject, (question, subject)
            # A 0-hop question states its subject's whole document, whose facts it asks one of; a 1-hop one does not.
            assert (answer in question) == (info["hops"] == 0), question
            assert (subject in question) == (info["hops"] == 0), question
        assert score("search_r1", f"<answer> {answer} </answer>", example.ground_truth).total == 1.0


def test_the_generator_is_a_builtin_dataset() -> None:
    assert "search-mini" in BUILTIN_DATASETS and "search-mini" in GENERATORS
    examples = load_dataset("search-mini", split="test", size=9)
    assert [e.extra_info["hops"] for e in examples] == [0, 1, 2] * 3
    assert {e.extra_info["hops"] for e in load_dataset("search-mini:1hop", size=6)} == {1}


def test_the_template_is_short_and_names_the_tags() -> None:
    template = TEMPLATES[TEMPLATE].user
    assert "<search> query </search>" in template and "<answer>" in template and "{question}" in template
    assert len(template) <= 120


def test_each_hop_count_gets_0_1_and_2_searches_alike(traces: list[dict]) -> None:
    counts = collections.Counter((t["extra_info"]["hops"], t["extra_info"]["searches"]) for t in traces)
    for hops in (0, 1, 2):
        per = [counts[hops, searches] for searches in (0, 1, 2)]
        assert max(per) - min(per) <= 1, (hops, per)
    for trace in traces:
        assert len(_SEARCH.findall(trace["response"])) == trace["extra_info"]["searches"] == trace["tool_outputs"]


def test_the_cold_start_s_traces_answer_at_once_half_the_time_whatever_the_hops() -> None:
    traces = search_traces(dataclasses.replace(SEARCH_MINI, traces=1200))
    counts = collections.Counter((t["extra_info"]["hops"], t["extra_info"]["searches"]) for t in traces)
    for hops in (0, 1, 2):
        assert [counts[hops, searches] for searches in (0, 1, 2)] == [200, 100, 100], hops


def test_the_traces_answer_from_what_they_retrieved(traces: list[dict]) -> None:
    examples = {t["prompt"][0]["content"]: t for t in traces}
    assert len(examples) > 100
    right = collections.Counter()
    for trace in traces:
        info = trace["extra_info"]
        right[info["hops"], info["searches"]] += info["correct"]
        assert SearchR1().final_answer(trace["response"]) is not None
    for (hops, searches), count in right.items():
        # Right exactly where the passages it searched hold the answer (or the question states it).
        assert (count > 0) == (searches >= hops), (hops, searches)
    total = collections.Counter((t["extra_info"]["hops"], t["extra_info"]["searches"]) for t in traces)
    assert all(right[key] in (0, total[key]) for key in total)


def test_the_observations_are_what_the_environment_feeds_back(traces: list[dict]) -> None:
    protocol = SearchR1()
    for trace, (kb, example) in zip(traces, trace_questions(MIX), strict=True):
        assert trace["prompt"] == example.prompt
        index = memory_index(kb)
        response = trace["response"]
        queries = _SEARCH.findall(response)
        observations = protocol.tool_texts(response)
        assert observations == [protocol.information(search_results(index, q, TOPK)) for q in queries]
        # Each search is answered right after its tag, and the answer ends the trace.
        expected = "".join(f"<search> {q} </search>{o}" for q, o in zip(queries, observations, strict=True))
        assert response.startswith(expected) and response.endswith(" </answer>")
        assert re.fullmatch(r"<answer> [^<]+ </answer>", response[len(expected) :]), response


def test_a_trace_s_own_corpus_is_searched_as_the_mini_s(tmp_path: Path) -> None:
    """The in-memory index of a trace's knowledge base ranks and scores as the on-disk index of the same rows."""
    from retrieval import BM25Index

    kb, _ = trace_questions(MIX)[7]
    rows = corpus_rows(kb)
    path = tmp_path / "kb.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    on_disk = BM25Index.load(load_corpus(path), tmp_path)
    for query in (kb.people[0].name, kb.organisations[1].name, "Where is it based?"):
        assert search_results(memory_index(kb), query) == search_results(on_disk, query)


def test_no_trace_states_a_fact_another_or_the_mini_states() -> None:
    """Each trace's knowledge base is drawn anew, so no fact can be learnt by heart: a name may come back, but what
    a question asks about it (its answer) all but never does, nor a held-out question's."""
    facts = [(e.extra_info["subject"], e.extra_info["relation"], e.extra_info["answer"]) for _, e in trace_questions()]
    assert len(set(facts)) >= 0.97 * len(facts)
    held_out = search_mini_examples(600, split="test")
    asked = {(e.extra_info["subject"], e.extra_info["relation"], e.extra_info["answer"]) for e in held_out}
    assert len(asked & set(facts)) <= 0.02 * len(asked)


def test_the_first_query_is_the_subject_and_the_second_the_bridge(traces: list[dict]) -> None:
    for trace, (kb, _) in zip(traces, trace_questions(MIX), strict=True):
        employers = {p.name: p.employer for p in kb.people}
        cities = {o.name: o.city for o in kb.organisations}
        queries = _SEARCH.findall(trace["response"])
        question = trace["prompt"][0]["content"]
        if queries:
            assert queries[0] in question
        if len(queries) == 2:
            assert queries[1] == employers.get(queries[0]) or queries[1] == cities.get(queries[0])


def test_the_traces_load_for_sft_and_fit_the_tiny_model() -> None:
    rows = load_sft_dataset("search-mini-sft", protocol=PROTOCOL)
    assert len(rows) == 4000
    tokenizer = CharTokenizer()
    lengths = [len(encode_trace(tokenizer, row, protocol=PROTOCOL, template=TEMPLATE)[0]) for row in rows]
    assert max(lengths) <= MAX_TRACE_TOKENS
    assert all(row.tool_outputs == len(_SEARCH.findall(row.response)) for row in rows)


def _answer_weight(trace: dict) -> float:
    """The loss weight of the trace's answer text."""
    start = trace["response"].rindex("<answer> ") + len("<answer> ")
    (weight,) = [w for a, b, w in trace["weighted_spans"] if a == start]
    return weight


def test_a_guessed_answer_teaches_nothing_and_a_read_one_is_weighed_as_the_queries(traces: list[dict]) -> None:
    # A guess is a name drawn at random: weighed, it taught random digits that spoilt the copying.
    for trace in traces:
        info = trace["extra_info"]
        guessed = info["hops"] > 0 and info["searches"] == 0
        assert _answer_weight(trace) == (MIX.guess_weight if guessed else MIX.content_weight)
        queries = [
            w for a, b, w in trace["weighted_spans"] if trace["response"][a - len("<search> ") : a] == "<search> "
        ]
        assert queries == [MIX.content_weight] * info["searches"]
    assert MIX.guess_weight == 0.0


def test_the_read_traces_search_as_often_as_the_hops_and_are_all_right() -> None:
    traces = read_traces()
    copies, searched = traces[:2000], traces[2000:]
    assert len(searched) == SEARCH_READ.traces == 4000
    assert copies == copy_traces(SearchMiniMix(traces=2000, seed=6))
    for trace in searched:
        info = trace["extra_info"]
        assert info["searches"] == info["hops"] and info["correct"], trace["response"]
    assert collections.Counter(t["extra_info"]["hops"] for t in searched) == {0: 1334, 1: 1333, 2: 1333}


def test_a_copy_trace_answers_a_0_hop_question_at_once_from_its_fact() -> None:
    for trace in copy_traces(SearchMiniMix(traces=60, seed=6)):
        assert trace["tool_outputs"] == 0 and trace["extra_info"]["correct"]
        answer = SearchR1().final_answer(trace["response"])
        assert trace["response"] == f"<answer> {answer} </answer>" and answer in trace["prompt"][0]["content"]
    with pytest.raises(ValueError, match="unknown searches .some.; expected"):
        search_traces(SearchMiniMix(traces=3, searches="some"))
