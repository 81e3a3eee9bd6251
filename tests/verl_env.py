"""verl's own Python, for the tests that run verl code: verl 0.9.1 lives in its own virtualenv (its pins clash
with tirlab's), so the main suite runs that code in a subprocess of it, with the repository importable."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def verl_python() -> str:
    """TIRLAB_VERL_PYTHON, else the repository's .venv-verl; the test fails, saying how to build it, when neither is."""
    named = os.environ.get("TIRLAB_VERL_PYTHON")
    if named:
        return named
    default = REPO / ".venv-verl" / "bin" / "python"
    if default.is_file():
        return str(default)
    pytest.fail("verl's environment is missing: run make verl-deps (or set TIRLAB_VERL_PYTHON)")


def run_in_verl(
    args: Sequence[str], *, input: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`verl_python() args...` in the repository, with the repository on PYTHONPATH; output captured as text."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [verl_python(), *args], input=input, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env
    )
