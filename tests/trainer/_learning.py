"""Running a quickstart preset whole and reading its learning curve, for the learning tests (one
preset per file, so that the runs go to different xdist workers)."""

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import mean

REPO = Path(__file__).resolve().parents[2]


def run_preset(
    preset: str, out: Path, model_cache: Path, *, overrides: dict | None = None, max_steps: int | None = None
) -> list[dict[str, float]]:
    """The per-step metric values of `python -m trainer run --preset PRESET`, or of the preset's
    config with `overrides` merged over it (run with --config); with `max_steps`, its first steps only
    (`--max-steps`: the preset's config, stopped early, so they are the whole run's first steps)."""
    if overrides is None:
        source = ["--preset", preset]
    else:
        from trainer.config import merge_overrides
        from trainer.presets import preset_config

        config = merge_overrides(preset_config(preset).model_dump(mode="json"), overrides)
        out.mkdir(parents=True, exist_ok=True)
        (out.parent / f"{out.name}.config.json").write_text(json.dumps(config))
        source = ["--config", str(out.parent / f"{out.name}.config.json")]
    done = subprocess.run(
        [
            sys.executable, "-m", "trainer", "run", *source, "--out", str(out), "--model-cache", str(model_cache),
            *(["--max-steps", str(max_steps)] if max_steps is not None else []),
        ],
        cwd=REPO, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == list(range(len(rows)))
    return [row["values"] for row in rows]


def shared_run(preset: str, tmp_path_factory, model_cache: Path) -> tuple[list[dict[str, float]], Path]:
    """`run_preset(preset)` once per pytest session, whichever test asks first, and its output folder: the
    xdist workers share it through a file lock in their common temporary folder (a test comparing against a
    preset's run waits for the worker running it rather than running it again)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's
    out, done = root / f"shared-{preset}", root / f"shared-{preset}.done"
    with open(root / f"shared-{preset}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            run_preset(preset, out, model_cache)
            done.touch()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [row["values"] for row in rows], out


def window(values: list[dict[str, float]], name: str, steps: slice) -> float:
    return mean(v[name] for v in values[steps] if name in v)
