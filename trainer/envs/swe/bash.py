"""`execute_bash`: a command run in the sandbox against the trajectory's repository.

Each call is one sandbox snippet (trainer.envs.CallContext.run: `sandbox.arun`, or the run's Ray sandbox
actors), so a command runs under the sandbox's guarantees -- its own network namespace with no route out, its own
uid, time, memory, process and file-size limits, a fresh working directory that is deleted afterwards, nothing
left running. The snippet writes the repository into that directory, runs `bash -c COMMAND` there (the
sandbox's Python first on PATH, as `python`), and prints the output, the exit code and the repository's files
afterwards; the workspace takes those back, so an edit made with `sed -i` or `echo >` persists to the next call.

SkyRL-v0's runtime keeps one bash session per trajectory, so `cd` and `export` carry over there; here each call
starts in the repository's root with a fresh environment (docs/fidelity.md). `is_input` (text sent to a
running command) has nothing to send to, since no command outlives its call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from trainer.envs.base import CallContext
from trainer.envs.swe.workspace import Workspace

SENTINEL = "\x1etirlab-swe-state\x1e"
# What a command's observation keeps of its output (OpenHands truncates long outputs in the middle, too).
MAX_OUTPUT_CHARS = 16_000
# Files the snippet sends back: text, at most this size each; anything else is left as it was.
MAX_FILE_BYTES = 1 << 20

_SNIPPET = r"""
import json, os, signal, subprocess, sys
FILES = json.loads({files!r})
for path, text in FILES.items():
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
env = {{"PATH": os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin", "HOME": os.getcwd(),
       "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}}
proc = subprocess.Popen(["bash", "-c", {command!r}], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, env=env, start_new_session=True)
try:
    out, _ = proc.communicate(timeout={timeout!r})
    code = proc.returncode
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate()
    code = -1
try:
    os.killpg(proc.pid, signal.SIGKILL)  # whatever the command left running in the background
except ProcessLookupError:
    pass
files, unread = {{}}, []
for top, dirs, names in os.walk("."):
    dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
    for name in names:
        path = os.path.normpath(os.path.join(top, name))
        try:
            if os.path.getsize(path) > {max_bytes!r}:
                raise OSError
            with open(path, encoding="utf-8") as handle:
                files[path] = handle.read()
        except (OSError, UnicodeDecodeError):
            unread.append(path)
text = out.decode("utf-8", "replace")
sys.stdout.write({sentinel!r} + json.dumps({{"output": text[-{max_output!r}:], "exit_code": code, "files": files,
                                            "unread": unread, "timed_out": code == -1}}))
"""


@dataclass(frozen=True)
class BashResult:
    output: str
    exit_code: int
    status: str  # ok, error (non-zero exit), timeout, or the sandbox's status when the snippet itself failed

    @property
    def text(self) -> str:
        """The observation's body as CodeAct shows a command's result."""
        from trainer.envs.swe.observations import bash_output

        return bash_output(self.output.rstrip("\n"), self.exit_code)


async def execute_bash(
    workspace: Workspace, command: str, *, is_input: bool = False, context: CallContext
) -> BashResult:
    """Run `command` in the sandbox on the workspace's files; the workspace takes the files it left."""
    if is_input:
        return BashResult("ERROR: No previous running command to interact with.", -1, "error")
    if not command.strip():
        return BashResult("ERROR: No previous running command to retrieve logs from.", -1, "error")
    code = _SNIPPET.format(
        files=json.dumps(workspace.files),
        command=command,
        timeout=max(context.timeout_s - 1.0, 0.5),
        max_bytes=MAX_FILE_BYTES,
        max_output=MAX_OUTPUT_CHARS,
        sentinel=SENTINEL,
    )
    result = await context.run(code)
    head, found, state = result.stdout.rpartition(SENTINEL)
    if not found:
        # The snippet itself was stopped (the sandbox's own limits): nothing of its files comes back.
        message = (result.stdout + result.stderr).strip()[
            -MAX_OUTPUT_CHARS:
        ] or f"the command ended with {result.status}"
        return BashResult(message, -1, result.status if result.status != "ok" else "error")
    data = json.loads(state)
    # A file still there that came back unread (too large, not text) keeps the text the workspace had for it.
    kept = {path: workspace.files[path] for path in data["unread"] if path in workspace.files}
    workspace.files = {**{str(path): str(text) for path, text in data["files"].items()}, **kept}
    status = "timeout" if data["timed_out"] else ("ok" if data["exit_code"] == 0 else "error")
    output = data["output"]
    if data["timed_out"]:
        output += f"\n[Command timed out after {context.timeout_s:g} seconds and was killed]"
    return BashResult(output, int(data["exit_code"]), status)
