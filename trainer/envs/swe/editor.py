"""`str_replace_editor`: OpenHands-ACI's file editor, which SkyRL-v0's agent calls, on a workspace's text.

Every text below is OHEditor's (All-Hands-AI/openhands-aci @9d22d0d, openhands_aci/editor/editor.py; lines
cited beside each), so a model trained here reads what it would read in SkyRL-v0's runtime. The edit happens
on the trajectory's copy of the repository in the trainer (trainer.envs.swe.workspace); nothing is written to
disk and no model text runs. Not kept: OHEditor's linting (off by default, :114), its Markdown view of
binary files (the repositories here are text) and its view of a directory via `find` (a listing of the
workspace's files two levels deep stands in for it, in the same words).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer.envs.swe.workspace import Workspace

# openhands_aci/editor/config.py:2 @9d22d0d: lines of context around an edit.
SNIPPET_CONTEXT_WINDOW = 4
COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")


@dataclass(frozen=True)
class EditorResult:
    text: str
    error: bool = False


class _ToolError(Exception):
    pass


def _invalid(parameter: str, value: object, hint: str) -> _ToolError:
    # EditorToolParameterInvalidError (openhands_aci/editor/exceptions.py:24-34 @9d22d0d).
    return _ToolError(f"Invalid `{parameter}` parameter: {value}. {hint}")


def _missing(command: str, parameter: str) -> _ToolError:
    # EditorToolParameterMissingError (exceptions.py:14-21).
    return _ToolError(f"Parameter `{parameter}` is required for command: {command}.")


def numbered(text: str, description: str, start_line: int = 1) -> str:
    """OHEditor._make_output (editor.py:670-705): `cat -n` numbering, 6 wide and a tab."""
    lines = "\n".join(f"{i + start_line:6}\t{line}" for i, line in enumerate(text.split("\n")))
    return f"Here's the result of running `cat -n` on {description}:\n{lines}\n"


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
    """Run one editor command; a refused or failed one comes back as OpenHands' runtime reports a ToolError,
    `ERROR:` and the message (`error` set)."""
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
    if command not in COMMANDS:
        # editor.py:150-152
        raise _ToolError(
            f"Unrecognized command {command}. The allowed commands for the str_replace_editor tool are: "
            + ", ".join(COMMANDS)
        )
    if path is None:
        raise _missing(command, "path")
    rel = _validate_path(ws, command, path)
    if command == "view":
        return _view(ws, path, rel, view_range)
    if command == "create":
        if file_text is None:
            raise _missing(command, "file_text")
        ws.files[rel] = file_text
        ws.remember(rel, file_text)
        return f"File created successfully at: {path}"  # editor.py:129
    if command == "str_replace":
        if old_str is None:
            raise _missing(command, "old_str")
        if new_str == old_str:  # editor.py:134-139
            raise _invalid(
                "new_str", new_str, "No replacement was performed. `new_str` and `old_str` must be different."
            )
        return _str_replace(ws, path, rel, old_str, new_str or "")
    if command == "insert":
        if insert_line is None:
            raise _missing(command, "insert_line")
        if new_str is None:
            raise _missing(command, "new_str")
        return _insert(ws, path, rel, insert_line, new_str)
    versions = ws.history.get(rel)  # undo_edit, editor.py:565-582
    if not versions:
        raise _ToolError(f"No edit history found for {path}.")
    old_text = versions.pop()
    ws.files[rel] = old_text
    return f"Last edit to {path} undone successfully. {numbered(old_text, path)}"


def _validate_path(ws: Workspace, command: str, path: str) -> str:
    """OHEditor.validate_path (editor.py:511-563) on the workspace: its repository path."""
    if ws.root and not path.startswith("/"):
        raise _invalid("path", path, "The path should be an absolute path, starting with `/`.")
    rel = ws.relative(path)
    exists = rel is not None and (rel in ws.files or ws.is_dir(rel))
    if command == "create" and exists:
        raise _invalid("path", path, f"File already exists at: {path}. Cannot overwrite files using command `create`.")
    if command != "create" and not exists:
        raise _invalid("path", path, f"The path {path} does not exist. Please provide a valid path.")
    if rel is None:
        raise _invalid("path", path, f"The path {path} does not exist. Please provide a valid path.")
    if command != "view" and ws.is_dir(rel) and rel not in ws.files:
        raise _invalid(
            "path", path, f"The path {path} is a directory and only the `view` command can be used on directories."
        )
    return rel


def _view(ws: Workspace, path: str, rel: str, view_range: str | list[int] | None) -> str:
    if rel not in ws.files:
        # A directory (editor.py:292-318): its files and directories up to two levels deep.
        prefix = "" if rel == "." else rel.rstrip("/") + "/"
        entries = sorted(
            {ws.shown(prefix + "/".join(n[len(prefix) :].split("/")[:2])) for n in ws.files if n.startswith(prefix)}
        )
        listing = "\n".join([path, *entries])
        return f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{listing}\n"
    text = ws.files[rel]
    if not view_range:
        return numbered(text, path)
    bounds = _view_range(view_range)
    lines = text.split("\n")
    num_lines = len(text.splitlines())
    start, end = bounds
    if start < 1 or start > num_lines:  # editor.py:358-363
        raise _invalid(
            "view_range",
            list(bounds),
            f"Its first element `{start}` should be within the range of lines of the file: {[1, num_lines]}.",
        )
    warning = None
    if end == -1:
        end = num_lines
    elif end > num_lines:
        warning = f"We only show up to {num_lines} since there're only {num_lines} lines in this file."
        end = num_lines
    if end < start:  # editor.py:373-378
        raise _invalid(
            "view_range",
            list(bounds),
            f"Its second element `{end}` should be greater than or equal to the first element `{start}`.",
        )
    output = numbered("\n".join(lines[start - 1 : end]), path, start)
    return f"NOTE: {warning}\n{output}" if warning else output


def _view_range(value: str | list[int]) -> tuple[int, int]:
    """A view_range as the model wrote it (text in SkyRL-v0's calls, `[1, 20]`)."""
    try:
        numbers = [int(x) for x in (value.strip("[] \n").split(",") if isinstance(value, str) else value)]
    except ValueError:
        numbers = []
    if len(numbers) != 2:
        raise _invalid("view_range", value, "It should be a list of two integers.")
    return numbers[0], numbers[1]


def _occurrences(text: str, old: str) -> list[int]:
    found, at = [], text.find(old)
    while old and at >= 0:
        found.append(at)
        at = text.find(old, at + 1)
    return found


def _str_replace(ws: Workspace, path: str, rel: str, old_str: str, new_str: str) -> str:
    """OHEditor.str_replace (editor.py:170-269)."""
    text = ws.files[rel]
    found = _occurrences(text, old_str)
    if not found:
        # Tried once more without whitespace around both strings (editor.py:206-224).
        old_str, new_str = old_str.strip(), new_str.strip()
        found = _occurrences(text, old_str)
        if not found:
            raise _ToolError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
    if len(found) > 1:
        lines = sorted({text.count("\n", 0, at) + 1 for at in found})
        raise _ToolError(
            f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines {lines}. "
            "Please ensure it is unique."
        )
    at = found[0]
    line = text.count("\n", 0, at) + 1
    new_text = text[:at] + new_str + text[at + len(old_str) :]
    ws.files[rel] = new_text
    ws.remember(rel, text)
    start = max(0, line - SNIPPET_CONTEXT_WINDOW)
    end = line + SNIPPET_CONTEXT_WINDOW + new_str.count("\n")
    snippet = "\n".join(new_text.split("\n")[start:end])
    return (
        f"The file {path} has been edited. "
        + numbered(snippet, f"a snippet of {path}", start + 1)
        + "Review the changes and make sure they are as expected. Edit the file again if necessary."
    )


def _insert(ws: Workspace, path: str, rel: str, insert_line: str | int, new_str: str) -> str:
    """OHEditor.insert (editor.py:416-509)."""
    text = ws.files[rel]
    lines = text.splitlines(keepends=True)
    try:
        at = int(insert_line)
    except ValueError:
        raise _invalid(
            "insert_line", insert_line, f"It should be within the range of allowed values: {[0, len(lines)]}"
        ) from None
    if at < 0 or at > len(lines):
        raise _invalid("insert_line", at, f"It should be within the range of allowed values: {[0, len(lines)]}")
    new_lines = new_str.split("\n")
    new_text = "".join(lines[:at]) + "".join(line + "\n" for line in new_lines) + "".join(lines[at:])
    ws.files[rel] = new_text
    ws.remember(rel, text)
    start = max(0, at - SNIPPET_CONTEXT_WINDOW)
    end = min(len(lines) + len(new_lines), at + SNIPPET_CONTEXT_WINDOW + len(new_lines))
    snippet = "".join(new_text.splitlines(keepends=True)[start:end]).removesuffix("\n")
    return (
        f"The file {path} has been edited. "
        + numbered(snippet, "a snippet of the edited file", max(1, at - SNIPPET_CONTEXT_WINDOW + 1))
        + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
        "Edit the file again if necessary."
    )
