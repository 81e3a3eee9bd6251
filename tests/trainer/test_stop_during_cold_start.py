"""SIGTERM (how Ray stops a job) while the run is still being set up stops it at once."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# `python -m trainer ARGS` as it runs while a changed recipe has no shipped cold start yet.
WITHOUT_SHIPPED_COLD_START = (
    "import sys; from pathlib import Path; import trainer.models.tiny.cold_start as cold_start; "
    "cold_start.SHIPPED_DIR = Path(sys.argv[1]); from trainer.cli import main; raise SystemExit(main(sys.argv[2:]))"
)


@pytest.mark.slow  # a trainer process, into its cold start
def test_sigterm_during_the_cold_start_stops_at_once_and_leaves_no_half_built_model(tmp_path):
    cache = tmp_path / "models"  # empty, and nothing shipped: the model must be cold-started by SFT
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", WITHOUT_SHIPPED_COLD_START, str(tmp_path / "shipped"),
         "run", "--preset", "quickstart", "--out", str(out), "--model-cache", str(cache)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "cold-starting" in line:
                break
        assert any("cold-starting" in line for line in lines), "".join(lines)
        time.sleep(3)  # well into the SFT, which takes minutes
        proc.send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        for line in proc.stdout:
            lines.append(line)
            if "stopped before training started" in line:
                break
        took = time.monotonic() - stopped_at
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, "".join(lines) + rest
    assert "stopped before training started" in lines[-1], "".join(lines) + rest
    # Ray sends SIGKILL 3 s after SIGTERM by default: the run must be stopped and reported before then.
    # What follows is the interpreter's teardown (seconds on a loaded machine), which SIGKILL may cut.
    assert took < 3, took
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "cancelled" and "SIGTERM" in status["error"], status
    assert not (out / "metrics.jsonl").exists() or not (out / "metrics.jsonl").read_text().strip()
    # Only the lock file: no model directory, complete or partial, was written.
    assert sorted(p.name for p in cache.iterdir()) == [p.name for p in cache.glob("*.lock")]
