"""`str_replace_editor`: OpenHands-ACI's file editor, which SkyRL-v0's agent calls, on a workspace's text.

SkyRL-v0 pins SkyRL-OpenHands @6f3ba323, whose lock pins openhands-aci 0.2.5 (poetry.lock:5917-5918); every text
and rule below is OHEditor's at that tag (All-Hands-AI/openhands-aci @0.2.5 = bb9493f,
openhands_aci/editor/editor.py, lines cited beside each), quirks included, so a model trained here reads what it
would read in SkyRL-v0's runtime: the `cat -n` view numbers a file's final newline as one more empty line, and an
edit's snippet is labelled one line later than it starts once the edit is past line 4 (editor.py:170-179,
357-376). The runtime reports a ToolError as `ERROR:` and its message
(SkyRL-OpenHands openhands/runtime/action_execution_server.py:124-125).

The edit happens on the trajectory's copy of the repository in the trainer (trainer.envs.swe.workspace): nothing is
written to disk and no model text runs. Not kept: linting (off in SkyRL-v0: action_execution_server.py:445) and
the binary/size checks (the repositories here are text).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from trainer.envs.swe.workspace import Workspace

# openhands_aci/editor/config.py:1-2 @0.2.5.
SNIPPET_CONTEXT_WINDOW = 4
MAX_RESPONSE_LEN_CHAR = 16_000
COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")  # editor.py:24-32
TOOL_NAME = "oh_editor"  # editor.py:47, named in its unrecognised-command error
# openhands_aci/editor/prompts.py:3 @0.2.5.
FILE_CONTENT_TRUNCATED_NOTICE = (
    "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. You should "
    "retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what "
    "you are looking for.</NOTE>"
)


@dataclass(frozen=True)
class EditorResult:
    """The observation's body (without the `EXECUTION RESULT of [str_replace_editor]:` line) and whether the
    editor refused or failed the call."""

    text: str
    error: bool = False


class _ToolError(Exception):
    pass


def _invalid(parameter: str, value: object, hint: str) -> _ToolError:
    # EditorToolParameterInvalidError (openhands_aci/editor/exceptions.py:24-34 @0.2.5).
    return _ToolError(f"Invalid `{parameter}` parameter: {value}. {hint}")


def _missing(command: str, parameter: str) -> _ToolError:
    # EditorToolParameterMissingError (exceptions.py:14-21).
    return _ToolError(f"Parameter `{parameter}` is required for command: {command}.")


def numbered(text: str, description: str, start_line: int = 1) -> str:
    """OHEditor._make_output (editor.py:509-535): truncated at 16,000 characters, tabs expanded, `cat -n`
    numbering 6 wide and a tab -- a text ending in a newline gets one more, empty, numbered line."""
    if len(text) > MAX_RESPONSE_LEN_CHAR:  # results.py:37-49
        text = text[:MAX_RESPONSE_LEN_CHAR] + FILE_CONTENT_TRUNCATED_NOTICE
    lines = "\n".join(f"{i + start_line:6}\t{line}" for i, line in enumerate(text.expandtabs().split("\n")))
    return f"Here's the result of running `cat -n` on {description}:\n{lines}\n"


def _lines(text: str) -> list[str]:
    """The file's lines as Python's text-mode file iteration yields them (universal newlines, kept ends), which is
    how OHEditor reads and counts (editor.py:113-118, 472-507)."""
    return io.StringIO(text, newline=None).readlines()


def _read(text: str, start_line: int, end_line: int) -> str:
    """OHEditor.read_file with a range (editor.py:488-497): lines start_line..end_line, 1-based, inclusive."""
    return "".join(line for i, line in enumerate(_lines(text), 1) if start_line <= i <= end_line)


def str_replace_editor(
    workspace: Workspace,
    *,
    command: str | None = None,
    path: str | None = None,
    file_text: str | None = None,
    old_str: str | None = None,
    new_str: str | None = None,
    insert_line: str | int | None = None,
    view_range: str | list[int] | None = None,
) -> EditorResult:
    """Run one editor command; a refused or failed one comes back as the runtime reports a ToolError."""
    try:
        return EditorResult(_run(workspace, command, path, file_text, old_str, new_str, insert_line, view_range))
    except _ToolError as exc:
        return EditorResult(f"ERROR:\n{exc}", error=True)


def _run(
    ws: Workspace,
    command: str | None,
    path: str | None,
    file_text: str | None,
    old_str: str | None,
    new_str: str | None,
    insert_line: str | int | None,
    view_range: str | list[int] | None,
) -> str:
    if path is None:
        raise _missing(str(command), "path")
    shown = str(PurePosixPath(path.strip()))  # OHEditor works on Path(path) (editor.py:75)
    rel = _validate_path(ws, str(command), shown)
    if command == "view":
        return _view(ws, shown, rel, view_range)
    if command == "create":
        if file_text is None:
            raise _missing(command, "file_text")
        parent = rel.rpartition("/")[0]
        if parent and not ws.is_dir(parent):  # Path.write_text into a missing directory (editor.py:300-308)
            raise _ToolError(
                f"Ran into [Errno 2] No such file or directory: '{shown}' while trying to write to {shown}"
            )
        ws.files[rel] = file_text
        ws.remember(rel, file_text)
        return f"File created successfully at: {shown}"  # editor.py:79-89
    if command == "str_replace":
        if old_str is None:
            raise _missing(command, "old_str")
        if new_str == old_str:  # editor.py:93-98
            raise _invalid(
                "new_str", new_str, "No replacement was performed. `new_str` and `old_str` must be different."
            )
        return _str_replace(ws, shown, rel, old_str, new_str)
    if command == "insert":
        if insert_line is None:
            raise _missing(command, "insert_line")
        if new_str is None:
            raise _missing(command, "new_str")
        return _insert(ws, shown, rel, insert_line, new_str)
    if command == "undo_edit":
        return _undo(ws, shown, rel)
    raise _ToolError(  # editor.py:109-111
        f"Unrecognized command {command}. The allowed commands for the {TOOL_NAME} tool are: {', '.join(COMMANDS)}"
    )


def _validate_path(ws: Workspace, command: str, path: str) -> str:
    """OHEditor.validate_path (editor.py:392-422) on the workspace: its repository path. The mini's workspace
    (root "") takes relative paths, which OHEditor refuses."""
    if ws.root and not path.startswith("/"):
        raise _invalid(
            "path", path, f"The path should be an absolute path, starting with `/`. Maybe you meant {ws.root}/{path}?"
        )
    rel = ws.relative(path)
    exists = rel is not None and (rel in ws.files or ws.is_dir(rel))
    if command == "create" and exists:
        raise _invalid("path", path, f"File already exists at: {path}. Cannot overwrite files using command `create`.")
    if (command != "create" and not exists) or rel is None:
        raise _invalid("path", path, f"The path {path} does not exist. Please provide a valid path.")
    if command != "view" and rel not in ws.files and ws.is_dir(rel):
        raise _invalid(
            "path", path, f"The path {path} is a directory and only the `view` command can be used on directories."
        )
    return rel


def _view(ws: Workspace, path: str, rel: str, view_range: str | list[int] | None) -> str:
    if rel not in ws.files:
        return _view_directory(ws, path, rel, view_range)
    text = "".join(_lines(ws.files[rel]))
    if not view_range:
        return numbered(text, path)
    bounds = _view_range(view_range)
    num_lines = len(_lines(text))
    if len(bounds) != 2 or not all(isinstance(i, int) for i in bounds):  # editor.py:261-266
        raise _invalid("view_range", bounds, "It should be a list of two integers.")
    start, end = bounds
    if start < 1 or start > num_lines:  # editor.py:269-274
        raise _invalid(
            "view_range",
            bounds,
            f"Its first element `{start}` should be within the range of lines of the file: {[1, num_lines]}.",
        )
    if end > num_lines:  # editor.py:276-281
        raise _invalid(
            "view_range",
            bounds,
            f"Its second element `{end}` should be smaller than the number of lines in the file: `{num_lines}`.",
        )
    if end != -1 and end < start:  # editor.py:283-288
        raise _invalid(
            "view_range",
            bounds,
            f"Its second element `{end}` should be greater than or equal to the first element `{start}`.",
        )
    return numbered(_read(text, start, num_lines if end == -1 else end), path, start)


def _view_directory(ws: Workspace, path: str, rel: str, view_range: str | list[int] | None) -> str:
    """A directory (editor.py:200-246): `find -L PATH -maxdepth 2` without hidden entries, sorted, directories
    with a trailing slash, and a note counting the hidden entries directly inside."""
    if view_range:
        raise _invalid(
            "view_range", view_range, "The `view_range` parameter is not allowed when `path` points to a directory."
        )
    prefix = "" if rel == "." else rel + "/"
    entries, hidden = {path + "/"}, set()
    for name in ws.files:
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix) :].split("/")
        if parts[0].startswith("."):
            hidden.add(parts[0])
            continue
        entries.add(f"{path}/{parts[0]}" + ("/" if len(parts) > 1 else ""))
        if len(parts) > 1 and not parts[1].startswith("."):
            entries.add(f"{path}/{parts[0]}/{parts[1]}" + ("/" if len(parts) > 2 else ""))
    listing = "\n".join(sorted(entries, key=lambda entry: entry.rstrip("/")))
    text = f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{listing}"
    if hidden:
        text += (
            f"\n\n{len(hidden)} hidden files/directories in this directory are excluded. "
            f"You can use 'ls -la {path}' to see them."
        )
    return text


def _view_range(value: str | list[int]) -> list[int]:
    """A view_range as the model wrote it: the converter reads it as JSON (fn_call_converter.py:519-524)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise _invalid("view_range", value, "It should be a list of two integers.") from None
        return parsed if isinstance(parsed, list) else [parsed]
    return list(value)


def _str_replace(ws: Workspace, path: str, rel: str, old_str: str, new_str: str | None) -> str:
    """OHEditor.str_replace (editor.py:120-194): tabs expanded in both strings and the whole file, one literal
    (non-overlapping) match required."""
    old_str = old_str.expandtabs()
    new_str = new_str.expandtabs() if new_str is not None else ""
    content = "".join(_lines(ws.files[rel])).expandtabs()
    found = [(content.count("\n", 0, m.start()) + 1, m.start()) for m in re.finditer(re.escape(old_str), content)]
    if not found:
        raise _ToolError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
    if len(found) > 1:
        lines = sorted({line for line, _ in found})
        raise _ToolError(
            f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines {lines}. "
            "Please ensure it is unique."
        )
    line, at = found[0]
    new_content = content[:at] + new_str + content[at + len(old_str) :]
    ws.files[rel] = new_content
    ws.remember(rel, content)
    start = max(0, line - SNIPPET_CONTEXT_WINDOW)
    end = line + SNIPPET_CONTEXT_WINDOW + new_str.count("\n")
    return (
        f"The file {path} has been edited. "
        + numbered(_read(new_content, start, end), f"a snippet of {path}", start + 1)
        + "Review the changes and make sure they are as expected. Edit the file again if necessary."
    )


def _insert(ws: Workspace, path: str, rel: str, insert_line: str | int, new_str: str) -> str:
    """OHEditor.insert (editor.py:310-390): the new lines after line `insert_line`, each ending in a newline."""
    old_lines = _lines(ws.files[rel])
    num_lines = len(old_lines)
    try:
        at = int(insert_line)
    except ValueError:
        raise _invalid(
            "insert_line", insert_line, f"It should be within the range of lines of the file: {[0, num_lines]}"
        ) from None
    if at < 0 or at > num_lines:  # editor.py:320-325
        raise _invalid("insert_line", at, f"It should be within the range of lines of the file: {[0, num_lines]}")
    new_lines = new_str.expandtabs().split("\n")
    new_content = (
        "".join(line.expandtabs() for line in old_lines[:at])
        + "".join(line + "\n" for line in new_lines)
        + "".join(line.expandtabs() for line in old_lines[at:])
    )
    ws.files[rel] = new_content
    ws.remember(rel, "".join(old_lines))
    start = max(1, at - SNIPPET_CONTEXT_WINDOW)
    end = min(num_lines + len(new_lines), at + SNIPPET_CONTEXT_WINDOW + len(new_lines))
    return (
        f"The file {path} has been edited. "
        + numbered(
            _read(new_content, start, end), "a snippet of the edited file", max(1, at - SNIPPET_CONTEXT_WINDOW + 1)
        )
        + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
        "Edit the file again if necessary."
    )


def _undo(ws: Workspace, path: str, rel: str) -> str:
    """OHEditor.undo_edit (editor.py:424-441): back to the version before the last edit."""
    versions = ws.history.get(rel)
    if not versions:
        raise _ToolError(f"No edit history found for {path}.")
    old_text = versions.pop()
    ws.files[rel] = old_text
    return f"Last edit to {path} undone successfully. {numbered(old_text, path)}"
