"""codeact (SkyRL-v0's text function calls) and codeact_mini (its compact spelling): reading calls, framing
observations, and splitting a response into model text and masked tool text."""

import pytest

from trainer.protocols import get_protocol
from trainer.protocols.codeact import EXECUTE_BASH, FINISH, STR_REPLACE_EDITOR, ParsedCall
from trainer.trajectory import ToolExecution

CODEACT = get_protocol("codeact")
MINI = get_protocol("codeact_mini")


def test_codeact_reads_skyrl_v0s_call_with_each_parameter_on_its_own_lines():
    text = (
        "Let me look.\n<function=str_replace_editor>\n<parameter=command>str_replace</parameter>\n"
        "<parameter=path>/workspace/repo/f.py</parameter>\n<parameter=old_str>\n    return a - b\n</parameter>\n"
        "<parameter=new_str>    return a + b</parameter>\n</function"
    )
    block = CODEACT.extract_call(text)
    assert block.startswith("<function=str_replace_editor>")
    assert CODEACT.parse_call(block) == ParsedCall(
        STR_REPLACE_EDITOR,
        {
            "command": "str_replace",
            "path": "/workspace/repo/f.py",
            "old_str": "    return a - b",
            "new_str": "    return a + b",
        },
    )


def test_the_mini_spelling_maps_to_skyrl_v0s_names():
    text = '<f=bash><p=cmd>python -c "import f;print(f.add(2, 3))"</p></f>'
    assert MINI.parse_call(MINI.extract_call(text)) == ParsedCall(
        EXECUTE_BASH, {"command": 'python -c "import f;print(f.add(2, 3))"'}
    )
    edit = "<f=edit><p=cmd>str_replace</p><p=path>f.py</p><p=old>a - b</p><p=new>a + b</p></f>"
    assert MINI.parse_call(edit) == ParsedCall(
        STR_REPLACE_EDITOR, {"command": "str_replace", "path": "f.py", "old_str": "a - b", "new_str": "a + b"}
    )
    assert MINI.parse_call("<f=finish></f>") == ParsedCall(FINISH, {})


def test_text_without_a_function_block_is_no_call():
    assert CODEACT.extract_call("I am done.") is None
    assert CODEACT.parse_call("<parameter=command>ls</parameter>") is None


@pytest.mark.parametrize("protocol", [CODEACT, MINI], ids=lambda p: p.name)
def test_observations_are_tool_text_and_the_calls_model_text(protocol):
    call = (
        "<function=execute_bash>\n<parameter=command>ls</parameter>\n</function"
        if protocol is CODEACT
        else "<f=bash><p=cmd>ls</p></f>"
    )
    response = protocol.append_output(call, ToolExecution(call=call, status="ok", output="f.py\n[exit 0]"))
    response = protocol.append_output(response + call, ToolExecution(call=call, status="ok", output="again"))
    segments = protocol.segments(response)
    assert [s.kind for s in segments] == ["model", "tool", "model", "tool"]
    assert [protocol.output_body(s.text) for s in segments if s.kind == "tool"] == ["f.py\n[exit 0]", "again"]
    # The model wrote the calls up to the stop string; codeact's completing ">" is the environment's, masked.
    assert protocol.model_text(response) == call * 2
    assert protocol.count_tool_calls(response) == 2


def test_codeact_frames_an_observation_as_the_next_chatml_user_turn():
    stopped = "<function=execute_bash>\n<parameter=command>ls</parameter>\n</function"
    text = CODEACT.append_output(stopped, ToolExecution(call="", status="ok", output="EXECUTION RESULT of [x]:\nok"))
    assert (
        text
        == stopped
        + ">"
        + "<|im_end|>\n<|im_start|>user\nEXECUTION RESULT of [x]:\nok<|im_end|>\n<|im_start|>assistant\n"
    )
    # vLLM leaves the stop string out of the text: the environment completes it.
    assert CODEACT.close_call(stopped[: -len("</function")]) == stopped + ">"
    assert CODEACT.output_body(CODEACT.tool_texts(text)[0]) == "EXECUTION RESULT of [x]:\nok"


def test_a_turn_without_a_call_is_answered_after_the_models_end_of_turn():
    # The model's <|im_end|> is its last generated token, which decoding leaves out of the text.
    text = "I think it is fixed." + CODEACT.wrap_no_call("Please continue.")
    assert text.endswith("\n<|im_start|>user\nPlease continue.<|im_end|>\n<|im_start|>assistant\n")
    assert [s.kind for s in CODEACT.segments(text)] == ["model", "tool"]
    assert MINI.wrap_no_call("Please continue.") == "<r>Please continue.</r>\n"
