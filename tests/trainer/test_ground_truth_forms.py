"""A ground truth of JSON calls scores the same in each form tirlab has it in: the list a dataset
gives, that list as JSON text (what the rollouts page shows as "expected" and the rewards page's
*try it* box sends), and ToolRL's text form; one that cannot be read says why, never scores zeros."""

import json

import pytest

from trainer.protocols.calls import ground_truth_calls, json_ground_truth
from trainer.rewards import score
from trainer.rewards.toolrl import NO_TAGS_NOTE

DENTIST = {"name": "add_event", "arguments": {"title": "Dentist", "date": "2026-12-01"}}
AS_LIST = [DENTIST]
AS_JSON = json.dumps(AS_LIST)  # as the rollouts page prints it
AS_TOOLRL_TEXT = (
    '<tool_call>\n{"name": "add_event", "parameters": {"title": "Dentist", "date": "2026-12-01"}}\n</tool_call>'
)
NEAR = (
    "<think>The user wants the appointment in the calendar.</think>\n"
    '<tool_call>\n{"name": "add_event", "parameters": {"title": "Dentist", "date": "2026-12-02"}}\n</tool_call>'
)
EXACT = NEAR.replace("2026-12-02", "2026-12-01")


@pytest.mark.parametrize("completion", [NEAR, EXACT], ids=["one-wrong-value", "exact"])
def test_toolrl_scores_a_json_text_ground_truth_as_its_text_form(completion: str) -> None:
    results = [score("toolrl", completion, truth) for truth in (AS_TOOLRL_TEXT, AS_LIST, AS_JSON)]
    assert results[0].total > 0
    assert all(result == results[0] for result in results)


def test_toolrl_json_text_with_leading_space_is_read_too() -> None:
    assert score("toolrl", EXACT, f"\n  {AS_JSON}\n").total == score("toolrl", EXACT, AS_LIST).total == 4.0


def test_tool_n1_and_the_call_metrics_read_the_same_json_text() -> None:
    tool_n1 = f"<think>x</think>\n<tool_call>\n{AS_JSON}\n</tool_call>"
    assert score("tool_n1", tool_n1, AS_JSON).total == score("tool_n1", tool_n1, AS_LIST).total == 1.0
    assert ground_truth_calls(AS_JSON) == ground_truth_calls(AS_LIST) == ground_truth_calls(AS_TOOLRL_TEXT)
    multi_turn = {"calls": AS_LIST, "state": {}}
    assert ground_truth_calls(json.dumps(multi_turn)) == ground_truth_calls(multi_turn) == AS_LIST


@pytest.mark.parametrize("reward", ["toolrl", "tool_n1", "artist_fc"])
def test_json_that_does_not_parse_says_where(reward: str) -> None:
    with pytest.raises(ValueError, match=r"starts like JSON but is not valid JSON: .*\(line 1, column \d+\)"):
        score(reward, EXACT, AS_JSON[:-2])


def test_unreadable_json_text_has_no_call_metrics_rather_than_an_error() -> None:
    assert ground_truth_calls(AS_JSON[:-2]) is None


def test_toolrl_refuses_a_json_value_that_is_not_calls() -> None:
    with pytest.raises(ValueError, match="text form .* or a list of calls, not a JSON object"):
        score("toolrl", EXACT, json.dumps({"title": "Dentist"}))
    with pytest.raises(ValueError, match="each call must be an object with a name"):
        score("toolrl", EXACT, "[1, 2]")


def test_toolrl_says_why_a_ground_truth_without_tags_expects_no_call() -> None:
    # rlla.py's fourth shape: kept, and said beside the score.
    result = score("toolrl", EXACT, "add_event(title='Dentist')")
    assert result.components == {"format": 0.0, "correctness": 0.0}
    assert result.details == {"ground_truth": NO_TAGS_NOTE}
    assert "no <tool_call> and no <response>" in NO_TAGS_NOTE
    assert score("toolrl", EXACT, AS_TOOLRL_TEXT).details == {}


@pytest.mark.parametrize(
    ("reward", "message"),
    [("tool_n1", "Tool-N1 ground truth must be a JSON list"), ("artist_fc", "artist_fc needs a ground truth")],
)
def test_plain_text_where_json_is_needed_says_so(reward: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score(reward, EXACT, "add_event")


def test_json_ground_truth_leaves_other_values_alone() -> None:
    assert json_ground_truth("42") == "42"
    assert json_ground_truth(AS_TOOLRL_TEXT) == AS_TOOLRL_TEXT
    assert json_ground_truth(AS_LIST) is AS_LIST
    assert json_ground_truth(None) is None
    assert json_ground_truth(b"[]") == []
