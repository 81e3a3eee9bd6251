"""A search trajectory's outcome on the rollouts page (webapp.ui.rollout_search): how it ended and Search-R1's counts,
each query's passages with the golden answers marked (case-insensitive, whole words, escaped), the answer against
the golden answers after Search-R1's normalize_answer; an outcome or ground truth with fields missing tolerated."""

import pytest
from django.template.loader import render_to_string
from django.test import Client

from trainer.protocols.search_r1 import INVALID_ACTION, passages_to_string
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Trajectory
from webapp.ui.rollout_search import golden_pattern, search_view, segments

CONFIG = {"tools": {"protocol": "search_r1", "environment": "search", "search_url": "http://127.0.0.1:8000/retrieve"}}
QUESTION = "Which family ruled the island of Pelagosa before 1400?"
QUERY = "Pelagosa island ruling family 14th century"
DOCS = [
    {
        "document": {
            "id": "wiki-1402",
            "contents": '"Pelagosa"\nPelagosa was held by the Pellar family; the PELLAR heirs sold it.'
            " Pellarini is a town.",
        },
        "score": 12.34567,
    },
    {"document": {"id": "wiki-77", "contents": '"Adriatic islands"\nNo answer here <b>bold</b> & more.'}, "score": 9.1},
    {"document": {"id": "wiki-9", "contents": '"Pellar (family)"\nA noble house.'}, "score": 8},
]


def passage(item: dict) -> dict:
    """A retrieved item as trainer.envs.search keeps it in the outcome."""
    title, _, text = item["document"]["contents"].partition("\n")
    return {"id": item["document"]["id"], "title": title.strip('"'), "score": item["score"], "text": text}


def outcome(**changes) -> dict:
    return {
        "kind": "search",
        "end": "answered",
        "actions": 3,
        "valid_actions": 2,
        "valid_searches": 1,
        "searches": [{"query": QUERY, "passages": [passage(item) for item in DOCS]}],
        **changes,
    }


def turns() -> list[dict]:
    """Turns as trainer.report.trajectories builds them from a search_r1 completion: a search and its passages,
    an invalid action and its reply (a tool turn without a call), then the answer."""
    return [
        {"kind": "model", "text": f"<think>I need the family.</think>\n<search> {QUERY} </search>"},
        {
            "kind": "tool",
            "call": f" {QUERY} ",
            "text": f"\n\n<information>{passages_to_string(DOCS)}</information>\n\n",
            "status": "ok",
        },
        {"kind": "model", "text": "<think>The first passage says it.</think> It was the Pellars."},
        {"kind": "tool", "text": INVALID_ACTION},
        {"kind": "model", "text": "<think>Answer properly.</think>\n<answer> The Pellar. </answer>"},
    ]


def trajectory(sample: int, result: dict | None, final_answer: str, ground_truth=None) -> dict:
    correct = final_answer == "The Pellar."
    return {
        "step": 0,
        "prompt_index": 0,
        "sample_index": sample,
        "prompt": [{"role": "user", "content": QUESTION}],
        "turns": turns(),
        "final_answer": final_answer,
        "ground_truth": {"target": ["Pellar", "the Pellar family"]} if ground_truth is None else ground_truth,
        "reward": 1.0 if correct else 0.0,
        "reward_components": {"em": 1.0 if correct else 0.0},
        "correct": correct,
        "tool_call_count": 1,
        "outcome": result,
    }


def marked(parts: list[dict]) -> list[str]:
    return [part["text"] for part in parts if part["golden"]]


def test_only_a_search_outcome_has_a_view():
    assert search_view(None) is None
    assert search_view({"kind": "swe", "end": "finished"}) is None
    assert search_view("search") is None
    assert search_view({"kind": "search"}) is not None


def test_golden_answers_are_marked_case_insensitive_on_word_boundaries():
    view = search_view(outcome(), {"target": ["Pellar"]}, "The Pellar.")
    first, second, third = view["searches"][0]["passages"]
    # "Pellar" and "PELLAR" marked; "Pellarini" is another word.
    assert marked(first["text"]) == ["Pellar", "PELLAR"]
    assert "".join(part["text"] for part in first["text"]) == passage(DOCS[0])["text"]
    assert first["has_golden"] and not second["has_golden"] and third["has_golden"]
    assert marked(third["title"]) == ["Pellar"] and marked(third["text"]) == []
    assert [p["rank"] for p in view["searches"][0]["passages"]] == [1, 2, 3]
    assert [p["score"] for p in view["searches"][0]["passages"]] == ["12.346", "9.100", "8.000"]
    assert [p["id"] for p in view["searches"][0]["passages"]] == ["wiki-1402", "wiki-77", "wiki-9"]
    assert view["searches"][0]["hits"] == 2 and view["hits"] == 2 and view["passages"] == 3


def test_a_phrase_matches_across_spaces_and_the_longest_answer_wins():
    pattern = golden_pattern(["New York", "New  York City", "U.S."])
    parts = segments("Born in new\nyork city, then the U.S. army; not New Yorker.", pattern)
    assert marked(parts) == ["new\nyork city", "U.S."]
    assert golden_pattern([]) is None and golden_pattern(["  "]) is None
    assert segments("", pattern) == [] and segments("plain", None) == [{"text": "plain", "golden": False}]
    # Regex characters in an answer are literal.
    assert marked(segments("axb and a.b", golden_pattern(["a.b"]))) == ["a.b"]


def test_the_answer_is_matched_after_normalize_answer():
    view = search_view(outcome(), {"target": ["Pellar", "the Pellar family"]}, "  The Pellar. ")
    assert view["match"] is True
    assert view["answer"] == "The Pellar." and view["normalized_answer"] == "pellar"
    assert view["golden"] == [
        {"text": "Pellar", "normalized": "pellar"},
        {"text": "the Pellar family", "normalized": "pellar family"},
    ]
    assert search_view(outcome(), {"target": ["Pellar"]}, "Pellar family")["match"] is False
    assert search_view(outcome(), ["Pellar"], "pellar!")["match"] is True  # a list of answers
    assert search_view(outcome(), "Pellar", "PELLAR")["match"] is True  # one answer
    assert search_view(outcome(), '{"target": ["Pellar"]}', "an pellar")["match"] is True  # as JSON text
    assert view["end"] == "answered" and (view["actions"], view["valid_actions"], view["valid_searches"]) == (3, 2, 1)
    assert view["cell"] == "The Pellar." and view["expected"] == "Pellar | the Pellar family"


def test_missing_fields_are_tolerated():
    view = search_view({"kind": "search"}, None, None)
    assert view["searches"] == [] and view["golden"] == [] and view["match"] is False
    assert view["actions"] is None and view["answer"] == "" and view["end"] == "?"
    assert view["cell"] == "(?)" and view["expected"] == ""
    # A ground truth that is not Search-R1's: no golden answers, nothing marked, no match.
    odd = search_view(outcome(), {"answer": "Pellar"}, "Pellar")
    assert odd["golden"] == [] and odd["match"] is False and odd["hits"] == 0
    assert search_view(outcome(), "{not json", "Pellar")["golden"] == []
    # Passages with fields missing, and items that are not objects.
    searches = [{"passages": [{}, {"text": "Pellar", "score": None}, 3]}, 7]
    sparse = search_view({"kind": "search", "end": "max_turns", "searches": searches}, {"target": ["Pellar"]}, "")
    (search,) = sparse["searches"]
    assert search["query"] == "" and len(search["passages"]) == 2
    assert search["passages"][0] == {"rank": 1, "id": "", "title": [], "score": "", "text": [], "has_golden": False}
    assert search["passages"][1]["score"] == "" and marked(search["passages"][1]["text"]) == ["Pellar"]
    assert sparse["end"] == "turn limit" and sparse["cell"] == "(turn limit)"


def test_the_template_escapes_the_corpus_and_the_model_text():
    hostile = outcome(
        searches=[
            {
                "query": "<script>alert(1)</script>",
                "passages": [{"id": "<i>", "title": "AT&T <b>", "score": 1, "text": "Ask AT&T <img src=x> about at&t"}],
            }
        ]
    )
    html = render_to_string(
        "ui/rollout_search.html", {"search": search_view(hostile, {"target": ["AT&T"]}, "<b>AT&T</b>")}
    )
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and "&lt;img src=x&gt;" in html
    assert '<mark class="golden">AT&amp;T</mark> &lt;b&gt;' in html
    assert html.count('<mark class="golden">') == 3  # the title's, and the text's two (case-insensitive)
    assert "&lt;b&gt;AT&amp;T&lt;/b&gt;" in html and "<b>" not in html


@pytest.fixture
def client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.mark.django_db
def test_an_ingested_search_trajectory_on_the_rollouts_page(client, make_run):
    run, token = make_run(config=CONFIG)
    wrong = outcome(end="max_turns", actions=4, valid_actions=1)
    ingest_batch(
        run_id=run.pk,
        token=token,
        payload={
            "trajectories": [
                trajectory(0, outcome(), "The Pellar."),
                trajectory(1, wrong, ""),
                trajectory(2, None, "Pellar"),  # no outcome: the plain answer and expected
            ]
        },
    )
    assert Trajectory.objects.get(run=run, sample_index=0).outcome == outcome()
    html = client.get(f"/runs/{run.pk}/rollouts/").content.decode()
    assert html.count('<section class="search-outcome"') == 2
    assert '<span class="badge ok" title="exact match after Search-R1\'s normalize_answer">match</span>' in html
    assert ">no match</span>" in html and ">turn limit</span>" in html
    # The longest golden answer first: "the Pellar family" whole, then "PELLAR".
    assert 'by <mark class="golden">the Pellar family</mark>; the <mark class="golden">PELLAR</mark> heirs' in html
    assert "No answer here &lt;b&gt;bold&lt;/b&gt; &amp; more." in html
    assert '<span class="muted passage-score" title="the retriever\'s score">12.346</span>' in html
    assert '<code class="query">Pelagosa island ruling family 14th century</code>' in html
    assert '<span class="golden-answer" title="normalised: pellar family">the Pellar family</span>' in html
    assert "(turn limit)" in html  # the row's cell without an answer
    assert '<span class="expected mono">Pellar | the Pellar family</span>' in html  # the golden answers, not JSON
    assert '<dd class="ground-truth">' in html  # the trajectory without an outcome keeps the plain view
