"""Call metrics: exact match, name and parameter accuracy, format errors, case by case."""

import json

import pytest

from trainer.contract import EXACT_MATCH, FORMAT_ERROR_RATIO, NAME_ACCURACY, PARAM_ACCURACY, SEQUENCE_MATCH
from trainer.metrics.calls import call_metrics
from trainer.protocols.calls import call_scores, ground_truth_calls, predicted_calls

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
TIMER = {"name": "set_timer", "arguments": {"minutes": 5}}


def n1(*calls: dict) -> str:
    """Tool-N1's layout: one JSON list in the block."""
    return f"<think>plan</think>\n<tool_call>{json.dumps(list(calls))}</tool_call>"


def toolrl(*calls: dict) -> str:
    """ToolRL's layout: one call per line, arguments as "parameters"."""
    lines = "\n".join(json.dumps({"name": c["name"], "parameters": c["arguments"]}) for c in calls)
    return f"<think>plan</think>\n<tool_call>\n{lines}\n</tool_call>"


REPLY = "<think>no tool does this</think>\n<response>Sure.</response>"


@pytest.mark.parametrize("layout", [n1, toolrl])
def test_the_right_calls_in_either_layout_and_any_order_match_exactly(layout) -> None:
    scores = call_scores(layout(TIMER, WEATHER), [WEATHER, TIMER])
    assert scores == {EXACT_MATCH: 1.0, NAME_ACCURACY: 1.0, PARAM_ACCURACY: 1.0, FORMAT_ERROR_RATIO: 0.0}


def test_a_wrong_value_keeps_the_name_and_loses_one_parameter() -> None:
    wrong = {"name": "get_weather", "arguments": {"city": "Lima", "unit": "celsius"}}
    scores = call_scores(n1(wrong), [WEATHER])
    assert scores[EXACT_MATCH] == 0.0 and scores[NAME_ACCURACY] == 1.0 and scores[PARAM_ACCURACY] == 0.5


def test_a_missing_parameter_an_extra_one_and_a_missing_call_count_against_it() -> None:
    missing = {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert call_scores(n1(missing), [WEATHER])[PARAM_ACCURACY] == 0.5
    extra = {"name": "set_timer", "arguments": {"minutes": 5, "label": "tea"}}
    assert call_scores(n1(extra), [TIMER])[PARAM_ACCURACY] == 0.5
    # One of two calls: half the names; the missing call's two arguments are unmatched too.
    scores = call_scores(n1(TIMER), [WEATHER, TIMER])
    assert scores[NAME_ACCURACY] == 0.5 and scores[PARAM_ACCURACY] == pytest.approx(1 / 3)


def test_a_wrong_tool_scores_nothing_and_an_extra_call_halves_the_names() -> None:
    other = {"name": "send_email", "arguments": {"to": "Ana", "subject": "Lunch"}}
    assert call_scores(n1(other), [TIMER]) == {
        EXACT_MATCH: 0.0,
        NAME_ACCURACY: 0.0,
        PARAM_ACCURACY: 0.0,
        FORMAT_ERROR_RATIO: 0.0,
    }
    twice = call_scores(n1(TIMER, TIMER), [TIMER])
    assert twice[EXACT_MATCH] == 0.0 and twice[NAME_ACCURACY] == 0.5 and twice[PARAM_ACCURACY] == 0.5


def test_no_call_due_is_matched_by_a_reply_and_missed_by_a_call() -> None:
    assert call_scores(REPLY, [])[EXACT_MATCH] == 1.0
    assert call_scores(REPLY, [])[PARAM_ACCURACY] == 1.0
    scores = call_scores(n1(TIMER), [])
    assert scores[EXACT_MATCH] == 0.0 and scores[NAME_ACCURACY] == 0.0 and scores[PARAM_ACCURACY] == 0.0


@pytest.mark.parametrize(
    "text",
    [
        '<think>plan</think>\n<tool_call>[{"name": "set_timer", "arguments": {</tool_call>',  # bad JSON
        '<think>plan</think>\n<tool_call>[{"arguments": {}}]</tool_call>',  # no name
        '<think>plan</think>\n<tool_call>[{"name": "set_timer", "arguments": 5}]</tool_call>',
        "I would set a timer.",  # neither a call nor a reply
    ],
)
def test_what_neither_paper_can_read_is_a_format_error(text: str) -> None:
    assert predicted_calls(text) is None
    scores = call_scores(text, [TIMER])
    assert scores[FORMAT_ERROR_RATIO] == 1.0 and scores[EXACT_MATCH] == 0.0
    assert call_scores(text, [])[EXACT_MATCH] == 0.0  # not even where no call was due


def test_ground_truth_comes_as_calls_or_as_toolrl_text_and_anything_else_has_no_call_metrics() -> None:
    assert ground_truth_calls([{"name": "set_timer", "parameters": {"minutes": 5}}]) == [TIMER]
    assert ground_truth_calls(toolrl(TIMER)) == [TIMER]
    assert ground_truth_calls("<think>x</think>\n<response>hi</response>") == []
    assert ground_truth_calls("3901") is None and ground_truth_calls(None) is None


def test_step_metrics_average_over_completions_of_call_prompts_only() -> None:
    metrics = call_metrics(
        [([TIMER], [n1(TIMER), n1({"name": "set_timer", "arguments": {"minutes": 6}})]), ("3901", ["\\boxed{3901}"])],
        prefix="val/",
    )
    assert metrics == {
        "val/calls/exact_match": 0.5,
        "val/calls/name_accuracy": 1.0,
        "val/calls/param_accuracy": 0.5,
        "val/calls/format_error_ratio": 0.0,
    }
    assert call_metrics([("3901", ["\\boxed{3901}"])]) == {}


LOOKUP = {"name": "find_flight", "arguments": {"origin": "Oslo", "destination": "Lima", "date": "2026-03-14"}}
BOOK = {"name": "book_flight", "arguments": {"flight": "TL 345", "passengers": 2}}


def artist(*calls: dict) -> str:
    """ARTIST's multi-turn text as the model wrote it: a <reasoning> and a <tool> block per call."""
    return "".join(f"<reasoning></reasoning>\n<tool>\n{json.dumps(c)}\n</tool>" for c in calls) + "Booked."


def test_multi_turn_calls_are_read_from_every_tool_block_and_their_order_is_scored() -> None:
    truth = ground_truth_calls({"calls": [LOOKUP, BOOK], "state": {"flight_bookings": [BOOK["arguments"]]}})
    assert truth == [LOOKUP, BOOK]
    right = call_scores(artist(LOOKUP, BOOK), truth, "artist_fc")
    assert right == {
        EXACT_MATCH: 1.0,
        NAME_ACCURACY: 1.0,
        PARAM_ACCURACY: 1.0,
        FORMAT_ERROR_RATIO: 0.0,
        SEQUENCE_MATCH: 1.0,
    }
    # Booked first and looked up after: the same calls (exact as a multiset), in the wrong order.
    backwards = call_scores(artist(BOOK, LOOKUP), truth, "artist_fc")
    assert backwards[EXACT_MATCH] == 1.0 and backwards[SEQUENCE_MATCH] == 0.0
    # Booked at once on a number of its own: the sequence is wrong, whatever it copied.
    made_up = {"name": "book_flight", "arguments": {"flight": "TL 999", "passengers": 2}}
    unsearched = call_scores(artist(made_up), truth, "artist_fc")
    assert unsearched[SEQUENCE_MATCH] == 0.0 and unsearched[NAME_ACCURACY] == 0.5
    # Looked up, then booked a number copied wrong: the sequence is right, the calls are not.
    miscopied = {"name": "book_flight", "arguments": {"flight": "TL 354", "passengers": 2}}
    copied = call_scores(artist(LOOKUP, miscopied), truth, "artist_fc")
    assert copied[SEQUENCE_MATCH] == 1.0 and copied[EXACT_MATCH] == 0.0
    # A block that does not parse is a format error and no sequence.
    broken = call_scores(artist(LOOKUP) + "<tool>\n{book\n</tool>", truth, "artist_fc")
    assert broken[FORMAT_ERROR_RATIO] == 1.0 and broken[SEQUENCE_MATCH] == 0.0


def test_the_sequence_metric_is_reported_for_multi_turn_runs_only() -> None:
    truth = {"calls": [LOOKUP, BOOK], "state": {}}
    multi = call_metrics([(truth, [artist(LOOKUP, BOOK), artist(BOOK)])], protocol="artist_fc")
    assert multi[SEQUENCE_MATCH] == 0.5 and multi[EXACT_MATCH] == 0.5
    assert SEQUENCE_MATCH not in call_metrics([([TIMER], [n1(TIMER)])])
