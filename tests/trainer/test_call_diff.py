"""The call diff of the rollouts page: a completion's JSON calls against the ground truth's, call by
call and argument by argument, paired as the call metrics pair them."""

import json

import pytest

from trainer.contract import EXACT_MATCH, NAME_ACCURACY, PARAM_ACCURACY
from trainer.protocols.call_diff import ArgumentDiff, completion_diff
from trainer.protocols.calls import call_scores, ground_truth_calls

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
TIMER = {"name": "set_timer", "arguments": {"minutes": 5}}
REPLY = "<think>no tool does this</think>\n<response>Sure.</response>"


def n1(*calls: dict) -> str:
    """Tool-N1's layout: one JSON list in the block."""
    return f"<think>plan</think>\n<tool_call>{json.dumps(list(calls))}</tool_call>"


def toolrl(*calls: dict) -> str:
    """ToolRL's layout: one call per line, arguments as "parameters"."""
    lines = "\n".join(json.dumps({"name": c["name"], "parameters": c["arguments"]}) for c in calls)
    return f"<think>plan</think>\n<tool_call>\n{lines}\n</tool_call>"


def weather(**arguments) -> dict:
    return {"name": "get_weather", "arguments": arguments}


def statuses(diff) -> list[tuple[str, str]]:
    return [(call.expected or call.got, call.status) for call in diff.calls]


@pytest.mark.parametrize("layout", [n1, toolrl])
def test_the_right_calls_in_either_layout_and_any_order_match(layout) -> None:
    diff = completion_diff(layout(TIMER, WEATHER), [WEATHER, TIMER])
    assert diff.exact_match and not diff.format_error
    assert diff.differences == 0
    assert statuses(diff) == [("get_weather", "match"), ("set_timer", "match")]
    assert diff.calls[0].arguments == (
        ArgumentDiff("city", "match", '"Paris"', '"Paris"'),
        ArgumentDiff("unit", "match", '"celsius"', '"celsius"'),
    )
    assert (diff.expected_calls, diff.predicted_calls) == (2, 2)


def test_a_wrong_value_shows_what_was_expected_and_what_came() -> None:
    diff = completion_diff(n1(weather(city="Lima", unit="celsius")), [WEATHER])
    (call,) = diff.calls
    assert (call.status, call.label, call.expected, call.got) == (
        "differs",
        "arguments differ",
        "get_weather",
        "get_weather",
    )
    assert call.arguments[0] == ArgumentDiff("city", "wrong_value", '"Paris"', '"Lima"')
    assert call.arguments[0].label == "wrong value"
    assert call.arguments[1].status == "match"
    assert not diff.exact_match and diff.differences == 1


def test_a_missing_parameter_has_only_its_expected_value() -> None:
    (call,) = completion_diff(n1(weather(city="Paris")), [WEATHER]).calls
    assert call.status == "differs"
    assert call.arguments == (
        ArgumentDiff("city", "match", '"Paris"', '"Paris"'),
        ArgumentDiff("unit", "missing", '"celsius"', None),
    )
    assert call.arguments[1].label == "missing parameter"


def test_an_unexpected_parameter_comes_after_the_expected_ones() -> None:
    extra = {"name": "set_timer", "arguments": {"label": "tea", "minutes": 5}}
    (call,) = completion_diff(toolrl(extra), [TIMER]).calls
    assert call.arguments == (
        ArgumentDiff("minutes", "match", "5", "5"),
        ArgumentDiff("label", "unexpected", None, '"tea"'),
    )
    assert call.arguments[1].label == "unexpected parameter"
    assert call.differences == 1


def test_values_compare_as_json_values() -> None:
    truth = [{"name": "book", "arguments": {"guests": 2, "vegan": True, "where": {"city": "Zürich", "zip": "8001"}}}]
    reordered = {"name": "book", "arguments": {"where": {"zip": "8001", "city": "Zürich"}, "guests": "2", "vegan": 1}}
    (call,) = completion_diff(n1(reordered), truth).calls
    guests, vegan, where = call.arguments
    assert (guests.status, guests.expected, guests.got) == ("wrong_value", "2", '"2"')  # a string is not a number
    assert (vegan.status, vegan.expected, vegan.got) == ("wrong_value", "true", "1")  # nor is 1 true, as in Python
    assert where.status == "match"  # key order inside a value does not matter
    assert where.expected == '{"city": "Zürich", "zip": "8001"}'  # shown as written, not escaped


def test_a_call_left_out_is_a_missing_call_with_its_arguments() -> None:
    diff = completion_diff(n1(TIMER), [WEATHER, TIMER])
    assert statuses(diff) == [("get_weather", "missing_call"), ("set_timer", "match")]
    missing = diff.calls[0]
    assert (missing.expected, missing.got, missing.label) == ("get_weather", None, "missing call")
    assert [(a.key, a.expected, a.got) for a in missing.arguments] == [
        ("city", '"Paris"', None),
        ("unit", '"celsius"', None),
    ]
    assert diff.differences == 1


def test_an_extra_call_is_an_unexpected_call_listed_last() -> None:
    diff = completion_diff(n1(TIMER, WEATHER, TIMER), [TIMER, WEATHER])
    assert statuses(diff) == [("set_timer", "match"), ("get_weather", "match"), ("set_timer", "unexpected_call")]
    extra = diff.calls[2]
    assert (extra.expected, extra.got, extra.label) == (None, "set_timer", "unexpected call")
    assert extra.arguments == (ArgumentDiff("minutes", "unexpected", None, "5"),)
    assert not diff.exact_match and diff.differences == 1


def test_a_wrong_tool_name_is_paired_as_such_with_its_arguments_compared() -> None:
    other = {"name": "get_forecast", "arguments": {"city": "Paris", "unit": "fahrenheit"}}
    diff = completion_diff(n1(other), [WEATHER])
    (call,) = diff.calls
    assert (call.status, call.label, call.expected, call.got) == (
        "wrong_name",
        "wrong tool name",
        "get_weather",
        "get_forecast",
    )
    assert [a.status for a in call.arguments] == ["match", "wrong_value"]
    assert diff.differences == 2  # the name and the unit
    # The call metrics count it as a missing call and an unexpected one.
    assert call_scores(n1(other), [WEATHER])[NAME_ACCURACY] == 0.0


def test_a_wrong_name_pairs_only_what_no_name_paired() -> None:
    other = {"name": "get_forecast", "arguments": {"city": "Lima"}}
    diff = completion_diff(n1(TIMER, other, weather(city="Oslo")), [WEATHER, TIMER])
    assert statuses(diff) == [("get_weather", "differs"), ("set_timer", "match"), ("get_forecast", "unexpected_call")]
    diff = completion_diff(n1(other), [WEATHER, TIMER])
    assert statuses(diff) == [("get_weather", "wrong_name"), ("set_timer", "missing_call")]


def test_each_expected_call_pairs_with_the_call_of_its_name_that_has_most_of_its_arguments() -> None:
    # The right get_weather is paired although a wrong one came first; the wrong one is left over.
    diff = completion_diff(n1(weather(city="Lima", unit="celsius"), WEATHER), [WEATHER])
    assert statuses(diff) == [("get_weather", "match"), ("get_weather", "unexpected_call")]
    assert diff.calls[1].arguments[0] == ArgumentDiff("city", "unexpected", None, '"Lima"')
    # On a tie, the first made.
    diff = completion_diff(n1(weather(city="Lima"), weather(city="Oslo")), [weather(city="Paris")])
    assert diff.calls[0].arguments[0].got == '"Lima"'


def test_same_name_calls_in_another_order_pair_up_right() -> None:
    paris, tokyo = weather(city="Paris"), weather(city="Tokyo")
    diff = completion_diff(n1(tokyo, paris), [paris, tokyo])
    assert diff.exact_match and diff.differences == 0
    assert statuses(diff) == [("get_weather", "match"), ("get_weather", "match")]
    # And the call metrics agree: all of the parameters are right.
    assert call_scores(n1(tokyo, paris), [paris, tokyo])[PARAM_ACCURACY] == 1.0


def test_no_call_due_answered_by_a_reply_is_a_match() -> None:
    diff = completion_diff(REPLY, [])
    assert diff.calls == () and diff.exact_match and not diff.format_error
    assert diff.differences == 0 and (diff.expected_calls, diff.predicted_calls) == (0, 0)


def test_no_call_due_answered_by_calls_makes_each_an_unexpected_call() -> None:
    diff = completion_diff(n1(TIMER, WEATHER), [])
    assert statuses(diff) == [("set_timer", "unexpected_call"), ("get_weather", "unexpected_call")]
    assert not diff.exact_match and diff.differences == 2


def test_a_reply_where_a_call_is_due_misses_it() -> None:
    diff = completion_diff(REPLY, [TIMER])
    assert statuses(diff) == [("set_timer", "missing_call")]
    assert not diff.format_error and not diff.exact_match


@pytest.mark.parametrize(
    "text",
    [
        '<think>plan</think>\n<tool_call>[{"name": "set_timer", "arguments": {</tool_call>',  # bad JSON
        '<tool_call>[{"arguments": {"minutes": 5}}]</tool_call>',  # a call without a name
        '<tool_call>[{"name": "set_timer", "arguments": [5]}]</tool_call>',  # arguments not an object
        "<think>I would call set_timer</think>",  # neither a block nor a reply
    ],
)
def test_a_malformed_completion_is_a_format_error_that_misses_every_call(text) -> None:
    diff = completion_diff(text, [TIMER, WEATHER])
    assert diff.format_error and not diff.exact_match
    assert statuses(diff) == [("set_timer", "missing_call"), ("get_weather", "missing_call")]
    assert diff.predicted_calls == 0


def test_a_format_error_where_no_call_is_due_has_no_rows() -> None:
    diff = completion_diff("<think>hmm</think>", [])
    assert diff.format_error and diff.calls == () and not diff.exact_match


def test_toolrl_text_ground_truth_is_read_as_calls() -> None:
    truth = ground_truth_calls('<tool_call>\n{"name": "set_timer", "parameters": {"minutes": 10}}\n</tool_call>')
    (call,) = completion_diff(n1(TIMER), truth).calls
    assert call.arguments == (ArgumentDiff("minutes", "wrong_value", "10", "5"),)


def test_an_argument_less_call_matches_by_name() -> None:
    now = {"name": "get_time", "arguments": {}}
    diff = completion_diff(toolrl(now), [now])
    assert statuses(diff) == [("get_time", "match")] and diff.calls[0].arguments == ()


def _scores_from_diff(diff) -> tuple[float, float]:
    """Name and parameter accuracy as trainer.metrics.calls defines them, counted off the diff's rows."""
    paired = [c for c in diff.calls if c.status in ("match", "differs")]
    unpaired = [c for c in diff.calls if c.status in ("missing_call", "unexpected_call")]
    # A wrong name is a missing call and an unexpected one to the metrics.
    wrong_names = [c for c in diff.calls if c.status == "wrong_name"]
    biggest = max(diff.expected_calls, diff.predicted_calls)
    names = len(paired) / biggest if biggest else 1.0
    matched = sum(a.status == "match" for c in paired for a in c.arguments)
    total = (
        sum(
            max(sum(a.expected is not None for a in c.arguments), sum(a.got is not None for a in c.arguments))
            for c in paired
        )
        + sum(max(1, len(c.arguments)) for c in unpaired)
        + sum(
            max(1, sum(a.expected is not None for a in c.arguments))
            + max(1, sum(a.got is not None for a in c.arguments))
            for c in wrong_names
        )
    )
    return names, matched / total if total else 1.0


CASES = [
    (n1(WEATHER, TIMER), [TIMER, WEATHER]),
    (n1(weather(city="Lima", unit="celsius"), WEATHER), [WEATHER]),
    (n1(weather(city="Tokyo"), weather(city="Paris")), [weather(city="Paris"), weather(city="Tokyo")]),
    (toolrl({"name": "set_timer", "arguments": {"label": "tea"}}), [TIMER, WEATHER]),
    (n1({"name": "get_forecast", "arguments": {"city": "Paris"}}, TIMER), [WEATHER, TIMER]),
    (n1(TIMER), []),
    (REPLY, [WEATHER]),
    ("<tool_call>not json</tool_call>", [TIMER]),
]


@pytest.mark.parametrize(("text", "truth"), CASES)
def test_the_diff_counts_what_the_call_metrics_score(text, truth) -> None:
    diff = completion_diff(text, truth)
    scores = call_scores(text, truth)
    names, params = _scores_from_diff(diff)
    assert names == pytest.approx(scores[NAME_ACCURACY])
    assert params == pytest.approx(scores[PARAM_ACCURACY])
    assert diff.exact_match == (scores[EXACT_MATCH] == 1.0)
