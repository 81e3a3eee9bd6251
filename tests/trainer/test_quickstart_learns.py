"""The quickstart presets, run whole, learn: what a researcher sees on their first day.

Each test runs a preset end to end through `python -m trainer run` — the cached cold start, the
asynchronous rollout, the real sandbox, the reward, GRPO updates — and checks the learning curve
in metrics.jsonl, not just that files were written. The thresholds sit well inside what the runs
measure (see README "The trainer") and well outside where the cold start begins, so a change that
stops the policy learning fails here.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import mean

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL_CACHE = Path(os.environ.get("TIRLAB_VAR_DIR") or REPO / "var") / "models"


def run_preset(preset: str, out: Path) -> list[dict[str, float]]:
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", "--preset", preset, "--out", str(out),
         "--model-cache", str(MODEL_CACHE)],
        cwd=REPO, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == list(range(len(rows)))
    return [row["values"] for row in rows]


def window(values: list[dict[str, float]], name: str, steps: slice) -> float:
    return mean(v[name] for v in values[steps] if name in v)


# Minutes on an idle 2-core machine (20 and 50 steps of 128 trajectories), much more on a busy one.
@pytest.mark.timeout(2400)
def test_quickstart_learns_to_call_the_tool_and_answers_better(tmp_path):
    values = run_preset("quickstart", tmp_path / "run")
    assert len(values) == 20
    start, end = slice(0, 3), slice(-5, None)
    # The cold start is undecided (tool use about half) and solves hard problems only through the tool.
    assert window(values, "tool_call_ratio", start) < 0.7
    assert window(values, "tool_call_ratio", end) > 0.8
    hard = "train/hard/accuracy"
    assert window(values, hard, end) > max(0.8, window(values, hard, start) + 0.2)
    assert window(values, "accuracy", end) > 0.9


@pytest.mark.timeout(2400)
def test_quickstart_otc_moves_tool_use_from_easy_problems_to_hard_ones(tmp_path):
    values = run_preset("quickstart-otc", tmp_path / "run")
    assert len(values) == 50
    start, end = slice(0, 10), slice(-10, None)
    easy, hard = "train/easy/tool_call_ratio", "train/hard/tool_call_ratio"
    # The cold start calls the tool on both about half the time; OTC pays for fewer calls when the
    # answer is still right, which only the easy problems allow.
    assert window(values, easy, end) < window(values, easy, start) - 0.1
    assert window(values, hard, end) > window(values, hard, start) + 0.1
    assert window(values, hard, end) - window(values, easy, end) > 0.3
    assert window(values, "accuracy", end) > window(values, "accuracy", start)
