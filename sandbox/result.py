"""The one value every sandbox call returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["ok", "error", "timeout", "memory_exceeded", "output_limit", "killed"]
STATUSES: tuple[Status, ...] = ("ok", "error", "timeout", "memory_exceeded", "output_limit", "killed")


@dataclass(frozen=True, slots=True)
class Result:
    """Outcome of one execution.

    status:
      ok               exited with code 0
      error            exited with a non-zero code (uncaught exception, sys.exit(n))
      timeout          still running at the wall-clock limit; its whole process tree was killed
      memory_exceeded  hit the address-space limit (MemoryError)
      output_limit     wrote more than the output cap; cut there and killed
      killed           died from a signal it did not ask us for (segfault, kill -9 on itself), or the
                       sandbox worker hosting it died; stderr then says which
    exit_code is the process's exit status, negative for a signal (like subprocess), None when unknown.
    """

    status: Status
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    duration_ms: float = 0.0
    truncated: bool = False
    # Which guarantees were actually in force for this run, so that a caller never has to assume.
    network_isolated: bool = False
    unprivileged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
