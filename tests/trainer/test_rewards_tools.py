"""toolrl and tool_n1: ToolRL's rlla.py and Tool-N1's toolcall.py, case by case."""

import json

import pytest

from trainer.rewards import score, score_group
from trainer.rewards.toolrl import bounds, match_score

WEATHER = {"name": "get_weather", "parameters": {"city": "Paris", "unit": "C"}}
TIME = {"name": "get_time", "parameters": {"zone": "CET"}}


def gt_text(*calls: dict, response: str | None = None) -> str:
    text = "<think>the user wants the weather</think>\n"
    if calls:
        text += "<tool_call>\n" + "\n".join(json.dumps(c) for c in calls) + "\n</tool_call>"
    if response is not None:
        text += ("\n" if calls else "") + f"<response>{response}</response>"
    return text


def answer(*calls: object, think: str = "I should call the tool.") -> str:
    lines = "\n".join(c if isinstance(c, str) else json.dumps(c) for c in calls)
    return f"<think>{think}</think>\n<tool_call>\n{lines}\n</tool_call>"


# --- toolrl: match score ---------------------------------------------------------------


def test_match_score_equal_lists_is_one() -> None:
    assert match_score(["a", "b"], ["a", "b"]) == 1.0


def test_match_score_empty_side_is_zero() -> None:
    assert match_score([], ["a"]) == 0.0


def test_match_score_is_multiset_jaccard() -> None:
    assert match_score(["a", "b"], ["b", "c", "c"]) == pytest.approx(1 / 4)


# --- toolrl: correctness ---------------------------------------------------------------


def test_toolrl_exact_match_is_format_one_plus_three() -> None:
    result = score("toolrl", answer(WEATHER), gt_text(WEATHER))
    assert result.components == {"format": 1.0, "correctness": 3.0}
    assert result.correct


def test_toolrl_one_wrong_value_is_partial() -> None:
    pred = {"name": "get_weather", "parameters": {"city": "Paris", "unit": "F"}}
    # S = 1 (names) + 1 (keys) + 1 (equal values) = 3, S_max = 1 + (1 + 2) = 4 -> 6 * 3/4 - 3
    assert score("toolrl", answer(pred), gt_text(WEATHER)).components["correctness"] == pytest.approx(1.5)


def test_toolrl_a_missing_call_is_partial() -> None:
    # names 1/2, WEATHER matched (1 + 2), TIME unmatched: S = 3.5, S_max = 1 + 3 + 2 = 6
    result = score("toolrl", answer(WEATHER), gt_text(WEATHER, TIME))
    assert result.components["correctness"] == pytest.approx(6 * 3.5 / 6 - 3)


def test_toolrl_duplicated_call_is_not_exact() -> None:
    # names [w] vs [w, w] = 1/2; the best unused duplicate matches fully: S = 3.5, S_max = 4
    result = score("toolrl", answer(WEATHER, WEATHER), gt_text(WEATHER))
    assert result.components["correctness"] == pytest.approx(6 * 3.5 / 4 - 3)
    assert not result.correct


def test_toolrl_call_order_matters_only_for_the_exact_shortcut() -> None:
    # Same calls, other order: not rlla.py's exact match, but every part scores: S = S_max.
    result = score("toolrl", answer(TIME, WEATHER), gt_text(WEATHER, TIME))
    assert result.components["correctness"] == pytest.approx(3.0)
    assert not result.correct


def test_toolrl_wrong_tool_name_scores_the_minimum_share() -> None:
    pred = {"name": "get_news", "parameters": {"city": "Paris", "unit": "C"}}
    assert score("toolrl", answer(pred), gt_text(WEATHER)).components["correctness"] == pytest.approx(-3.0)


def test_toolrl_malformed_json_is_the_minimum() -> None:
    result = score("toolrl", answer('{"name": "get_weather", "parameters": {'), gt_text(WEATHER))
    assert result.components["correctness"] == -3.0


def test_toolrl_call_without_parameters_is_the_minimum() -> None:
    assert score("toolrl", answer({"name": "get_weather"}), gt_text(WEATHER)).components["correctness"] == -3.0


def test_toolrl_call_that_is_not_an_object_is_the_minimum() -> None:
    assert score("toolrl", answer("[1, 2]"), gt_text(WEATHER)).components["correctness"] == -3.0


def test_toolrl_missing_tool_call_is_the_minimum() -> None:
    result = score("toolrl", "<think>no</think>\n<response>hi</response>", gt_text(WEATHER))
    assert result.components == {"format": 0.0, "correctness": -3.0}


def test_toolrl_no_call_in_ground_truth_scores_correctness_zero() -> None:
    result = score("toolrl", "<think>chat</think>\n<response>Hello!</response>", gt_text(response="Hi"))
    assert result.components == {"format": 1.0, "correctness": 0.0}
    assert result.correct


def test_toolrl_ground_truth_as_a_list_of_calls() -> None:
    assert score("toolrl", answer(WEATHER), [WEATHER]).total == 4.0


def test_toolrl_list_ground_truth_accepts_arguments() -> None:
    gt = [{"name": "get_weather", "arguments": WEATHER["parameters"]}]
    assert score("toolrl", answer(WEATHER), gt).total == 4.0


def test_toolrl_empty_list_ground_truth_expects_a_reply() -> None:
    assert score("toolrl", "<think>x</think>\n<response>ok</response>", []).total == 1.0


def test_toolrl_malformed_ground_truth_is_an_error() -> None:
    with pytest.raises(ValueError):
        score("toolrl", answer(WEATHER), "<tool_call>\nnot json\n</tool_call>")


def test_toolrl_ground_truth_of_another_type_is_an_error() -> None:
    with pytest.raises(ValueError):
        score("toolrl", answer(WEATHER), 42)


# --- toolrl: format --------------------------------------------------------------------


def test_toolrl_format_needs_think_first() -> None:
    text = f"<tool_call>\n{json.dumps(WEATHER)}\n</tool_call>"
    assert score("toolrl", text, gt_text(WEATHER)).components["format"] == 0.0


def test_toolrl_format_rejects_a_second_tool_call_block() -> None:
    text = answer(WEATHER) + "\n<tool_call>\n{}\n</tool_call>"
    assert score("toolrl", text, gt_text(WEATHER)).components["format"] == 0.0


def test_toolrl_format_for_call_then_response() -> None:
    text = answer(WEATHER) + "\n<response>Checking.</response>"
    assert score("toolrl", text, gt_text(WEATHER, response="Checking.")).components["format"] == 1.0


def test_toolrl_format_call_only_shape_rejects_a_response() -> None:
    text = answer(WEATHER) + "\n<response>Checking.</response>"
    assert score("toolrl", text, gt_text(WEATHER)).components["format"] == 0.0


def test_toolrl_format_think_only() -> None:
    assert score("toolrl", "<think>nothing to do</think>", "<think>x</think>").components["format"] == 1.0


def test_toolrl_surrounding_whitespace_is_ignored() -> None:
    assert score("toolrl", "\n " + answer(WEATHER) + "\n", gt_text(WEATHER)).total == 4.0


# --- toolrl: schedules -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (0, ((-2.0, 2.0), (-2.0, 2.0))),
        (75, ((-1.0, 1.5), (-2.5, 2.5))),
        (150, ((-1.0, 1.0), (-3.0, 3.0))),
        (300, ((-1.0, 1.0), (-3.0, 3.0))),
    ],
)
def test_toolrl_scheduled_bounds(step: int, expected: tuple) -> None:
    assert sum(bounds("scheduled", step), ()) == pytest.approx(sum(expected, ()))


@pytest.mark.parametrize(
    ("step", "expected"),
    [(0, ((0.0, 1.0), (-1.0, 1.0))), (29, ((0.0, 1.0), (-1.0, 1.0))), (30, ((0.0, 0.5), (-3.0, 3.0)))],
)
def test_toolrl_max1_step30_max3_bounds(step: int, expected: tuple) -> None:
    assert sum(bounds("max1_step30_max3", step), ()) == pytest.approx(sum(expected, ()))


def test_toolrl_constant_bounds() -> None:
    assert bounds("constant", 1000) == ((0.0, 1.0), (-3.0, 3.0))


def test_toolrl_schedule_applies_at_the_given_step_plus_one() -> None:
    # tirlab's step 149 is ToolRL's step 150, where the schedule reaches format [-1, 1], correctness [-3, 3].
    group = ["garbage", answer(WEATHER)]
    results = score_group("toolrl", group, gt_text(WEATHER), params={"schedule": "scheduled"}, step=149)
    assert [r.total for r in results] == pytest.approx([-1.0 - 3.0, 1.0 + 3.0])


# --- tool_n1 ---------------------------------------------------------------------------

N1_GT = json.dumps([{"name": "search", "arguments": {"q": "rl", "n": 3}}, {"name": "open", "arguments": {}}])


def n1(calls: str, think: bool = True) -> str:
    return ("<think>plan</think>\n" if think else "") + f"<tool_call>{calls}</tool_call>"


def test_tool_n1_exact_calls_score_one() -> None:
    pred = '[{"name": "search", "arguments": {"q": "rl", "n": 3}}, {"name": "open", "arguments": {}}]'
    assert score("tool_n1", n1(pred), N1_GT).total == 1.0


def test_tool_n1_order_of_calls_and_keys_does_not_matter() -> None:
    pred = '[{"arguments": {}, "name": "open"}, {"name": "search", "arguments": {"n": 3, "q": "rl"}}]'
    assert score("tool_n1", n1(pred), N1_GT).correct


def test_tool_n1_wrong_value_scores_zero() -> None:
    pred = '[{"name": "search", "arguments": {"q": "rl", "n": "3"}}, {"name": "open", "arguments": {}}]'
    assert score("tool_n1", n1(pred), N1_GT).total == 0.0


def test_tool_n1_duplicated_call_scores_zero() -> None:
    gt = json.dumps([{"name": "open", "arguments": {}}])
    assert score("tool_n1", n1('[{"name": "open", "arguments": {}}, {"name": "open", "arguments": {}}]'), gt).total == 0


def test_tool_n1_single_object_counts_as_one_call() -> None:
    gt = json.dumps([{"name": "open", "arguments": {}}])
    assert score("tool_n1", n1('{"name": "open", "arguments": {}}'), gt).total == 1.0


def test_tool_n1_needs_think_tags() -> None:
    result = score("tool_n1", n1('{"name": "open", "arguments": {}}', think=False), [{"name": "open", "arguments": {}}])
    assert result.components == {"format": 0.0, "match": 0.0}


def test_tool_n1_malformed_json_scores_zero() -> None:
    assert score("tool_n1", n1('[{"name": "open",'), N1_GT).total == 0.0


def test_tool_n1_call_without_arguments_scores_zero() -> None:
    assert score("tool_n1", n1('[{"name": "open"}]'), [{"name": "open"}]).total == 0.0


def test_tool_n1_last_block_counts() -> None:
    gt = [{"name": "open", "arguments": {}}]
    text = n1('[{"name": "x", "arguments": {}}]') + '\n<tool_call>[{"name": "open", "arguments": {}}]</tool_call>'
    assert score("tool_n1", text, gt).total == 1.0


def test_tool_n1_no_call_truth_matched_by_an_empty_list() -> None:
    assert score("tool_n1", n1("[]"), "[]").total == 1.0


def test_tool_n1_no_call_truth_needs_the_empty_list_said() -> None:
    assert score("tool_n1", "<think>nothing</think> I can answer directly.", "[]").total == 0.0


def test_tool_n1_calls_when_none_expected_scores_zero() -> None:
    assert score("tool_n1", n1('[{"name": "open", "arguments": {}}]'), "[]").total == 0.0


def test_tool_n1_unhashable_name_scores_zero() -> None:
    gt = [{"name": "open", "arguments": {}}]
    assert score("tool_n1", n1('[{"name": ["open"], "arguments": {}}]'), gt).total == 0.0


def test_tool_n1_ground_truth_must_be_calls() -> None:
    with pytest.raises(ValueError):
        score("tool_n1", n1("[]"), "3")


def test_tool_n1_scores_toolrls_text_ground_truth_by_the_calls_it_holds() -> None:
    # rlla_4k's ground truth is ToolRL's text; Tool-N1's reward on that data compares its calls.
    truth = gt_text(WEATHER, TIME)
    calls = [{"name": c["name"], "arguments": c["parameters"]} for c in (TIME, WEATHER)]
    assert score("tool_n1", n1(json.dumps(calls)), truth).total == 1.0
    assert score("tool_n1", n1(json.dumps(calls[:1])), truth).total == 0.0
    # A reply is a ground truth of no call, matched only by the empty list said.
    assert score("tool_n1", n1("[]"), gt_text(response="I cannot.")).total == 1.0
    with pytest.raises(ValueError, match="does not parse"):
        score("tool_n1", n1("[]"), "<tool_call>\nnot json\n</tool_call>")
