"""The swe environment's tools read as SkyRL-v0's do: OHEditor 0.2.5's texts (openhands_aci/editor/editor.py
@0.2.5), the command observation of SkyRL-OpenHands @6f3ba323 (openhands/events/observation/commands.py:156-164,
openhands/runtime/utils/bash.py:338-341), the converter's wrapper and refusals (openhands/llm/fn_call_converter.py)
and SkyRL's no-call reply (verl/workers/agentic/codeact.py:217-250). docs/swe_sources.md cites each."""

import asyncio

import pytest

from sandbox import SandboxPool
from trainer.envs import CallContext
from trainer.envs.swe import observations
from trainer.envs.swe.bash import execute_bash
from trainer.envs.swe.editor import str_replace_editor
from trainer.envs.swe.stuck import is_stuck
from trainer.envs.swe.workspace import Workspace

ROOT = "/workspace/repo"
F = f"{ROOT}/f.py"
# Ten lines, so an edit past line 4 shows OHEditor's snippet window and its label.
SOURCE = "".join(f"x{i} = {i}\n" for i in range(1, 11))


def ws(text: str = SOURCE) -> Workspace:
    return Workspace.from_files({"f.py": text, "pkg/util.py": "pass\n", ".hidden": "x\n"}, root=ROOT)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(size=2) as pool:
        yield pool


def bash(pool: SandboxPool, workspace: Workspace, command: str, **kw):
    context = CallContext(run_code=pool.arun, timeout_s=kw.pop("timeout_s", 10.0))
    return asyncio.run(execute_bash(workspace, command, context=context, **kw))


# --- str_replace_editor ----------------------------------------------------------------------------------------


def test_view_numbers_lines_as_cat_n_and_the_final_newline_as_an_empty_line():
    text = str_replace_editor(ws("a\n\tb\n"), command="view", path=F).text
    assert text == f"Here's the result of running `cat -n` on {F}:\n     1\ta\n     2\t        b\n     3\t\n"


def test_view_range_reads_inclusive_lines():
    text = str_replace_editor(ws(), command="view", path=F, view_range="[2, 3]").text
    assert text == f"Here's the result of running `cat -n` on {F}:\n     2\tx2 = 2\n     3\tx3 = 3\n     4\t\n"


def test_view_range_past_the_end_is_refused():
    result = str_replace_editor(ws(), command="view", path=F, view_range="[1, 11]")
    assert result.error
    assert result.text == (
        "ERROR:\nInvalid `view_range` parameter: [1, 11]. Its second element `11` should be smaller than the number "
        "of lines in the file: `10`."
    )


def test_view_of_a_directory_lists_two_levels_and_counts_hidden_entries():
    assert str_replace_editor(ws(), command="view", path=ROOT).text == (
        f"Here's the files and directories up to 2 levels deep in {ROOT}, excluding hidden items:\n"
        f"{ROOT}/\n{ROOT}/f.py\n{ROOT}/pkg/\n{ROOT}/pkg/util.py\n\n"
        f"1 hidden files/directories in this directory are excluded. You can use 'ls -la {ROOT}' to see them."
    )


def test_create_then_create_again_is_refused():
    workspace = ws()
    assert str_replace_editor(workspace, command="create", path=f"{ROOT}/g.py", file_text="y = 1\n").text == (
        f"File created successfully at: {ROOT}/g.py"
    )
    assert workspace.files["g.py"] == "y = 1\n"
    assert str_replace_editor(workspace, command="create", path=f"{ROOT}/g.py", file_text="").text == (
        f"ERROR:\nInvalid `path` parameter: {ROOT}/g.py. File already exists at: {ROOT}/g.py. Cannot overwrite "
        "files using command `create`."
    )


def test_str_replace_shows_the_snippet_labelled_as_ohéditor_0_2_5_labels_it():
    workspace = ws()
    text = str_replace_editor(workspace, command="str_replace", path=F, old_str="x7 = 7", new_str="x7 = 70").text
    # start_line = 7 - 4 = 3: lines 3..11 read, labelled from 4 (editor.py:170-179).
    shown = ["x3 = 3", "x4 = 4", "x5 = 5", "x6 = 6", "x7 = 70", "x8 = 8", "x9 = 9", "x10 = 10", ""]
    lines = "".join(f"{n:6}\t{body}\n" for n, body in enumerate(shown, start=4))
    assert text == (
        f"The file {F} has been edited. Here's the result of running `cat -n` on a snippet of {F}:\n{lines}"
        "Review the changes and make sure they are as expected. Edit the file again if necessary."
    )
    assert "x7 = 70\n" in workspace.files["f.py"]


def test_str_replace_not_found_and_multiple_occurrences():
    assert str_replace_editor(ws(), command="str_replace", path=F, old_str="nope", new_str="y").text == (
        f"ERROR:\nNo replacement was performed, old_str `nope` did not appear verbatim in {F}."
    )
    assert str_replace_editor(ws(), command="str_replace", path=F, old_str="x1", new_str="y").text == (
        "ERROR:\nNo replacement was performed. Multiple occurrences of old_str `x1` in lines [1, 10]. "
        "Please ensure it is unique."
    )


def test_str_replace_with_the_same_text_is_refused():
    assert str_replace_editor(ws(), command="str_replace", path=F, old_str="x1 = 1", new_str="x1 = 1").text == (
        "ERROR:\nInvalid `new_str` parameter: x1 = 1. No replacement was performed. `new_str` and `old_str` must be "
        "different."
    )


def test_insert_and_undo_edit():
    workspace = ws("a\nb\n")
    text = str_replace_editor(workspace, command="insert", path=F, insert_line="1", new_str="new").text
    assert text == (
        f"The file {F} has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n"
        "     1\ta\n     2\tnew\n     3\tb\n     4\t\n"
        "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
        "Edit the file again if necessary."
    )
    assert workspace.files["f.py"] == "a\nnew\nb\n"
    assert str_replace_editor(workspace, command="undo_edit", path=F).text == (
        f"Last edit to {F} undone successfully. Here's the result of running `cat -n` on {F}:\n"
        "     1\ta\n     2\tb\n     3\t\n"
    )
    assert str_replace_editor(workspace, command="undo_edit", path=F).text == (
        f"ERROR:\nNo edit history found for {F}."
    )


def test_insert_line_out_of_range():
    assert str_replace_editor(ws("a\n"), command="insert", path=F, insert_line=5, new_str="x").text == (
        "ERROR:\nInvalid `insert_line` parameter: 5. It should be within the range of lines of the file: [0, 1]"
    )


def test_invalid_paths():
    assert str_replace_editor(ws(), command="view", path=f"{ROOT}/nope.py").text == (
        f"ERROR:\nInvalid `path` parameter: {ROOT}/nope.py. The path {ROOT}/nope.py does not exist. "
        "Please provide a valid path."
    )
    assert str_replace_editor(ws(), command="view", path="f.py").text == (
        "ERROR:\nInvalid `path` parameter: f.py. The path should be an absolute path, starting with `/`. "
        f"Maybe you meant {ROOT}/f.py?"
    )
    assert str_replace_editor(ws(), command="str_replace", path=f"{ROOT}/pkg", old_str="a", new_str="b").text == (
        f"ERROR:\nInvalid `path` parameter: {ROOT}/pkg. The path {ROOT}/pkg is a directory and only the `view` "
        "command can be used on directories."
    )


def test_missing_parameter():
    assert str_replace_editor(ws(), command="create", path=f"{ROOT}/g.py").text == (
        "ERROR:\nParameter `file_text` is required for command: create."
    )


# --- the converter and the fixed texts ------------------------------------------------------------------------


def test_a_tool_result_is_a_user_message_opening_execution_result():
    assert (
        observations.execution_result("str_replace_editor", "out") == "EXECUTION RESULT of [str_replace_editor]:\nout"
    )


def test_a_refused_call_is_an_error_observation():
    assert observations.format_error("grep") == (
        "Function 'grep' not found in available tools: ['execute_bash', 'finish', 'str_replace_editor']\n"
        "[Error occurred in processing last action]"
    )
    typed, error = observations.validate_call("str_replace_editor", {"command": "delete", "path": F})
    assert error == (
        "Parameter 'command' is expected to be one of ['view', 'create', 'str_replace', 'insert', 'undo_edit'].\n"
        "[Error occurred in processing last action]"
    )
    typed, error = observations.validate_call(
        "str_replace_editor", {"command": "view", "path": f" {F}\n", "view_range": "[1, 2]"}
    )
    assert error is None and typed == {"command": "view", "path": F, "view_range": [1, 2]}  # fmt: skip


def test_the_no_call_reply_adds_the_give_up_line_from_the_second_time():
    first = (
        "Please continue working on the task on whatever approach you think is suitable.\n"
        "If you think you have solved the task, please first send your answer to user through message and then "
        "finish the interaction.\nIMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
    )
    assert observations.no_call_message(0) == first
    assert (
        observations.no_call_message(1)
        == first + 'If you want to give up, use the "finish" tool to finish the interaction.\n'
    )


def test_a_long_observation_keeps_its_head_and_tail():
    text = observations.truncate_content("a" * 20_000 + "b" * 20_000)
    assert text == "a" * 15_000 + "\n[... Observation truncated due to length ...]\n" + "b" * 15_000


# --- the stuck detector ----------------------------------------------------------------------------------------


def test_stuck_after_four_identical_steps_not_three():
    step = ("<function=execute_bash>ls</function>", "ls 0", False)
    assert not is_stuck([step] * 3)
    assert is_stuck([step] * 4)


def test_stuck_after_three_identical_refused_calls_once_four_actions_were_taken():
    other, refused = ("a", "x", False), ("b", "error", True)
    assert not is_stuck([refused] * 3)
    assert is_stuck([other, refused, refused, refused])
    assert not is_stuck([other, refused, ("b", "error", False), refused])


# --- execute_bash ----------------------------------------------------------------------------------------------


def test_bash_observation_is_skyrl_v0s(pool):
    result = bash(pool, ws(), "echo hello; pwd; exit 3")
    python = result.text.split("[Python interpreter: ")[1].split("]")[0]
    assert result.text == (
        f"hello\n{ROOT}\n[The command completed with exit code 3.]\n[Current working directory: {ROOT}]\n"
        f"[Python interpreter: {python}]\n[Command finished with exit code 3]"
    )
    assert result.exit_code == 3 and result.status == "error"


def test_bash_edits_persist_in_the_workspace(pool):
    workspace = ws()
    bash(pool, workspace, "sed -i 's/x1 = 1/x1 = 100/' f.py && echo new > pkg/new.txt && rm pkg/util.py")
    assert workspace.files["f.py"].startswith("x1 = 100\n")
    assert workspace.files["pkg/new.txt"] == "new\n"
    assert "pkg/util.py" not in workspace.files


def test_bash_empty_command_and_input_get_openhands_replies_without_an_exit_code(pool):
    assert bash(pool, ws(), "  ").text == "ERROR: No previous running command to retrieve logs from."
    assert bash(pool, ws(), "y", is_input=True).text == "ERROR: No previous running command to interact with."
