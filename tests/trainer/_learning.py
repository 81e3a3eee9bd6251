"""Running a quickstart preset whole and reading its learning curve, for the learning tests (one
preset per file, so that the runs go to different xdist workers)."""

import json
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


def window(values: list[dict[str, float]], name: str, steps: slice) -> float:
    return mean(v[name] for v in values[steps] if name in v)
