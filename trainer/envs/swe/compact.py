"""The observations of codeact_mini, the compact spelling of SkyRL-v0's tools for the tiny model.

The tiny model's context is 1,024 characters, so each observation says what SkyRL-v0's says in a few
characters (docs/fidelity.md, "Preset swe-mini"): a command's output followed by its exit code as `[exit N]` (SkyRL-v0:
`[Command finished with exit code N]`), `edited` for a successful edit (SkyRL-v0: the edited snippet under
`cat -n`), `error` for a refused call or failed edit, and `Please continue.` for a turn without a call.
The SFT traces of the
mini (trainer.sft.traces.swe) are written with these functions, so a trace shows what a run feeds back.
"""

from __future__ import annotations

EDITED = "edited"
NO_CALL = "Please continue."


def bash(output: str, exit_code: int) -> str:
    """A command's output, then its exit code (-1 when it did not finish)."""
    return f"{output}[exit {exit_code}]"


def error(message: str) -> str:
    """A refused call or a failed edit: only that it failed (SkyRL-v0's message says why, in more characters
    than the mini's context holds)."""
    return "error"
