"""`execute_bash`: a command run in the sandbox against the trajectory's repository.

Each call is one sandbox snippet (trainer.envs.CallContext.run: `sandbox.arun`, or the run's Ray sandbox
actors), so a command runs under the sandbox's guarantees -- its own network namespace with no route out, its own
uid, time, memory, process and file-size limits, a fresh working directory that is deleted afterwards, nothing
left running. The snippet writes the repository into that directory, runs `bash -c COMMAND` there in its own
process group (the sandbox's Python first on PATH, as `python`; HOME the working directory) under a time limit
below the sandbox's, kills the group, and prints the output, the exit code and the repository's text files
afterwards; the workspace takes those back, so an edit made with `sed -i` or `echo >` persists to the next call.

The observation is SkyRL-v0's (trainer.envs.swe.observations.command_observation), with the repository's root
(`/workspace/<repo>`) as the working directory the model sees, in the metadata and in the output. Deviations
(docs/fidelity.md): SkyRL-v0's runtime keeps one tmux bash session per trajectory, so `cd`, `export` and a
running command carry over there; here each call starts in the repository's root with a fresh environment and a
command that runs past the limit is killed, so `is_input` has nothing to send to (OpenHands' own reply for that
case, oh openhands/runtime/utils/bash.py:482-494).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from trainer.envs.base import CallContext
from trainer.envs.swe import observations
from trainer.envs.swe.workspace import Workspace

SENTINEL = "\x1etirlab-swe-state\x1e"
# What the snippet sends back of a command's output: its head and tail, twice what the observation keeps
# (observations.MAX_MESSAGE_CHARS), so the sandbox's 1 MiB stream limit is never what cuts it.
MAX_OUTPUT_CHARS = 2 * observations.MAX_MESSAGE_CHARS
# Files the snippet sends back: text, at most this size each; anything else keeps the text the workspace had.
MAX_FILE_BYTES = 256 << 10
# oh openhands/runtime/utils/bash.py:482-494: the replies to an empty command and to input with nothing running.
NO_COMMAND_TO_LOG = "ERROR: No previous running command to retrieve logs from."
NO_COMMAND_TO_INPUT = "ERROR: No previous running command to interact with."

_SNIPPET = r"""
import json, os, shutil, signal, subprocess, sys
FILES = json.loads({files!r})
# The repository in a subdirectory; the output goes to a file beside it, so a process the command leaves behind
# holds no pipe open and the call returns when bash does (the sandbox kills the rest when the snippet ends).
os.makedirs("repo")
os.chdir("repo")
for path, text in FILES.items():
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
PATH = os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin"
env = {{"PATH": PATH, "HOME": os.getcwd(), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}}
with open("../output.log", "wb") as log:
    proc = subprocess.Popen(["bash", "-c", {command!r}], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout={timeout!r})
    except subprocess.TimeoutExpired:
        code = -1
try:
    os.killpg(proc.pid, signal.SIGKILL)  # the command's group: what it left running in the background
except ProcessLookupError:
    pass
proc.wait()
with open("../output.log", "rb") as log:
    log.seek(0, 2)
    size = log.tell()
    if size > {max_output!r}:
        log.seek(0)
        head = log.read({max_output!r} // 2)
        log.seek(size - {max_output!r} // 2)
        out = head + log.read()
    else:
        log.seek(0)
        out = log.read()
files, unread = {{}}, []
for top, dirs, names in os.walk("."):
    dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
    for name in names:
        path = os.path.normpath(os.path.join(top, name))
        try:
            if os.path.islink(path) or os.path.getsize(path) > {max_bytes!r}:
                raise OSError
            with open(path, encoding="utf-8") as handle:
                files[path] = handle.read()
        except (OSError, UnicodeDecodeError):
            unread.append(path)
text = out.decode("utf-8", "replace")
sys.stdout.write({sentinel!r} + json.dumps({{"output": text, "exit_code": code, "files": files, "unread": unread,
    "timed_out": code == -1, "cwd": os.getcwd(), "python": shutil.which("python", path=PATH) or ""}}))
"""


@dataclass(frozen=True)
class BashResult:
    """A command's result: `text` is the observation's body as SkyRL-v0 shows it."""

    output: str
    exit_code: int  # -1: the command did not end (timed out) or did not run
    status: str  # ok, error (non-zero exit), timeout, or the sandbox's status when the snippet itself failed
    text: str


def _result(output: str, exit_code: int, status: str) -> BashResult:
    return BashResult(output, exit_code, status, observations.command_observation(output, exit_code))


async def execute_bash(
    workspace: Workspace, command: str, *, is_input: bool = False, context: CallContext
) -> BashResult:
    """Run `command` in the sandbox on the workspace's files; the workspace takes the files it left."""
    command = command.strip()  # bash.py:474
    if not command:
        return _result(NO_COMMAND_TO_LOG, -1, "error")
    if is_input:
        return _result(NO_COMMAND_TO_INPUT, -1, "error")
    limit = max(context.timeout_s - 1.5, 0.5)
    code = _SNIPPET.format(
        files=json.dumps(workspace.files),
        command=command,
        timeout=limit,
        max_bytes=MAX_FILE_BYTES,
        max_output=MAX_OUTPUT_CHARS,
        sentinel=SENTINEL,
    )
    result = await context.run(code)
    _, found, state = result.stdout.rpartition(SENTINEL)
    if not found:
        # The snippet itself was stopped (the sandbox's own limits): nothing of its files comes back.
        message = (result.stdout + result.stderr).strip()[-2000:] or f"the command ended with {result.status}"
        return _result(message, -1, result.status if result.status != "ok" else "error")
    data = json.loads(state)
    # A file still there that came back unread (too large, not text) keeps the text the workspace had for it.
    kept = {path: workspace.files[path] for path in data["unread"] if path in workspace.files}
    workspace.files = {**{str(path): str(text) for path, text in data["files"].items()}, **kept}
    root = workspace.root or data["cwd"]
    output = data["output"].replace(data["cwd"], root) if workspace.root else data["output"]
    exit_code = int(data["exit_code"])
    if data["timed_out"]:
        text = observations.command_observation(output, -1, suffix=observations.timed_out(limit))
        return BashResult(output, -1, "timeout", text)
    text = observations.command_observation(output, exit_code, working_dir=root, python=data["python"] or None)
    return BashResult(output, exit_code, "ok" if exit_code == 0 else "error", text)
