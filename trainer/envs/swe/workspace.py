"""A trajectory's repository: its files as text, the files it started from, and each file's edit history.

The swe environment keeps the repository in the trainer between calls: the editor works on this text, and a
command runs in the sandbox with these files written into its working directory (trainer.envs.swe.bash),
whose changes come back here. Paths are relative to the repository; the model sees them under `root`
(SkyRL-v0's agent works in `/workspace/<repo>`; the mini's relative paths have root "").
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

# OHEditor 0.2.5 keeps the last 10 versions of each file for undo_edit (openhands_aci/editor/editor.py:57 @0.2.5).
MAX_HISTORY_PER_FILE = 10


@dataclass
class Workspace:
    """One trajectory's repository; `history` holds, per path, the versions undo_edit goes back to."""

    files: dict[str, str]
    original: dict[str, str]
    root: str = ""
    history: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_files(cls, files: dict[str, str], *, root: str = "") -> Workspace:
        return cls(files=dict(files), original=dict(files), root=root.rstrip("/"))

    def shown(self, path: str) -> str:
        """A repository path as the model sees it."""
        return f"{self.root}/{path}" if self.root else path

    def relative(self, path: str) -> str | None:
        """The repository path the model's `path` names, or None when it names none inside the repository."""
        path = path.strip()
        if self.root:
            if path.rstrip("/") == self.root:
                return "."
            if not path.startswith(self.root + "/"):
                return None
            path = path[len(self.root) + 1 :]
        elif path.startswith("/"):
            return None
        norm = posixpath.normpath(path)
        return None if norm.startswith("..") or norm == "." else norm

    def is_dir(self, path: str) -> bool:
        return path == "." or any(name.startswith(path.rstrip("/") + "/") for name in self.files)

    def remember(self, path: str, text: str) -> None:
        """Keep `text` as the version undo_edit goes back to."""
        versions = self.history.setdefault(path, [])
        versions.append(text)
        del versions[:-MAX_HISTORY_PER_FILE]

    def changed(self) -> bool:
        return self.files != self.original
