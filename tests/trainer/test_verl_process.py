"""The launch wrapper's hold on verl's process (trainer.verl.process): verl's output reaches the job's log and
the run's error, verl giving up on MLflow becomes a warning in the run's log, and a stop leaves nothing of
verl's process group behind. The process is a small Python program printing what verl prints."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil

from trainer.report.client import Reporter
from trainer.verl.process import VerlProcess

# verl/utils/tracking.py:129, word for word, then a child in the same process group, then training on.
VERL_GIVES_UP = """
import subprocess, sys, time
print("All MLflow initialization attempts failed. Proceeding without MLflow tracking.", flush=True)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"child {child.pid}", flush=True)
time.sleep(600)
"""


def test_mlflow_giving_up_is_warned_and_a_stop_leaves_no_process(tmp_path: Path) -> None:
    with Reporter(tmp_path) as reporter:
        verl = VerlProcess([sys.executable, "-c", VERL_GIVES_UP], reporter)
        deadline = time.monotonic() + 30
        while not any(line.startswith("child ") for line in verl.tail) and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int(next(line for line in verl.tail if line.startswith("child ")).split()[1])
        verl.stop(grace_s=2)
        assert verl.wait() != 0
    # SIGKILL went to the whole group; a signalled process is gone once the kernel has delivered it.
    try:
        left = [psutil.Process(child)]
    except psutil.NoSuchProcess:
        left = []
    assert not psutil.wait_procs(left, timeout=10)[1]
    log = (tmp_path / "log.txt").read_text()
    assert "WARNING" in log and "verl could not start MLflow tracking" in log
    assert verl.tail[0].endswith("Proceeding without MLflow tracking.")


def test_verls_exit_code_and_last_lines_are_kept(tmp_path: Path) -> None:
    program = "import sys\nfor i in range(60): print(f'line {i}')\nsys.exit(3)"
    with Reporter(tmp_path) as reporter:
        verl = VerlProcess([sys.executable, "-c", program], reporter)
        assert verl.wait() == 3
    assert list(verl.tail)[0] == "line 20" and list(verl.tail)[-1] == "line 59"
