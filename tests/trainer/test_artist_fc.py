"""ARTIST's function-calling protocol (artist_fc) and its state + function + format reward,
checked on worked examples computed by hand from the paper's formulas (arXiv 2505.01441 §3.2)."""

import json

import pytest

from trainer.protocols import PROTOCOL_NAMES, Feedback, Segment, get_protocol
from trainer.protocols.artist_fc import ArtistFc, parse_call_body
from trainer.rewards import REWARD_NAMES, score
from trainer.rewards.artist_fc import format_reward, json_equal, matched_calls
from trainer.rewards.base import REWARDS, registered
from trainer.trajectory import Completion, ToolExecution

FC = get_protocol("artist_fc")

BOOK = {"name": "book_table", "arguments": {"restaurant": "Luigi", "time": "19:00"}}
MAIL = {"name": "send_email", "arguments": {"to": "ann@example.com", "subject": "Dinner"}}
BOOKING = [{"restaurant": "Luigi", "time": "19:00", "confirmation": "C-1"}]
EMAILS = [{"to": "ann@example.com", "subject": "Dinner"}]
TRUTH = {"calls": [BOOK, MAIL], "state": {"table_bookings": BOOKING, "emails_sent": EMAILS}}


def turn(reasoning: str, calls: list[dict]) -> str:
    lines = "\n".join(json.dumps(c) for c in calls)
    return f"<reasoning>{reasoning}</reasoning>\n<tool>\n{lines}\n</tool>"


def run(turns: list[tuple[str, ToolExecution]], reply: str) -> Completion:
    """A finished multi-turn response: each turn stopped at </tool>, its result appended, then the reply."""
    text = ""
    for stopped, execution in turns:
        text = FC.append_output(text + stopped, execution)
    return Completion(text + reply, "artist_fc", tuple(e for _, e in turns))


def executed(output: str, state: dict | None) -> ToolExecution:
    return ToolExecution(call="", status="ok", output=output, state=state)


# --- protocol -------------------------------------------------------------------------------


def test_it_is_registered_and_stops_at_the_closing_tool_tag() -> None:
    assert "artist_fc" in PROTOCOL_NAMES and isinstance(FC, ArtistFc)
    assert FC.call_language == "json"
    assert FC.stop_strings(calls_made=0, budget=2) == ["</tool>"]
    assert FC.stop_strings(calls_made=2, budget=2) == []
    assert FC.stop_strings(calls_made=5, budget=None) == ["</tool>"]


def test_extract_call_is_the_last_tool_block_since_the_last_result() -> None:
    first = turn("book it", [BOOK])
    assert FC.extract_call(first) == json.dumps(BOOK)
    assert FC.extract_call(first[: -len("</tool>")]) == json.dumps(BOOK)  # vLLM drops the stop string
    done = FC.append_output(first, "ok")
    assert FC.extract_call(done) is None  # the executed call is not run again
    assert FC.extract_call(done + turn("mail", [MAIL])) == json.dumps(MAIL)
    assert FC.extract_call("<reasoning>no call</reasoning>") is None
    assert FC.extract_call("<tool>\n</tool>") is None
    assert FC.extract_call('<tool>\n```json\n{"name": "f"}\n```\n</tool>') == '{"name": "f"}'


def test_wrap_output_puts_the_result_in_tool_result_tags() -> None:
    assert FC.wrap_output("  42 \n") == "\n<tool_result>\n42\n</tool_result>\n"
    failed = ToolExecution(call="", status="error", output='{"name": "f", "error": "unknown tool"}')
    assert FC.wrap_output(failed) == '\n<tool_result>\n{"name": "f", "error": "unknown tool"}\n</tool_result>\n'
    assert FC.wrap_output("x" * 20, feedback=Feedback("tirlab", max_chars=10)) == (
        "\n<tool_result>\nxxxxx...xxxxx\n</tool_result>\n"
    )


def test_append_output_completes_the_marker() -> None:
    stopped = "<reasoning>r</reasoning>\n<tool>\n{}\n"
    expected = stopped + "</tool>\n<tool_result>\nok\n</tool_result>\n"
    assert FC.append_output(stopped, "ok") == expected
    assert FC.append_output(stopped + "</tool>", "ok") == expected


def test_the_result_block_is_tool_text_and_the_rest_is_model_text() -> None:
    call = turn("book it", [BOOK])
    text = FC.append_output(call, "booked") + "Booked."
    result = "\n<tool_result>\nbooked\n</tool_result>\n"
    assert FC.segments(text) == [Segment("model", call), Segment("tool", result), Segment("model", "Booked.")]
    assert FC.tool_texts(text) == [result]
    assert FC.model_text(text) == call + "Booked."
    assert FC.count_tool_calls(text) == 1
    # A result block the model writes itself past the real ones is its own text.
    assert FC.tool_spans(text + "\n" + call + result, tool_outputs=1) == FC.tool_spans(text)
    # Only a block right after </tool> is tool text.
    assert FC.tool_spans("I saw\n<tool_result>\nx\n</tool_result>\n") == []


def test_final_answer_is_the_model_text_after_its_last_result() -> None:
    text = FC.append_output(turn("book it", [BOOK]), "booked") + "\nYour table is booked.\n"
    assert FC.final_answer(text) == "Your table is booked."
    assert FC.final_answer(FC.append_output(turn("book it", [BOOK]), "booked")) is None
    assert FC.final_answer("  The answer.  ") == "The answer."
    # A result block the model wrote itself (beyond the executed ones) does not count as its answer.
    fake = FC.append_output(turn("a", [BOOK]), "real") + "<tool_result>\nfake\n</tool_result>\nDone."
    assert FC.final_answer(fake, tool_outputs=1) == "Done."


def test_call_parts_show_the_json_body_as_the_call() -> None:
    parts = [p.text for p in FC.call_parts(turn("r", [BOOK])) if p.kind == "call"]
    assert [p.strip() for p in parts] == [json.dumps(BOOK)]


def test_call_bodies_are_json_lines_or_one_list() -> None:
    assert parse_call_body(f"{json.dumps(BOOK)}\n\n{json.dumps(MAIL)}\n") == [BOOK, MAIL]
    assert parse_call_body(json.dumps([BOOK, MAIL])) == [BOOK, MAIL]
    assert parse_call_body(json.dumps(BOOK, indent=2)) == [BOOK]
    assert parse_call_body("not json") is None
    assert parse_call_body("  ") is None


def test_calls_are_every_blocks_calls_in_order() -> None:
    text = FC.append_output(turn("a", [BOOK]), "x") + turn("b", [MAIL, BOOK]) + "\n<tool>oops</tool>"
    assert FC.calls(text) == ([BOOK, MAIL, BOOK], 1)


# --- reward ---------------------------------------------------------------------------------


def test_the_reward_is_registered_with_its_protocol() -> None:
    assert "artist_fc" in REWARD_NAMES and "artist_fc" in REWARDS.names()
    assert registered("artist_fc").protocol == "artist_fc"


def test_all_right_scores_the_maximum_1_2() -> None:
    completion = run(
        [
            (turn("Book first.", [BOOK]), executed("booked", {"table_bookings": BOOKING})),
            (turn("Now the mail.", [MAIL]), executed("sent", {"table_bookings": BOOKING, "emails_sent": EMAILS})),
        ],
        "<reasoning>All done.</reasoning>\nBooked and mailed.",
    )
    result = score("artist_fc", completion, TRUTH)
    assert result.components == pytest.approx({"state": 0.5, "function": 0.5, "format": 0.2})
    assert result.total == pytest.approx(1.2)
    assert result.correct
    assert result.details["functions_matched"] == 2 and result.details["state_matched"] == 2


def test_half_the_calls_and_half_the_state_score_a_quarter_each() -> None:
    wrong_mail = {"name": "send_email", "arguments": {"to": "bob@example.com", "subject": "Dinner"}}
    state = {"table_bookings": BOOKING, "emails_sent": [{"to": "bob@example.com", "subject": "Dinner"}]}
    completion = run([(turn("Do both.", [BOOK, wrong_mail]), executed("ok", state))], "Done.")
    result = score("artist_fc", completion, TRUTH)
    # state 0.5 * 1/2, function 0.5 * 1/2, format 0.025 * 4 + 0.1 (one reasoning -> tool cycle).
    assert result.components == pytest.approx({"state": 0.25, "function": 0.25, "format": 0.2})
    assert result.total == pytest.approx(0.7)
    assert not result.correct
    assert (result.details["functions_matched"], result.details["functions_total"]) == (1, 2)
    assert (result.details["state_matched"], result.details["state_total"]) == (1, 2)


def test_missing_reasoning_tags_keep_half_the_relaxed_format_and_no_strict_bonus() -> None:
    body = "\n".join(json.dumps(c) for c in (BOOK, MAIL))
    state = {"table_bookings": BOOKING, "emails_sent": EMAILS}
    completion = run([(f"<tool>\n{body}\n</tool>", executed("ok", state))], "Done.")
    result = score("artist_fc", completion, TRUTH)
    assert result.components == pytest.approx({"state": 0.5, "function": 0.5, "format": 0.05})
    assert result.total == pytest.approx(1.05)
    assert result.correct  # the format does not decide correctness


def test_tool_before_reasoning_gets_no_strict_bonus() -> None:
    body = "\n".join(json.dumps(c) for c in (BOOK, MAIL))
    state = {"table_bookings": BOOKING, "emails_sent": EMAILS}
    completion = run([(f"<tool>\n{body}\n</tool>", executed("ok", state))], "<reasoning>done</reasoning>")
    result = score("artist_fc", completion, TRUTH)
    assert result.components["format"] == pytest.approx(0.1)
    assert result.total == pytest.approx(1.1)


def test_strict_format_rules() -> None:
    assert format_reward("<reasoning>a</reasoning><tool>x</tool>") == pytest.approx((0.1, 0.1))
    assert format_reward("<reasoning>a</reasoning>\n<tool>x</tool>\n<reasoning>b</reasoning>\n<tool>y</tool>\nok") == (
        pytest.approx((0.1, 0.1))
    )
    assert format_reward("<reasoning>a</reasoning><tool>x</tool><reasoning>done</reasoning>") == pytest.approx(
        (0.1, 0.1)
    )
    assert format_reward("<reasoning>a<tool>x</tool></reasoning>")[1] == 0.0  # nested
    assert format_reward("<reasoning>a</reasoning><tool>x</tool><tool>y</tool>")[1] == 0.0  # two calls, one reasoning
    assert format_reward("<reasoning>a</reasoning><tool>x</tool></tool>")[1] == 0.0  # stray closing tag
    assert format_reward("<reasoning>a</reasoning><tool>x")[0] == pytest.approx(0.075)
    assert format_reward("plain text") == (0.0, 0.0)


def test_ground_truth_may_be_json_text() -> None:
    completion = run(
        [(turn("Both.", [MAIL, BOOK]), executed("ok", {"emails_sent": EMAILS, "table_bookings": BOOKING}))], "Done."
    )
    assert score("artist_fc", completion, json.dumps(TRUTH)).total == pytest.approx(1.2)  # call order aside


def test_without_executions_the_final_state_is_empty() -> None:
    text = FC.append_output(turn("Both.", [BOOK, MAIL]), "ok") + "Done."
    result = score("artist_fc", text, TRUTH)  # plain text: no executions, so no state
    assert result.components == pytest.approx({"state": 0.0, "function": 0.5, "format": 0.2})
    assert not result.correct
    unstated = run([(turn("Both.", [BOOK, MAIL]), executed("ok", None))], "Done.")
    assert score("artist_fc", unstated, TRUTH).components["state"] == 0.0


def test_a_task_without_state_or_calls() -> None:
    nothing = {"calls": [], "state": {}}
    reply = score("artist_fc", "<reasoning>Nothing to do.</reasoning> Hello!", nothing)
    assert reply.components == pytest.approx({"state": 0.5, "function": 0.5, "format": 0.05})
    assert reply.correct
    busy = run([(turn("Book.", [BOOK]), executed("ok", {"table_bookings": BOOKING}))], "Done.")
    result = score("artist_fc", busy, nothing)
    assert result.components == pytest.approx({"state": 0.0, "function": 0.0, "format": 0.2})
    assert not result.correct


def test_extra_calls_cost_no_function_reward_but_are_not_correct() -> None:
    state = {"table_bookings": BOOKING, "emails_sent": EMAILS}
    completion = run([(turn("All.", [BOOK, MAIL, BOOK]), executed("ok", state))], "Done.")
    result = score("artist_fc", completion, TRUTH)
    assert result.components["function"] == pytest.approx(0.5)
    assert not result.correct and result.details["calls_made"] == 3


def test_calls_match_as_a_multiset_with_json_equal_arguments() -> None:
    assert matched_calls([BOOK, BOOK], [BOOK]) == 1
    assert matched_calls([BOOK], [BOOK, BOOK]) == 1
    reordered = {"name": "book_table", "arguments": {"time": "19:00", "restaurant": "Luigi"}}
    assert matched_calls([BOOK], [reordered]) == 1
    assert matched_calls([{"name": "f", "arguments": {"n": 5}}], [{"name": "f", "parameters": {"n": 5.0}}]) == 1
    assert matched_calls([{"name": "f", "arguments": {"n": 5}}], [{"name": "f", "arguments": {"n": "5"}}]) == 0
    assert matched_calls([{"name": "f", "arguments": {}}], [{"name": "f"}, "junk", 3]) == 1
    assert json_equal({"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]})
    assert not json_equal(True, 1) and not json_equal(None, 0) and not json_equal([1], [1, 2])


def test_a_bad_ground_truth_is_an_error() -> None:
    with pytest.raises(ValueError):
        score("artist_fc", "text", "not json")
    with pytest.raises(ValueError):
        score("artist_fc", "text", [BOOK])
