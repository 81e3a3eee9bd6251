"""`build_once`: a model directory that is built at most once, and never seen half-built.

Cold starts and conversions take minutes, so their results are kept in a directory named by what
shaped them. An exclusive file lock makes a second process wait for the first one's build instead
of repeating it, and the directory is written under a ``.partial`` name and renamed into place,
so an interrupted build never leaves a directory that looks complete.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """`target`, first built by `build(directory)` into a partial directory if it does not exist."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        build(partial)
        partial.rename(target)
    return target
