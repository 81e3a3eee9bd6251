"""The seeded function-calling generator: solvable requests, typed calls, distractors, the levels,
and ground truths that ToolRL's and Tool-N1's rewards score as the papers' data."""

import json
from collections import Counter

import pytest

from trainer.data.datasets import DatasetError, dataset_misuse, load_dataset
from trainer.data.function_calling import CATALOGUE, TOOLS, function_calling_examples
from trainer.rewards import score

JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


def test_the_same_seed_split_and_level_give_the_same_examples() -> None:
    first = function_calling_examples(50, seed=3, level="hard")
    assert first == function_calling_examples(50, seed=3, level="hard")
    assert first != function_calling_examples(50, seed=4, level="hard")
    assert first != function_calling_examples(50, seed=3, level="hard", split="test")


@pytest.mark.parametrize("level", ["easy", "hard", "mixed"])
def test_every_call_is_a_valid_call_of_an_offered_tool_and_the_request_names_its_values(level: str) -> None:
    for example in function_calling_examples(300, seed=0, level=level):
        offered = {tool["name"]: tool for tool in example.tools}
        assert len(offered) == len(example.tools)  # no tool twice
        request = example.prompt[-1]["content"]
        for call in example.ground_truth:
            schema = offered[call["name"]]["parameters"]
            assert set(schema["required"]) <= set(call["arguments"]) <= set(schema["properties"])
            for name, value in call["arguments"].items():
                spec = schema["properties"][name]
                assert isinstance(value, JSON_TYPES[spec["type"]]), (name, value)
                assert spec["type"] == "boolean" or not isinstance(value, bool)
                assert value in spec.get("enum", [value])
                # Everything a call carries can be read off the request (a boolean as its phrase).
                assert spec["type"] == "boolean" or str(value) in request, (value, request)
        assert example.extra_info["calls"] == len(example.ground_truth)
        assert example.extra_info["difficulty"] in ("easy", "hard")


def test_the_levels_differ_in_calls_tools_and_optional_arguments() -> None:
    easy = function_calling_examples(400, seed=0, level="easy")
    assert {len(e.ground_truth) for e in easy} == {1} and {len(e.tools) for e in easy} == {2}
    required = {t.name: {p.name for p in t.params if p.required} for t in CATALOGUE}
    assert all(set(e.ground_truth[0]["arguments"]) == required[e.ground_truth[0]["name"]] for e in easy)

    hard = function_calling_examples(400, seed=0, level="hard")
    assert {len(e.tools) for e in hard} == {4}
    shapes = Counter(len(e.ground_truth) for e in hard)
    assert set(shapes) == {0, 1, 2} and min(shapes.values()) > 80  # no call, one call, two calls
    optional = sum(set(c["arguments"]) != required[c["name"]] for e in hard for c in e.ground_truth)
    assert optional > 100  # optional arguments are asked for, often
    # A two-call request names both tools' calls in order: "... and then ...".
    two = next(e for e in hard if len(e.ground_truth) == 2)
    assert " and then " in two.prompt[-1]["content"]
    assert {c["name"] for c in two.ground_truth} <= {t["name"] for t in two.tools}

    mixed = Counter(e.extra_info["difficulty"] for e in function_calling_examples(400, seed=0))
    assert set(mixed) == {"easy", "hard"} and min(mixed.values()) > 150


def test_every_catalogue_tool_is_asked_for_and_has_typed_parameters() -> None:
    asked = Counter(c["name"] for e in function_calling_examples(600, seed=0) for c in e.ground_truth)
    assert set(asked) == set(TOOLS)
    types = {p.type for t in CATALOGUE for p in t.params}
    assert types == {"string", "integer", "number", "boolean"}
    assert any(p.enum for t in CATALOGUE for p in t.params) and any(not p.required for t in CATALOGUE for p in t.params)


def test_the_dataset_names_load_the_generator_and_refuse_unknown_levels() -> None:
    assert load_dataset("function-calling:hard", size=5, seed=2) == function_calling_examples(5, seed=2, level="hard")
    assert load_dataset("function-calling", size=5) == function_calling_examples(5, level="mixed")
    val = load_dataset("function-calling:easy", split="test")
    assert len(val) == 200 and val[0].id.startswith("function-calling-test-easy")
    with pytest.raises(DatasetError, match="unknown function-calling level 'medium'; expected one of easy, hard"):
        load_dataset("function-calling:medium")
    assert "holds problems for RL, not SFT traces" in dataset_misuse("function-calling:easy", sft=True)


def _toolrl_answer(calls: list[dict]) -> str:
    if not calls:
        return "<think>no tool does this</think>\n<response>Here you are.</response>"
    lines = "\n".join(json.dumps({"name": c["name"], "parameters": c["arguments"]}) for c in calls)
    return f"<think>plan</think>\n<tool_call>\n{lines}\n</tool_call>"


def test_the_papers_rewards_score_the_ground_truth_highest() -> None:
    for example in function_calling_examples(30, seed=1, level="hard"):
        right = _toolrl_answer(example.ground_truth)
        best = score("toolrl", right, example.ground_truth)
        # ToolRL's correctness compares calls: a reply where none is due is right with format alone.
        assert best.correct and best.components["format"] == 1.0
        assert best.components["correctness"] == (3.0 if example.ground_truth else 0.0)
        if not example.ground_truth:
            call = _toolrl_answer([{"name": "set_timer", "arguments": {"minutes": 5}}])
            assert score("toolrl", call, example.ground_truth).total < best.total
        else:
            wrong = [{**example.ground_truth[0], "name": "no_such_tool"}, *example.ground_truth[1:]]
            assert score("toolrl", _toolrl_answer(wrong), example.ground_truth).total < best.total
            n1 = f"<think>plan</think>\n<tool_call>{json.dumps(example.ground_truth)}</tool_call>"
            assert score("tool_n1", n1, example.ground_truth).total == 1.0
