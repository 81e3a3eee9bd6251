"""search_r1 against Search-R1's own string functions: for the same model output, the cut, the action, the
observation and the invalid-action text are byte-equal to what Search-R1's code produces, and the prompt is
byte-equal to its make_prefix.

The reference is Search-R1's code, copied verbatim into tests/trainer/_search_r1_reference.py."""

import pytest

from retrieval import passages_to_string as service_passages_to_string
from tests.trainer._search_r1_reference import (
    reference_cut,
    reference_execute_predictions,
    reference_make_prefix,
    reference_passages2string,
    reference_postprocess_predictions,
)
from trainer.protocols import PROTOCOL_NAMES, Segment, get_protocol
from trainer.protocols.prompts import apply_template
from trainer.protocols.search_r1 import INVALID_ACTION, action, cut, passages_to_string
from trainer.trajectory import Example, ToolExecution

SR1 = get_protocol("search_r1")

# --- the cases ---------------------------------------------------------------------------------------------

# One query's answer from /retrieve with return_scores, as Search-R1's trainer asks for it.
RESULTS = [
    {
        "document": {"id": "7", "contents": '"Quenby Marsh"\nQuenby Marsh founded Zorblat.\nShe was born in Ardle.'},
        "score": 3.1,
    },
    {"document": {"id": "9", "contents": '"Zorblat"\nZorblat is a harbour city.'}, "score": 2.0},
    {"document": {"id": "12", "contents": '"Empty"'}, "score": 0.5},
]

# Whole generated turns, as Search-R1's rollout sees them before cutting.
TURNS = {
    "search": "<think>I need the founder.</think>\n<search> who founded Zorblat </search>\n<information>made up",
    "answer": "<think>I know it.</think>\n<answer> Quenby Marsh </answer><|endoftext|>",
    "search then answer": "<search>Zorblat</search> then <answer>Marsh</answer>",
    "answer then search": "<answer>Marsh</answer> but also <search>Zorblat</search> more",
    "neither": "<think>I am not sure what to do.</think> Maybe Marsh.",
    "search after an unclosed answer": "<answer>Marsh <search>Zorblat</search>",
    "unclosed search": "<think>hm</think><search> who founded Zorblat",
    "unclosed answer": "<answer> Marsh",
    "mismatched tags": "<search>Zorblat</answer>",
    "whitespace": "<search>\n\t  who founded   Zorblat \n</search>",
    "empty search": "<search></search>",
    "multiple searches": "<search>first</search><search>second</search>",
    "multiple answers": "<answer> A </answer><answer>B</answer>",
    "nested tags": "<search> <answer>x</answer> </search>",
    "upper case": "<SEARCH>Zorblat</SEARCH>",
    "empty": "",
}


def stopped(turn: str) -> str:
    """The turn as tirlab's engines return it: stopped at the first stop string, which is kept in the text."""
    stops = [(turn.find(s), s) for s in SR1.stop_strings(0, None) if s in turn]
    if not stops:
        return turn
    at, stop = min(stops)
    return turn[: at + len(stop)]


@pytest.mark.parametrize("name", TURNS)
def test_the_cut_is_search_r1s(name: str) -> None:
    assert cut(TURNS[name]) == reference_cut([TURNS[name]])[0]


@pytest.mark.parametrize("name", TURNS)
def test_the_action_is_search_r1s(name: str) -> None:
    turn = reference_cut([TURNS[name]])[0]
    (kind,), (content,) = reference_postprocess_predictions([turn])
    assert action(turn) == (kind, content)


@pytest.mark.parametrize("name", TURNS)
def test_the_observation_is_search_r1s(name: str) -> None:
    """What follows the turn: the information block for a search, nothing for an answer, the invalid-action
    text otherwise; and the query searched for is the one Search-R1 sends."""
    turn = reference_cut([TURNS[name]])[0]
    kind, query = action(turn)
    results = [RESULTS] if kind == "search" else []
    (expected,), _, _, _, queries = reference_execute_predictions([turn], results, active_mask=[True])
    observation = {"search": SR1.information(RESULTS), "answer": ""}.get(kind or "", INVALID_ACTION)
    assert observation == expected
    assert ([SR1.extract_call(turn)] if kind == "search" else []) == queries


def test_a_search_observation_is_byte_for_byte_search_r1s() -> None:
    assert SR1.information(RESULTS) == (
        '\n\n<information>Doc 1(Title: "Quenby Marsh") Quenby Marsh founded Zorblat.\nShe was born in Ardle.\n'
        'Doc 2(Title: "Zorblat") Zorblat is a harbour city.\nDoc 3(Title: "Empty")</information>\n\n'
    )


def test_the_invalid_action_text_is_search_r1s() -> None:
    (expected,), *_ = reference_execute_predictions(["no action"], [], active_mask=[True])
    assert INVALID_ACTION == expected
    assert INVALID_ACTION.count("\n") == 2


def test_passages_are_written_as_search_r1_writes_them_scored_or_not() -> None:
    assert passages_to_string(RESULTS) == reference_passages2string(RESULTS)
    assert passages_to_string([item["document"] for item in RESULTS]) == reference_passages2string(RESULTS)
    assert passages_to_string([]) == ""


def test_the_trainer_and_the_retrieval_service_write_passages_alike() -> None:
    assert passages_to_string(RESULTS) == service_passages_to_string(RESULTS)


def test_no_results_are_an_empty_information_block() -> None:
    (expected,), *_ = reference_execute_predictions(["<search>q</search>"], [[]], active_mask=[True])
    assert SR1.information([]) == expected == "\n\n<information></information>\n\n"


# --- tirlab's stop strings against Search-R1's cut --------------------------------------------------------


def test_generation_stops_at_the_end_of_a_search_or_an_answer_whatever_the_budget() -> None:
    assert SR1.stop_strings(0, 2) == SR1.stop_strings(2, 2) == SR1.stop_strings(5, None) == ["</search>", "</answer>"]


# Turns that write `</answer>` before their first `</search>`: where stopping and cutting part (below).
ANSWER_FIRST = ("answer then search", "nested tags")


@pytest.mark.parametrize("name", [name for name in TURNS if name not in ANSWER_FIRST])
def test_a_stopped_turn_is_what_search_r1_keeps_of_the_whole_generation(name: str) -> None:
    assert stopped(TURNS[name]) == reference_cut([TURNS[name]])[0]


def test_an_answer_before_a_search_stops_at_the_answer_with_the_same_action() -> None:
    """Search-R1 cuts a whole generation after its first `</search>` even when `</answer>` came earlier;
    tirlab's engines stop at `</answer>`. The text after the answer is lost, the action is the same answer."""
    turn = TURNS["answer then search"]
    assert stopped(turn) == "<answer>Marsh</answer>" != reference_cut([turn])[0]
    assert action(stopped(turn)) == action(reference_cut([turn])[0]) == ("answer", "Marsh")


def test_an_answer_inside_an_open_search_is_answered_where_search_r1_searches_it() -> None:
    """The one case where stopping changes the action: Search-R1 reads the search that encloses the answer."""
    turn = TURNS["nested tags"]
    assert action(stopped(turn)) == ("answer", "x")
    assert action(reference_cut([turn])[0]) == ("search", "<answer>x</answer>")


# --- the protocol in a whole response ----------------------------------------------------------------------


def two_turns() -> str:
    searched = "<think>Who?</think>\n<search> who founded Zorblat </search>"
    text = SR1.append_output(searched, passages_to_string(RESULTS))
    return text + "<think>Marsh.</think>\n<answer> Quenby Marsh </answer>"


def test_the_call_is_the_query_of_the_turn_since_the_last_observation() -> None:
    text = two_turns().split("<think>Marsh")[0] + "<search>where was Quenby Marsh born</search>"
    assert SR1.extract_call(text) == "where was Quenby Marsh born"


def test_a_turn_that_answers_calls_nothing() -> None:
    assert SR1.extract_call("<answer>Marsh</answer>") is None
    assert SR1.extract_call("<search>not closed</answer>") is None


def test_the_first_search_of_a_turn_is_the_call() -> None:
    assert SR1.extract_call(TURNS["multiple searches"]) == "first"


def test_append_output_keeps_the_stop_string_and_adds_the_information_block() -> None:
    searched = "<search>q</search>"
    passages = "Doc 1(Title: T) x\n"
    assert SR1.append_output(searched, passages) == searched + "\n\n<information>Doc 1(Title: T) x</information>\n\n"
    assert SR1.append_output("<search>q", passages) == SR1.append_output(searched, passages)


def test_observations_are_tool_text_and_the_model_text_is_trained_on() -> None:
    text = two_turns() + INVALID_ACTION + "<answer>Marsh</answer>"
    assert SR1.segments(text) == [
        Segment("model", "<think>Who?</think>\n<search> who founded Zorblat </search>"),
        Segment("tool", SR1.information(RESULTS)),
        Segment("model", "<think>Marsh.</think>\n<answer> Quenby Marsh </answer>"),
        Segment("tool", INVALID_ACTION),
        Segment("model", "<answer>Marsh</answer>"),
    ]


def test_an_invalid_action_text_is_no_search() -> None:
    text = "I think." + INVALID_ACTION + "<search>q</search>" + SR1.wrap_output("Doc 1(Title: T) x")
    assert SR1.count_tool_calls(text) == 1
    # One execution (the search): the invalid-action text before it does not use it up.
    assert [s.kind for s in SR1.segments(text, tool_outputs=1)] == ["model", "tool", "model", "tool"]


def test_an_information_block_past_the_searches_made_is_model_text() -> None:
    text = "<search>q</search>" + SR1.wrap_output("real") + "<search>r</search>" + SR1.wrap_output("written")
    assert SR1.tool_texts(text, tool_outputs=1) == [SR1.wrap_output("real")]
    assert "written" in SR1.model_text(text, tool_outputs=1)


def test_the_final_answer_is_the_last_answer_of_the_models_text_stripped() -> None:
    assert SR1.final_answer(two_turns()) == "Quenby Marsh"
    assert SR1.final_answer(TURNS["multiple answers"]) == "B"
    assert SR1.final_answer("<search>q</search>") is None


def test_an_answer_in_the_passages_is_not_the_models() -> None:
    text = SR1.append_output("<search>q</search>", "Doc 1(Title: T) <answer>Wrong</answer>")
    assert SR1.final_answer(text) is None


def test_the_rollouts_page_shows_the_passages_without_the_wrapper() -> None:
    (tool,) = [s.text for s in SR1.segments(two_turns()) if s.kind == "tool"]
    assert SR1.output_body(tool) == passages_to_string(RESULTS).strip()
    assert SR1.output_body(INVALID_ACTION) == INVALID_ACTION.strip("\n")


def test_a_tool_output_carries_the_execution_it_reports() -> None:
    execution = ToolExecution(call="q", status="ok", output="Doc 1(Title: T) x\n")
    assert SR1.wrap_output(execution) == SR1.wrap_output("Doc 1(Title: T) x\n")


# --- the prompt --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["who founded Zorblat?", "what is {tools} in \\boxed{x}?", ""])
def test_the_prompt_is_search_r1s_make_prefix(question: str) -> None:
    example = Example(id="1", prompt=[{"role": "user", "content": question}], ground_truth="x", data_source="nq")
    assert apply_template(example, "search_r1") == [
        {"role": "user", "content": reference_make_prefix({"question": question}, "base")}
    ]


def test_search_r1_is_a_registered_protocol_with_its_template_by_default() -> None:
    example = Example(id="1", prompt=[{"role": "user", "content": "q?"}], ground_truth="x", data_source="nq")
    assert "search_r1" in PROTOCOL_NAMES
    assert apply_template(example, "search_r1", "search_r1") == apply_template(example, "search_r1")
