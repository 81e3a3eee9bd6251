"""verl's `main_ppo` as the launch wrapper (trainer.verl.launch) runs it: in its own process group, its
output echoed to the wrapper's (the Ray job's log) and its last lines kept for the run's error, a warning
in the run's log when verl gives up on MLflow. No verl import: it is a process like any other here."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading

from trainer.report.client import Reporter

# What verl prints when its MLflow start failed for good; it then trains on with no metric logged
# (verl/utils/tracking.py:129).
MLFLOW_GAVE_UP = "Proceeding without MLflow tracking"
TAIL_LINES = 40
STOP_GRACE_S = 30.0


class VerlProcess:
    """verl's main_ppo in its own process group; its output echoed to ours (the Ray job's log) and kept."""

    def __init__(self, argv: list[str], reporter: Reporter, *, cwd: str | None = None) -> None:
        self.reporter = reporter
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        # `cwd`: where hydra writes its outputs/<date>/<time> folder (the run's, not the job's directory).
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            bufsize=1,
            cwd=cwd,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            self.tail.append(line.rstrip("\n"))
            if MLFLOW_GAVE_UP in line:
                self.reporter.log(
                    "verl could not start MLflow tracking and trains on without it: no verl metric will reach this "
                    "run (check MLFLOW_TRACKING_URI and the token in the job's log)",
                    level="warning",
                )

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to verl's whole process group, then SIGKILL to what is left of it after a grace period."""
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        # Whatever of the group outlived verl's own process (its Ray workers, a stuck storage actor) goes too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def wait(self) -> int:
        code = self.proc.wait()
        self._reader.join(timeout=10)
        return code
