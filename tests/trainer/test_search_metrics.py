"""A search run's step metrics (Search-R1's action counts, searches per question, EM per data source) and OTC's
reward in the search setting (m = the searches, correct = Search-R1's exact match), on hand-made trajectories."""

import math

import pytest

from trainer.metrics.search import search_metrics, source_name
from trainer.rewards import score_group
from trainer.trajectory import Completion, Example, RewardResult, ToolExecution

INFO = '\n\n<information>Doc 1(Title: "Ria Vos") Ria Vos lives in Pellar.</information>\n\n'


def searched(*queries: str, answer: str = "Pellar") -> Completion:
    text = "".join(f"<search> {q} </search>{INFO}" for q in queries) + f"<answer> {answer} </answer>"
    outcome = {
        "kind": "search",
        "end": "answered",
        "actions": 1 + len(queries),
        "valid_actions": 1 + len(queries),
        "valid_searches": len(queries),
        "searches": [{"query": q, "passages": []} for q in queries],
    }
    executions = tuple(ToolExecution(call=q, status="ok", output="x") for q in queries)
    return Completion(text=text, protocol="search_r1", executions=executions, outcome=outcome)


def example(source: str) -> Example:
    return Example(id=source, prompt=[], ground_truth={"target": ["Pellar"]}, data_source=source)


def test_search_r1s_counts_searches_per_question_and_em_per_data_source() -> None:
    invalid = Completion(
        text="hm", protocol="search_r1",
        outcome={"kind": "search", "end": "max_turns", "actions": 3, "valid_actions": 1, "valid_searches": 1,
                 "searches": []},
    )  # fmt: skip
    rollouts = [
        (example("search-mini-1hop"), searched("Ria Vos"), RewardResult(1.0, correct=True)),
        (example("search-mini-2hop"), searched("Ria Vos", "Quon Labs"), RewardResult(1.0, correct=True)),
        (example("search-mini-2hop"), invalid, RewardResult(0.0, correct=False)),
        (example("ignored"), Completion(text="no outcome"), RewardResult(0.0)),
    ]
    metrics = search_metrics(rollouts, prefix="val/")
    assert metrics["val/search/actions/mean"] == pytest.approx((2 + 3 + 3) / 3)
    assert metrics["val/search/valid_action_ratio"] == pytest.approx((1 + 1 + 1 / 3) / 3)
    assert metrics["val/search/searches/mean"] == pytest.approx(1.0)
    assert metrics["val/search/max_turns_ratio"] == pytest.approx(1 / 3)
    assert metrics["val/search/search-mini-1hop/em"] == 1.0
    assert metrics["val/search/search-mini-2hop/em"] == 0.5
    assert metrics["val/search/search-mini-2hop/searches/mean"] == 1.0
    assert not any("ignored" in name for name in metrics)
    assert search_metrics([(example("x"), Completion(text="t"), RewardResult(0.0))]) == {}
    assert source_name("hotpotqa") == "hotpotqa" and source_name("my source/β") == "my_source_β"


def test_otc_in_the_search_setting_pays_the_fewest_searches_that_answered() -> None:
    group = [searched(), searched("Ria Vos"), searched("Ria Vos", "Quon Labs"), searched("Ria Vos", answer="Dask")]
    results = score_group("otc_grpo", group, {"target": ["pellar"]}, params={"c": 3.0})
    assert [r.correct for r in results] == [True, True, True, False]
    # n = 0 (the first answered without searching): cos(m*pi/(2m+c)) for m searches.
    assert [r.total for r in results[:3]] == pytest.approx([1.0, math.cos(math.pi / 5), math.cos(2 * math.pi / 7)])
    assert results[3].total == 0.0
    ppo = score_group("otc_ppo", group[1:2], {"target": ["Pellar", "Pellar City"]}, params={"c": 3.0})
    assert ppo[0].total == pytest.approx(math.cos(math.pi / 5)) and ppo[0].details["tool_calls"] == 1
