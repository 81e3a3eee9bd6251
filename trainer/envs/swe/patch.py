"""A trajectory's patch, taken as SkyRL-v0 takes it from its runtime when the trajectory ends.

SkyRL-v0 runs `git add -A`, then `git diff --no-color --cached <base_commit>` in the repository and keeps the
output stripped (NovaSky-AI/SkyRL @a0d50c4 verl/workers/agentic/utils.py:318-352); before grading,
`process_git_patch` drops an empty patch, turns CRLF into LF, drops everything before the first `diff --git` line
and ends the patch with one newline (utils.py:380-408). Here the repository is text in the trainer, so the diff is
taken in a sandbox snippet: the original files committed to a fresh git repository (its HEAD standing for the base
commit), the current files written over them, then the same two commands. `take_patch` and `process_git_patch`
are the snippet's code (sent as their source) and are usable outside the sandbox too, on a trusted directory.
"""

from __future__ import annotations

import inspect
import json

from trainer.envs.base import CallContext
from trainer.envs.swe.workspace import Workspace

GIT = ["git", "-c", "user.name=tirlab", "-c", "user.email=tirlab@localhost", "-c", "init.defaultBranch=main"]
SENTINEL = "\x1etirlab-swe-patch\x1e"


def process_git_patch(patch: str) -> str:
    """SkyRL-v0's clean-up of a taken patch (utils.py:380-408)."""
    if not patch.strip():
        return ""
    patch = patch.replace("\r\n", "\n")
    lines = patch.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("diff --git"):
            patch = "\n".join(lines[i:])
            break
    return patch.rstrip() + "\n"


def take_patch(original: dict[str, str], current: dict[str, str], root: str) -> str:
    """`git add -A && git diff --no-color --cached <base>` of `current` against `original`, in directory `root`
    (created here), cleaned as SkyRL-v0 cleans it."""
    import os
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run([*GIT, *args], cwd=root, capture_output=True, text=True, timeout=60)
        return done.stdout

    def write(files: dict[str, str]) -> None:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as handle:
                handle.write(text)

    os.makedirs(root, exist_ok=True)
    write(original)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "--allow-empty", "-m", "base")
    for path in original:
        if path not in current:
            os.remove(os.path.join(root, path))
    write(current)
    git("add", "-A")
    return process_git_patch(git("diff", "--no-color", "--cached", "HEAD").strip())


# The snippet's own copy of the two functions above, and what they need.
PATCH_SOURCE = f"GIT = {GIT!r}\n\n" + inspect.getsource(process_git_patch) + "\n" + inspect.getsource(take_patch)


async def make_patch(workspace: Workspace, *, context: CallContext) -> str:
    """The workspace's patch against its original files ("" when nothing changed), taken in the sandbox."""
    code = (
        f"import json, sys\n{PATCH_SOURCE}\n"
        f"patch = take_patch(json.loads({json.dumps(workspace.original)!r}), "
        f"json.loads({json.dumps(workspace.files)!r}), 'repo')\n"
        f"sys.stdout.write({SENTINEL!r} + json.dumps(patch))\n"
    )
    result = await context.run(code)
    _, found, state = result.stdout.rpartition(SENTINEL)
    if not found:
        reason = (result.stderr.strip().splitlines() or [result.status])[-1]
        raise RuntimeError(f"taking the patch did not finish ({result.status}): {reason}")
    return str(json.loads(state))
