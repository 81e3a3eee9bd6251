"""The text fed back after a tool call, and the code a call runs, equal the papers' own code
(issue 13, items 4 and 9).

Each case runs real code in tirlab's sandbox through the rollout loop (driven by the scripted
engine of test_rollout), and its expected text was worked out by hand from the paper's code:
ToRL's GAIR-NLP/ToRL cb78cf1 verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py (`postproc`
:227-234, `postproc_observation` :308-325, the loop :300-350) on the response Sandbox Fusion
(bytedance/SandboxFusion 469de08) gives for the same run; ZeroTIR's yyht/openrlhf_async_pipline
d154c0a env/math/sandbox_utils.py:45-65 and env/math/math_tir_process_single_request.py:255-329;
ReTool's verl-recipe 48ea0a7 retool/retool.py:42-50 with verl v0.6.1 (d62da49)
verl/tools/sandbox_fusion_tools.py:184-189 and verl/experimental/agent_loop/tool_agent_loop.py:457-464.
"""

import pytest

from tests.trainer.test_rollout import ScriptedEngine
from trainer.config import ConfigError, validate_config
from trainer.models import CharTokenizer
from trainer.presets import preset_config
from trainer.protocols import get_protocol
from trainer.rollout.multi_turn import RolloutSettings, Trajectory, rollout

PROMPT = "Q\n"
TORL_EMPTY = "timeout_decorator.timeout_decorator.TimeoutError: 'Timed Out'"
ZEROTIR_TOO_LONG = "The output of the code execution is too long, please check your code."
RETOOL = get_protocol("retool")


@pytest.fixture(scope="module")
def tokenizer() -> CharTokenizer:
    return CharTokenizer()


def _trajectory(tokenizer: CharTokenizer, turns: list[str], **settings) -> Trajectory:
    engine = ScriptedEngine(tokenizer, {PROMPT: turns})
    settings.setdefault("max_response_tokens", 1024)  # room for the long outputs
    result = rollout(engine, [tokenizer.encode(PROMPT)], RolloutSettings(**settings))
    (trajectory,) = result.trajectories
    return trajectory


def _torl_output(tokenizer: CharTokenizer, code: str, **settings) -> str:
    """The text after one ```python block under ToRL's feedback, up to the next turn's "done"."""
    call = f"```python\n{code}\n```\n```output"
    text = _trajectory(tokenizer, [call, "done"], feedback="torl", **settings).completion.text
    assert text.startswith(call) and text.endswith("done")
    return text[len(call) : -len("done")]


# --- ToRL: the default ---------------------------------------------------------------------------


def test_torl_feedback_is_the_default() -> None:
    assert validate_config({}).tools.feedback == "torl"
    assert RolloutSettings().feedback == "torl"


def test_torl_a_program_that_prints_then_raises_shows_its_stdout(tokenizer):
    # Return code 1 with stdout "5\n": `postproc` returns (stdout, "Done") when the return code is 0
    # or stdout is not empty (:229-230), so the observation is "5\n" (:312-313), stripped (:321).
    assert _torl_output(tokenizer, "print(5)\n1/0") == "\n5\n```\n"


def test_torl_a_long_stdout_before_a_raise_is_cut_as_stdout(tokenizer):
    # As above, then 300 characters >= 256 keep the first and last 128 around "..." (:322-323).
    assert _torl_output(tokenizer, 'print("b" * 300)\n1/0') == "\n" + "b" * 128 + "..." + "b" * 128 + "\n```\n"


def test_torl_warnings_on_stderr_after_a_successful_run_are_not_shown(tokenizer):
    # Return code 0: (stdout, "Done"); stderr ("<string>:2: UserWarning: careful") is never read.
    code = 'import warnings\nwarnings.warn("careful")\nprint(3)'
    assert _torl_output(tokenizer, code) == "\n3\n```\n"


def test_torl_an_empty_output_reads_as_a_timeout(tokenizer):
    # Return code 0, stdout "": the observation "" becomes ToRL's TimeoutError text (:320).
    assert _torl_output(tokenizer, "x = 1") == f"\n{TORL_EMPTY}\n```\n"


def test_torl_a_killed_process_shows_what_it_printed(tokenizer):
    # Killed by a signal: Sandbox Fusion reports Finished with return code -9 and the stdout so far
    # (sandbox/runners/base.py:102-106), which is not empty: (stdout, "Done").
    code = 'import os\nprint("partial", flush=True)\nos.kill(os.getpid(), 9)'
    assert _torl_output(tokenizer, code) == "\npartial\n```\n"


def test_torl_a_killed_process_without_output_reads_as_a_timeout(tokenizer):
    # Return code -9, stdout "" and stderr "": the observation is stderr.strip() = "" (:232), then :320.
    assert _torl_output(tokenizer, "import os\nos.kill(os.getpid(), 9)") == f"\n{TORL_EMPTY}\n```\n"


def test_torl_a_timeout_is_an_unknown_error(tokenizer):
    # ToRL's client gives up after 10 s (:110), Sandbox Fusion's default run time: {"error": "unknown"}
    # (:114) has no run_result, so `postproc` answers ("Error", "UnknownError") (:233-234) and the
    # observation is "UnknownError" (:316, :319).
    output = _torl_output(tokenizer, "import time\ntime.sleep(5)", sandbox_timeout_s=0.5)
    assert output == "\nUnknownError\n```\n"


def test_torl_stdout_with_error_in_it_shows_its_last_line(tokenizer):
    # A successful run, but "Error" is in the observation: its last line only (:319).
    assert _torl_output(tokenizer, 'print("Error count: 2")\nprint("answer 5")') == "\nanswer 5\n```\n"


def test_torl_a_stop_without_a_complete_block_adds_nothing_and_uses_up_the_call(tokenizer):
    # No program (:102-105): not executed (:303-306); the response gets a newline (:333) and no
    # observation, and the round counts against the budget (:270-272), so with one call the second
    # turn is not stopped at ```output and its block is never run.
    second = "```python\nprint(1)\n```\n```output\n1\n```\ndone"
    trajectory = _trajectory(tokenizer, ["no code here ```output", second], feedback="torl", max_tool_calls=1)
    assert trajectory.completion.text == "no code here \n" + second
    assert trajectory.completion.executions == ()


def test_torl_a_whitespace_only_block_runs(tokenizer):
    # extract_program gives "   \n", not '' (:103-105): it is sent to the sandbox, exits 0 with no
    # output, and the empty observation becomes the TimeoutError text (:320).
    trajectory = _trajectory(tokenizer, ["```python\n   \n```\n```output", "done"], feedback="torl")
    assert trajectory.completion.text == f"```python\n   \n```\n```output\n{TORL_EMPTY}\n```\ndone"
    assert [(e.call, e.status) for e in trajectory.completion.executions] == [("   \n", "ok")]


# --- ZeroTIR -------------------------------------------------------------------------------------


def _zerotir_output(tokenizer: CharTokenizer, code: str, **settings) -> str:
    call = f"```python\n{code}\n```\n```output"
    text = _trajectory(tokenizer, [call, "done"], feedback="zerotir", **settings).completion.text
    assert text.startswith(call) and text.endswith("done")
    return text[len(call) : -len("done")]


def test_zerotir_shows_stdout_as_printed(tokenizer):
    # Finished and Success: run_result's stdout, newline kept (sandbox_utils.py:53-55).
    assert _zerotir_output(tokenizer, "print(6 * 7)") == "\n42\n\n```\n"


def test_zerotir_replaces_an_output_over_256_tokens(tokenizer):
    # The count covers "\n```output\n" (11) + result + "\n```\n\n\n" (7) (:290-302); the tiny model's
    # tokenizer has one token per character. 237 x's and a newline make 256 tokens, kept; one more
    # is over 256 and the result is replaced by the message (:306-313).
    assert _zerotir_output(tokenizer, 'print("x" * 237)') == "\n" + "x" * 237 + "\n\n```\n"
    assert _zerotir_output(tokenizer, 'print("x" * 238)') == f"\n{ZEROTIR_TOO_LONG}\n```\n"


def test_zerotir_shows_a_failures_stderr_without_file_names(tokenizer):
    # Finished but Failed: stderr with 'File "...", ' removed and carets dropped (:56-59); the stdout
    # printed before the raise is not shown.
    expected = "Traceback (most recent call last):\n  line 2, in <module>\nZeroDivisionError: division by zero\n"
    assert _zerotir_output(tokenizer, "print(5)\n1/0") == f"\n{expected}\n```\n"


def test_zerotir_a_timeout_shows_the_run_status(tokenizer):
    # Not Finished: the run status itself (:60-61), TimeLimitExceeded (Sandbox Fusion runners/types.py:24).
    assert _zerotir_output(tokenizer, "import time\ntime.sleep(5)", sandbox_timeout_s=0.5) == (
        "\nTimeLimitExceeded\n```\n"
    )


def test_zerotir_a_whitespace_only_block_adds_nothing(tokenizer):
    # extract_code strips the block and keeps no empty one (extract_code.py:10-13): nothing runs and
    # nothing is appended (math_tir_process_single_request.py:255, :325-326).
    turns = ["```python\n   \n```\n```output", "done"]
    trajectory = _trajectory(tokenizer, turns, feedback="zerotir")
    assert trajectory.completion.text == "```python\n   \n```\ndone"
    assert trajectory.completion.executions == ()


def test_zerotir_feedback_refuses_a_character_cap() -> None:
    with pytest.raises(ConfigError) as error:
        validate_config({"tools": {"feedback": "zerotir", "output_max_chars": 100}})
    assert list(error.value.errors) == ["tools.output_max_chars"]


# --- ReTool: the code a call runs and what it feeds back -----------------------------------------


@pytest.mark.parametrize(
    ("code", "prepared"),
    [
        ("x = 6 * 7\nx\n", "x = 6 * 7\nprint(x)\n"),  # a bare name; the trailing "" line is skipped
        ("6 * 7", "print(6 * 7)"),  # an expression
        ("y = 3", "print(y = 3)"),  # an assignment is wrapped too (then fails: a bad keyword)
        ("print(1)\n", "print(1)\n"),  # a print call is left alone
        ("printx = 1", "printx = 1"),  # so is anything else starting with "print"
        ("pprint(x)", "print(pprint(x))"),
        ("for i in range(2):\n    i\n", "for i in range(2):\nprint(    i)\n"),  # indentation included
        ("x = 1\n# done", "x = 1\nprint(# done)"),  # a comment is a line like any other
        ("x\n   ", "x\nprint(   )"),  # a line of spaces is not "", so it is the last line
        ("", ""),  # no line but ""
    ],
)
def test_retool_prints_the_last_line_as_the_recipe_does(code: str, prepared: str) -> None:
    # retool.py:43-50: the last line that is not "" is wrapped unless it starts with "print".
    assert RETOOL.prepare_code(code) == prepared


def _retool_output(tokenizer: CharTokenizer, code: str, **settings) -> tuple[str, str]:
    call = f"<code>\n{code}\n</code>"
    trajectory = _trajectory(tokenizer, [call, "done"], protocol="retool", feedback="retool", **settings)
    text = trajectory.completion.text
    assert text.startswith(call) and text.endswith("done")
    return text[len(call) : -len("done")], trajectory.completion.executions[0].call


def test_retool_a_bare_last_line_is_printed(tokenizer):
    output, ran = _retool_output(tokenizer, "x = 6 * 7\nx")
    assert ran == "x = 6 * 7\nprint(x)\n"
    # Finished: stdout + stderr (sandbox_fusion_tools.py:184-187), not stripped.
    assert output == "<interpreter>\n42\n\n</interpreter>\n"


def test_retool_shows_stdout_and_stderr_of_a_failure(tokenizer):
    output, _ = _retool_output(tokenizer, "print(1)\n1/0")
    traceback = 'Traceback (most recent call last):\n  File "<string>", line 2, in <module>\n'
    assert output == f"<interpreter>\n1\n{traceback}ZeroDivisionError: division by zero\n\n</interpreter>\n"


def test_retool_a_timeout_has_no_stdout(tokenizer):
    # TimeLimitExceeded is not Finished: "no stdout here" (sandbox_fusion_tools.py:188-189).
    output, _ = _retool_output(tokenizer, "import time\ntime.sleep(5)", sandbox_timeout_s=0.5)
    assert output == "<interpreter>\nno stdout here\n</interpreter>\n"


def test_retool_a_long_output_is_cut_in_the_middle(tokenizer):
    # 301 characters > 256: the first and last 128 around "...(truncated)..." (tool_agent_loop.py:457-464).
    output, _ = _retool_output(tokenizer, 'print("y" * 300)')
    assert output == "<interpreter>\n" + "y" * 128 + "...(truncated)..." + "y" * 127 + "\n\n</interpreter>\n"


# --- the CPU quickstart keeps the text its cold start was trained on -----------------------------


@pytest.mark.parametrize("name", ["quickstart", "otc-mini", "skyrl-async", "artist-mini"])
def test_tiny_presets_keep_tirlab_feedback(name: str) -> None:
    assert preset_config(name).tools.feedback == "tirlab"
