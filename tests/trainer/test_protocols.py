import pytest

from trainer.protocols import EMPTY_OUTPUT, PROTOCOL_NAMES, Feedback, Segment, get_protocol, truncate_output
from trainer.protocols.tool_call_json import parse_calls_lines, parse_calls_list
from trainer.trajectory import ToolExecution

PM = get_protocol("python_markdown")
RETOOL = get_protocol("retool")
ARTIST = get_protocol("artist")
TCJ = get_protocol("tool_call_json")

CODE = "Let me compute.\n```python\nprint(6 * 7)\n```\n"


def ok(output: str) -> ToolExecution:
    return ToolExecution(call="", status="ok", output=output)


def test_protocol_names() -> None:
    assert PROTOCOL_NAMES == (
        "artist",
        "artist_fc",
        "codeact",
        "codeact_mini",
        "python_markdown",
        "retool",
        "search_r1",
        "tool_call_json",
    )


def test_unknown_protocol_names_the_choices() -> None:
    with pytest.raises(ValueError, match="python_markdown"):
        get_protocol("nope")


# --- budget and stop strings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "marker"), [("python_markdown", "```output"), ("retool", "</code>"), ("artist", "</python>")]
)
def test_stop_at_the_tool_marker_while_budget_remains(name: str, marker: str) -> None:
    assert get_protocol(name).stop_strings(calls_made=1, budget=2) == [marker]


def test_no_tool_stop_once_the_budget_is_used() -> None:
    assert PM.stop_strings(calls_made=2, budget=2) == []


def test_zero_budget_never_stops_for_a_tool() -> None:
    assert PM.stop_strings(calls_made=0, budget=0) == []


def test_no_budget_means_no_limit() -> None:
    assert PM.stop_strings(calls_made=100, budget=None) == ["```output"]


def test_tool_call_json_never_stops_for_a_tool() -> None:
    assert TCJ.stop_strings(0, 5) == []


# --- output wrapping ---------------------------------------------------------------------


def test_output_under_256_chars_is_kept_whole() -> None:
    assert truncate_output("a" * 255) == "a" * 255


def test_output_of_256_chars_keeps_first_and_last_128() -> None:
    text = "a" * 128 + "b" * 128
    assert truncate_output(text) == "a" * 128 + "..." + "b" * 128


def test_long_output_keeps_its_ends() -> None:
    text = "start" + "x" * 1000 + "end"
    wrapped = truncate_output(text)
    assert wrapped.startswith("start") and wrapped.endswith("end") and len(wrapped) == 259


def test_max_chars_zero_disables_truncation() -> None:
    assert truncate_output("x" * 1000, 0) == "x" * 1000


def test_python_markdown_wraps_in_an_output_fence() -> None:
    assert PM.wrap_output(ok("42\n")) == "```output\n42\n```\n"


def test_error_shows_only_the_last_traceback_line() -> None:
    failed = ToolExecution(
        call="1/0",
        status="error",
        output='Traceback (most recent call last):\n  File "<stdin>", line 1\nZeroDivisionError: division by zero\n',
    )
    assert PM.wrap_output(failed) == "```output\nZeroDivisionError: division by zero\n```\n"


def test_plain_text_with_error_shows_its_last_line() -> None:
    assert PM.wrap_output("Traceback\nNameError: name 'x' is not defined") == (
        "```output\nNameError: name 'x' is not defined\n```\n"
    )


def test_timeout_without_output_says_so() -> None:
    wrapped = PM.wrap_output(ToolExecution(call="while True: pass", status="timeout"))
    assert "TimeoutError" in wrapped


def test_empty_output_shows_a_marker() -> None:
    assert PM.wrap_output(ok("")) == f"```output\n{EMPTY_OUTPUT}\n```\n"


def test_empty_marker_is_not_taken_for_an_error() -> None:
    assert "Error" not in EMPTY_OUTPUT


def test_wrap_output_truncates_with_max_chars() -> None:
    assert PM.wrap_output(ok("x" * 20), feedback=Feedback("tirlab", 10)) == "```output\nxxxxx...xxxxx\n```\n"


def test_retool_wraps_in_interpreter() -> None:
    assert RETOOL.wrap_output(ok("7")) == "<interpreter>\n7\n</interpreter>\n"


def test_artist_wraps_in_output() -> None:
    assert ARTIST.wrap_output(ok("7")) == "<output>\n7\n</output>\n"


def test_tool_call_json_wraps_results_in_a_tool_response_block_and_has_no_stop_marker() -> None:
    # Single step by default: nothing stops generation; the function_calling environment stops at call_end.
    assert TCJ.stop_marker is None and TCJ.stop_strings(0, 1) == [] and TCJ.call_end() == "</tool_call>"
    assert (
        TCJ.wrap_output('{"name": "f", "result": 1}')
        == '\n<tool_response>\n{"name": "f", "result": 1}\n</tool_response>\n'
    )


# --- extracting the call -----------------------------------------------------------------


def test_python_markdown_extracts_the_last_complete_block() -> None:
    text = "```python\nprint(1)\n```\nthen\n```python\nprint(2)\n```\n"
    assert PM.extract_call(text) == "print(2)\n"


def test_python_markdown_extracts_with_the_marker_kept_by_the_backend() -> None:
    assert PM.extract_call(CODE + "```output") == "print(6 * 7)\n"


def test_python_markdown_does_not_run_an_unclosed_block() -> None:
    assert PM.extract_call("```python\nprint(1)\n```\n```python\nprint(2)\n") is None


def test_python_markdown_does_not_rerun_code_before_an_output() -> None:
    text = PM.append_output(CODE, ok("42")) + "Now I know.\n"
    assert PM.extract_call(text) is None


def test_python_markdown_extracts_nothing_without_code() -> None:
    assert PM.extract_call("just words\n") is None


def test_retool_extracts_the_fenced_code_in_code_tags() -> None:
    assert RETOOL.extract_call("<code>\n```python\nx = 1\nprint(x)\n```\n") == "x = 1\nprint(x)\n"


def test_retool_extracts_unfenced_code() -> None:
    assert RETOOL.extract_call("<code>print(3)</code>") == "print(3)\n"


def test_retool_extracts_nothing_without_a_code_tag() -> None:
    assert RETOOL.extract_call("no code here") is None


def test_retool_does_not_run_an_unclosed_fence() -> None:
    assert RETOOL.extract_call("<code>```python\nprint(1)\n") is None


def test_artist_extracts_python_tag_content() -> None:
    assert ARTIST.extract_call("<think>hm</think><python>print(2)</python>") == "print(2)\n"


def test_artist_strips_a_fence_inside_the_tag() -> None:
    assert ARTIST.extract_call("<python>\n```python\nprint(2)\n```\n") == "print(2)\n"


def test_artist_extracts_nothing_without_a_python_tag() -> None:
    assert ARTIST.extract_call("<think>no</think>") is None


def test_tool_call_json_extracts_the_last_block() -> None:
    assert TCJ.extract_call('<tool_call>\n{"a": 1}\n</tool_call> <tool_call>[2]</tool_call>') == "[2]"


# --- appending and segments --------------------------------------------------------------


def test_append_output_adds_the_marker_a_backend_dropped() -> None:
    assert PM.append_output(CODE, ok("42")) == CODE + "```output\n42\n```\n"


def test_append_output_does_not_repeat_a_kept_marker() -> None:
    assert PM.append_output(CODE + "```output", ok("42")) == CODE + "```output\n42\n```\n"


def test_append_output_puts_the_marker_on_its_own_line() -> None:
    assert PM.append_output("```python\nprint(1)\n```", ok("1")) == "```python\nprint(1)\n```\n```output\n1\n```\n"


def test_retool_append_output_closes_the_code_tag() -> None:
    assert RETOOL.append_output("<code>print(1)", ok("1")) == "<code>print(1)</code><interpreter>\n1\n</interpreter>\n"


def test_append_output_refuses_a_protocol_without_execution() -> None:
    with pytest.raises(ValueError):
        TCJ.append_output("x", "y")


def test_segments_mask_the_tool_output_but_not_the_marker() -> None:
    text = PM.append_output(CODE, ok("42")) + r"So \boxed{42}."
    assert PM.segments(text) == [
        Segment("model", CODE + "```output"),
        Segment("tool", "\n42\n```\n"),
        Segment("model", r"So \boxed{42}."),
    ]


def test_segments_join_back_to_the_response() -> None:
    text = RETOOL.append_output("<code>print(1)", ok("1")) + "<answer>1</answer>"
    assert "".join(s.text for s in RETOOL.segments(text)) == text


def test_model_text_drops_tool_outputs() -> None:
    text = ARTIST.append_output("<python>print(1)", ok("1")) + "<answer>1</answer>"
    assert ARTIST.model_text(text) == "<python>print(1)</python><answer>1</answer>"


def test_output_blocks_past_the_real_executions_are_model_text() -> None:
    # After the budget the model may write an output fence itself; only the first is real.
    text = PM.append_output(CODE, ok("42")) + "```python\nprint(1)\n```\n```output\n99\n```\n"
    assert len(PM.tool_spans(text, tool_outputs=1)) == 1
    assert "99" in PM.model_text(text, tool_outputs=1)


def test_tool_call_json_is_all_model_text() -> None:
    assert TCJ.segments("<think>a</think>") == [Segment("model", "<think>a</think>")]


def test_count_tool_calls_counts_outputs() -> None:
    text = PM.append_output(PM.append_output(CODE, ok("1")) + CODE, ok("2"))
    assert PM.count_tool_calls(text) == 2


# --- final answers -----------------------------------------------------------------------


def test_final_answer_is_the_last_box_of_model_text() -> None:
    text = r"first \boxed{1}" + PM.append_output(CODE, ok("42")) + r"so \boxed{\frac{1}{2}}"
    assert PM.final_answer(text) == r"\frac{1}{2}"


def test_boxed_in_tool_output_is_never_the_answer() -> None:
    text = PM.append_output(CODE, ok(r"\boxed{42}"))
    assert PM.final_answer(text) is None


def test_retool_answer_in_answer_tag() -> None:
    assert RETOOL.final_answer(r"<answer>\boxed{7}</answer>") == "7"


def test_artist_answer_prefers_the_box_inside_answer() -> None:
    assert ARTIST.final_answer(r"<answer>The answer is \boxed{12}</answer>") == "12"


def test_artist_answer_without_a_box_is_the_tag_content() -> None:
    assert ARTIST.final_answer("<answer> 12 </answer>") == "12"


def test_artist_answer_in_tool_output_does_not_count() -> None:
    text = ARTIST.append_output("<python>print(s)", ok("<answer>5</answer>"))
    assert ARTIST.final_answer(text) is None


def test_tool_call_json_answer_is_the_response_content() -> None:
    assert TCJ.final_answer("<think>x</think>\n<response>Hello</response>") == "Hello"


# --- JSON calls --------------------------------------------------------------------------


def test_toolrl_layout_is_one_json_per_line() -> None:
    text = '<tool_call>\n{"name": "a", "parameters": {}}\n{"name": "b", "parameters": {"x": 1}}\n</tool_call>'
    assert parse_calls_lines(text) == [{"name": "a", "parameters": {}}, {"name": "b", "parameters": {"x": 1}}]


def test_toolrl_layout_with_a_bad_line_is_malformed() -> None:
    assert parse_calls_lines('<tool_call>\n{"name": "a"}\n{"name": \n</tool_call>') is None


def test_toolrl_layout_without_a_block_is_malformed() -> None:
    assert parse_calls_lines("<think>x</think>") is None


def test_n1_layout_is_a_json_list() -> None:
    assert parse_calls_list('<tool_call>[{"name": "a", "arguments": {}}]</tool_call>') == [
        {"name": "a", "arguments": {}}
    ]


def test_n1_layout_accepts_one_object() -> None:
    assert parse_calls_list('<tool_call>{"name": "a", "arguments": {}}</tool_call>') == [{"name": "a", "arguments": {}}]


def test_n1_layout_reads_the_last_block() -> None:
    text = '<tool_call>[{"name": "a", "arguments": {}}]</tool_call><tool_call>[]</tool_call>'
    assert parse_calls_list(text) == []


def test_n1_layout_with_malformed_json_is_malformed() -> None:
    assert parse_calls_list('<tool_call>[{"name": "a",</tool_call>') is None


def test_n1_layout_with_a_scalar_is_malformed() -> None:
    assert parse_calls_list("<tool_call>3</tool_call>") is None


def test_parse_calls_picks_the_layout() -> None:
    text = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>'
    assert TCJ.parse_calls(text, style="lines") == TCJ.parse_calls(text, style="list")


def test_tool_call_json_counts_calls() -> None:
    assert TCJ.count_tool_calls('<tool_call>[{"name": "a"}, {"name": "b"}]</tool_call>') == 2
    assert TCJ.count_tool_calls("<think>none</think>") == 0


# --- feedback styles -----------------------------------------------------------------------------


def test_an_unknown_feedback_style_names_the_choices() -> None:
    with pytest.raises(ValueError, match="torl, zerotir, retool, tirlab"):
        Feedback("nope")  # type: ignore[arg-type]


def test_zerotir_feedback_needs_a_token_counter() -> None:
    with pytest.raises(ValueError, match="count_tokens"):
        PM.wrap_output(ok("1"), feedback=Feedback("zerotir"))


def test_protocols_default_to_tirlab_feedback_the_cold_start_was_trained_on() -> None:
    # trainer.sft.train writes the tiny model's cold-start traces with the default.
    assert PM.append_output(CODE, ok("")) == PM.append_output(CODE, ok(""), feedback=Feedback("tirlab"))
    assert EMPTY_OUTPUT in PM.append_output(CODE, ok(""))


@pytest.mark.parametrize("name", [n for n in PROTOCOL_NAMES if get_protocol(n).call_end() is not None])
def test_a_tool_outputs_body_is_what_the_tool_printed(name: str) -> None:
    """What the rollouts page shows in an output's box: the output without the protocol's wrapper
    (python_markdown's closing fence included), the model's own text around it left out."""
    protocol = get_protocol(name)
    output = '{"x": 1}\n  indented line'
    text = f"Let me check.{protocol.call_end()}" + protocol.wrap_output(output) + "Done."
    (tool,) = [segment.text for segment in protocol.segments(text) if segment.kind == "tool"]
    assert protocol.output_body(tool) == output
    if protocol.output_opening:  # the opening that the model wrote ends its turn
        assert text.split(tool)[0].endswith(protocol.output_opening)
