"""The search environment runs Search-R1's loop: for the same model turns, a trajectory's text is byte for byte
what Search-R1's own functions make of them (tests/trainer/_search_r1_reference.py: its cut, its
execute_predictions and its last turn without search), the observations are masked, and an in-process corpus and
a retrieval server at a URL give the same passages.

Driven by test_rollout's ScriptedEngine (a model would not make these turns on cue), with the real retrieval."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval import BM25Index, load_corpus
from retrieval.server import RetrievalServer
from tests.retrieval.conftest import ROWS, serving, write_corpus
from tests.trainer._search_r1_reference import reference_cut, reference_execute_predictions
from tests.trainer.test_rollout import ScriptedEngine
from trainer.config import ConfigError, validate_config
from trainer.contract import TrajectoryIn
from trainer.envs.search.retriever import LocalRetriever, RetrievalError, retriever_for
from trainer.models import CharTokenizer
from trainer.protocols import get_protocol
from trainer.protocols.search_r1 import INVALID_ACTION
from trainer.report.trajectories import trajectory_report
from trainer.rollout.multi_turn import RolloutSettings, Trajectory, rollout
from trainer.trajectory import Example, RewardResult

PROMPT = "Question: where was the founder of Zorblat born?\n"


@pytest.fixture(autouse=True)
def var_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TIRLAB_VAR_DIR", str(tmp_path / "var"))
    return tmp_path / "var"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.jsonl")


def run(turns: list[str], settings: RolloutSettings) -> Trajectory:
    tokenizer = CharTokenizer()
    engine = ScriptedEngine(tokenizer, {PROMPT: turns})
    (trajectory,) = rollout(engine, [tokenizer.encode(PROMPT)], settings, seed=0).trajectories
    return trajectory


def settings_for(corpus: Path | None = None, *, url: str | None = None, max_turns: int = 2) -> RolloutSettings:
    return RolloutSettings(
        protocol="search_r1",
        environment="search",
        max_tool_calls=max_turns,
        max_response_tokens=4000,
        search_corpus=str(corpus) if corpus is not None else None,
        search_url=url,
        search_topk=3,
    )


def search_r1_response(turns: list[str], retriever: LocalRetriever, max_turns: int) -> str:
    """What Search-R1's run_llm_loop (generation.py:220-313) makes of one trajectory's generations: each cut, the
    observation of its main-loop turns appended, until an answer; then one last turn without search."""
    response = ""
    for step in range(max_turns + 1):
        turn = reference_cut([turns[step]])[0]
        final = step == max_turns
        # The server's answer for this turn's search, asked as _batch_search asks (generation.py:450-458).
        query = turn.split("<search>")[1].split("</search>")[0].strip() if "</search>" in turn else None
        results = [retriever.search(query)] if query is not None and not final else []
        next_obs, dones, _, _, _ = reference_execute_predictions([turn], results, [True], do_search=not final)
        response += turn
        if final or dones[0]:
            return response
        response += next_obs[0]
    raise AssertionError("unreachable")


TURNS = [
    "<think>I need the founder.</think>\n<search> Zorblat founder </search>",
    "I am not sure what to do.",  # no action: the invalid-action text
    "<think>Marsh.</think>\n<search> Quenby Marsh </search>",  # the last turn: searched for nothing
]


def test_the_trajectory_is_what_search_r1s_loop_makes_of_the_same_turns(corpus: Path) -> None:
    trajectory = run(TURNS, settings_for(corpus))
    retriever = LocalRetriever.open(corpus, 3)
    expected = search_r1_response(TURNS, retriever, max_turns=2)
    completion = trajectory.completion
    assert completion.text == expected
    first = 'Doc 1(Title: "Zorblat") Zorblat is a harbour city founded by Quenby Marsh in 1802.'
    assert f"</search>\n\n<information>{first}" in expected
    assert completion.text.count(INVALID_ACTION) == 1 and completion.text.endswith("<search> Quenby Marsh </search>")
    # One search ran; the invalid turn is a reply without a call (the second tool text).
    assert [e.call for e in completion.executions] == ["Zorblat founder"] and completion.replies == (1,)
    outcome = completion.outcome
    assert outcome is not None
    assert (outcome["end"], outcome["actions"], outcome["valid_actions"], outcome["valid_searches"]) == (
        "max_turns",
        3,  # Search-R1's turns_stats: 1 + the search + the invalid turn
        2,  # the search and the last turn's search
        2,
    )
    (search,) = outcome["searches"]
    assert search["query"] == "Zorblat founder" and search["passages"][0]["id"] == "zorblat"
    assert search["passages"][0]["title"] == "Zorblat" and search["passages"][0]["score"] > 0

    # The observations are masked from the loss, the model's turns trained on.
    text = "".join(chr(0) if tool else "." for tool in trajectory.tool_mask)
    protocol = get_protocol("search_r1")
    model_text = protocol.model_text(completion.text, tool_outputs=completion.tool_texts)
    assert model_text == "".join(reference_cut([turn])[0] for turn in TURNS)
    assert text.count(".") == len(model_text) + 1  # and the end-of-sequence token that ended the invalid turn
    assert trajectory.loss_mask == [1 - tool for tool in trajectory.tool_mask]


def test_an_answer_ends_the_trajectory_with_nothing_after_it(corpus: Path) -> None:
    turns = ["<search> Quenby Marsh </search>", "<think>Velloria.</think> <answer> Velloria </answer>", "more"]
    trajectory = run(turns, settings_for(corpus, max_turns=4))
    expected = search_r1_response(turns, LocalRetriever.open(corpus, 3), max_turns=4)
    assert trajectory.completion.text == expected and expected.endswith("<answer> Velloria </answer>")
    outcome = trajectory.completion.outcome
    assert outcome is not None and (outcome["end"], outcome["actions"], outcome["valid_actions"]) == ("answered", 2, 2)
    assert get_protocol("search_r1").final_answer(trajectory.completion.text) == "Velloria"


def test_the_trajectory_reports_its_searches_and_replies_in_order(corpus: Path) -> None:
    trajectory = run(TURNS, settings_for(corpus))
    example = Example(id="q", prompt=[{"role": "user", "content": PROMPT}], ground_truth={"target": ["Velloria"]},
                      data_source="test")  # fmt: skip
    report = trajectory_report(example, 0, trajectory, RewardResult(total=0.0), 0, 0, get_protocol("search_r1"))
    kinds = [(turn.kind, turn.call) for turn in report.turns]
    assert kinds == [
        ("model", None),
        ("tool", "Zorblat founder"),
        ("model", None),
        ("tool", None),  # the invalid-action text: no call behind it
        ("model", None),
    ]
    assert report.turns[3].text == INVALID_ACTION
    # The outcome goes to the dashboard as the contract's search outcome.
    again = TrajectoryIn.model_validate_json(report.model_dump_json())
    assert again.outcome is not None and again.outcome.kind == "search"
    assert again.outcome.searches[0].passages[0].id == "zorblat"


@pytest.fixture()
def endpoint(tmp_path: Path) -> Iterator[str]:
    index = BM25Index.load(load_corpus(write_corpus(tmp_path / "served.jsonl")), tmp_path / "served-index")
    with serving(RetrievalServer(("127.0.0.1", 0), index)) as url:
        yield url + "/retrieve"


def test_a_retrieval_server_at_a_url_gives_what_the_corpus_in_process_gives(corpus: Path, endpoint: str) -> None:
    local = run(TURNS, settings_for(corpus)).completion
    remote = run(TURNS, settings_for(url=endpoint)).completion
    assert remote.text == local.text and remote.outcome == local.outcome


def test_a_server_that_refuses_fails_the_search_with_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainer.envs.search import retriever

    monkeypatch.setattr(retriever, "BACKOFF_S", 0.0)  # asked three times all the same, without the waits
    dead = retriever_for(corpus=None, url="http://127.0.0.1:9/retrieve", topk=3)
    with pytest.raises(RetrievalError, match="could not be reached"):
        dead.search("anything")


def test_a_malformed_corpus_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    with pytest.raises(RetrievalError, match="line 2"):
        LocalRetriever.open(path, 3)


def test_the_config_asks_for_a_corpus_or_a_url_with_the_search_environment() -> None:
    base = {"tools": {"protocol": "search_r1", "environment": "search"}}
    with pytest.raises(ConfigError) as missing:
        validate_config(base)
    assert "tools.search_corpus" in missing.value.errors
    both = {"tools": {**base["tools"], "search_corpus": "search-mini", "search_url": "http://127.0.0.1:8000/retrieve"}}
    with pytest.raises(ConfigError):
        validate_config(both)
    bad_url = {"tools": {**base["tools"], "search_url": "ftp://x"}}
    with pytest.raises(ConfigError) as refused:
        validate_config(bad_url)
    assert "tools.search_url" in refused.value.errors
    config = validate_config({"tools": {**base["tools"], "search_corpus": "search-mini", "search_topk": 5}})
    assert RolloutSettings.from_config(config).search_topk == 5
    # An option that does nothing is refused: the search fields of a run whose calls run in Python.
    with pytest.raises(ConfigError) as unused:
        validate_config({"tools": {"protocol": "python_markdown", "search_corpus": "search-mini", "search_topk": 5}})
    assert {"tools.search_corpus", "tools.search_topk"} <= set(unused.value.errors)


@pytest.mark.parametrize(
    ("outcome", "field"),
    [
        ({"kind": "search", "end": "gave up", "actions": 1}, "outcome.end"),
        ({"kind": "search", "end": "answered", "actions": 1, "searches": [{"query": 3}]}, "outcome.searches.0.query"),
        ({"kind": "sql"}, "outcome.kind"),
    ],
)
def test_a_malformed_search_outcome_is_refused_with_its_field(outcome: dict, field: str) -> None:
    from pydantic import ValidationError

    from trainer.contract import field_errors

    trajectory = {"step": 0, "prompt_index": 0, "sample_index": 0, "prompt": "q", "reward": 0.0, "correct": False}
    with pytest.raises(ValidationError) as refused:
        TrajectoryIn.model_validate({**trajectory, "outcome": outcome})
    assert list(field_errors(refused.value)) == [field]
