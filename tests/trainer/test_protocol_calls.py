"""Protocol.call_parts: model text split into prose and tool-call bodies, for highlighting calls
(the rollouts page renders each protocol's calls with it)."""

import pytest

from trainer.protocols import PROTOCOL_NAMES, TextPart, get_protocol

PM = get_protocol("python_markdown")
RETOOL = get_protocol("retool")
ARTIST = get_protocol("artist")
TCJ = get_protocol("tool_call_json")

# One model turn per protocol, as the trainer stores it: stopped at the tool marker.
TURNS = {
    "python_markdown": "Let me compute.\n```python\nprint(6 * 7)\n```\n```output",
    "retool": "<think>multiply</think>\n<code>\n```python\nprint(6 * 7)\n```\n</code>",
    "artist": "<think>multiply</think>\n<python>\nprint(6 * 7)\n</python>",
    "tool_call_json": '<think>look it up</think>\n<tool_call>\n{"name": "mul", "parameters": {"a": 6}}\n</tool_call>',
    "artist_fc": '<reasoning>look it up</reasoning>\n<tool>\n{"name": "mul", "arguments": {"a": 6}}\n</tool>',
    "codeact": "Let me look.\n<function=execute_bash>\n<parameter=command>ls</parameter>\n</function",
    "codeact_mini": "<f=bash><p=cmd>ls</p></f>",
    "search_r1": "<think>who founded it</think>\n<search> who founded Zorblat </search>",
}

AWKWARD = [
    "",
    "no call at all",
    "```python\n",
    "<code></code>",
    "<python>\n```\n</python>",
    "<tool_call></tool_call>",
    "<script>alert(1)</script><code><img src=x onerror=1></code>",
    "```python\nx = '</code>'\n```\n<code>y</code>\n<python>z</python>\n<tool_call>[1]</tool_call>",
]


def calls(protocol, text: str) -> list[str]:
    return [part.text for part in protocol.call_parts(text) if part.kind == "call"]


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
@pytest.mark.parametrize("text", [*TURNS.values(), *AWKWARD])
def test_parts_join_back_to_the_text(name: str, text: str) -> None:
    parts = get_protocol(name).call_parts(text)
    assert "".join(part.text for part in parts) == text
    assert all(part.text for part in parts)


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
def test_the_call_shown_is_the_call_executed(name: str) -> None:
    protocol = get_protocol(name)
    assert [call.strip() for call in calls(protocol, TURNS[name])] == [protocol.extract_call(TURNS[name]).strip()]


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
def test_every_protocol_says_how_to_highlight_its_calls(name: str) -> None:
    # codeact's calls are text function blocks and search_r1's are search queries, shown unhighlighted.
    expected = {
        "tool_call_json": "json",
        "artist_fc": "json",
        "codeact": "text",
        "codeact_mini": "text",
        "search_r1": "text",
    }
    assert get_protocol(name).call_language == expected.get(name, "python")


def test_python_markdown_markers_stay_prose() -> None:
    assert PM.call_parts(TURNS["python_markdown"]) == [
        TextPart("prose", "Let me compute.\n```python\n"),
        TextPart("call", "print(6 * 7)\n"),
        TextPart("prose", "```\n```output"),
    ]


def test_python_markdown_opens_on_a_line_ending_with_the_fence_as_torl_does() -> None:
    assert calls(PM, "Compute it: ```python\nx = 1\n```\n") == ["x = 1\n"]


def test_python_markdown_other_fences_are_prose() -> None:
    assert calls(PM, '```json\n{"a": 1}\n```\n```output\n1\n```') == []


def test_retool_fence_inside_the_tag_stays_prose() -> None:
    assert RETOOL.call_parts(TURNS["retool"]) == [
        TextPart("prose", "<think>multiply</think>\n<code>\n```python\n"),
        TextPart("call", "print(6 * 7)\n"),
        TextPart("prose", "```\n</code>"),
    ]


def test_artist_python_tags_are_calls() -> None:
    assert ARTIST.call_parts("<think>hm</think><python>print(2)</python>") == [
        TextPart("prose", "<think>hm</think><python>"),
        TextPart("call", "print(2)"),
        TextPart("prose", "</python>"),
    ]


def test_tool_call_json_block_is_a_json_call() -> None:
    assert calls(TCJ, TURNS["tool_call_json"]) == ['{"name": "mul", "parameters": {"a": 6}}\n']


def test_the_closing_marker_starts_its_own_line_of_prose() -> None:
    # The call keeps its last newline, so the prose after a code block does not open on an empty line.
    assert ARTIST.call_parts("<python>\nx = 1\n</python>\n<answer>1</answer>")[-1] == TextPart(
        "prose", "</python>\n<answer>1</answer>"
    )


def test_each_call_of_a_turn_is_found() -> None:
    assert calls(ARTIST, "<python>a = 1</python> then <python>b = 2</python>") == ["a = 1", "b = 2"]


@pytest.mark.parametrize(
    ("name", "text", "call"),
    [
        ("python_markdown", "Start\n```python\nwhile True:", "while True:"),
        ("retool", "<code>```python\nwhile True:", "while True:"),
        ("artist", "<python>while True:", "while True:"),
        ("tool_call_json", '<tool_call>{"name": "f",', '{"name": "f",'),
    ],
)
def test_a_truncated_call_runs_to_the_end(name: str, text: str, call: str) -> None:
    assert calls(get_protocol(name), text) == [call]


def test_another_protocols_syntax_is_prose() -> None:
    assert calls(RETOOL, TURNS["artist"]) == []
    assert calls(ARTIST, TURNS["retool"]) == []
    assert calls(PM, TURNS["artist"]) == []
    assert calls(TCJ, TURNS["retool"]) == []
