"""`python -m trainer.verl.prepare --config FILE --out DIR`: the files verl reads for a tirlab run, written
by tirlab's own code in verl's environment: the train and validation parquet files (trainer.verl.data:
the run's dataset, filtered and templated as tirlab's trainer does) and the agent-loop file naming
tirlab's agent loop (trainer.verl.agent_loop). Paths: trainer.verl.command.run_paths."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trainer.config import RunConfig, validate_config
from trainer.verl.agent_loop import write_agent_loop_config
from trainer.verl.command import run_paths
from trainer.verl.data import write_verl_dataset
from trainer.verl.overrides import VerlPaths


def prepare(config: RunConfig, paths: VerlPaths, *, log=print) -> None:  # noqa: ANN001 - a print-like callable
    Path(paths.train_files).parent.mkdir(parents=True, exist_ok=True)
    rows = write_verl_dataset(config, split="train", path=Path(paths.train_files))
    log(f"wrote {rows} training rows to {paths.train_files}")
    if paths.val_files:
        rows = write_verl_dataset(config, split="val", path=Path(paths.val_files))
        log(f"wrote {rows} validation rows to {paths.val_files}")
    write_agent_loop_config(Path(paths.agent_loop_config), run_config=Path(paths.run_config))
    log(f"wrote verl's agent-loop file {paths.agent_loop_config}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trainer.verl.prepare", description=__doc__)
    parser.add_argument("--config", required=True, help="the run's config (JSON), engine 'verl'")
    parser.add_argument("--out", required=True, help="the run's out directory")
    parser.add_argument("--name", default="tirlab-run", help="the run's name (verl's experiment_name)")
    args = parser.parse_args(argv)
    config = validate_config(json.loads(Path(args.config).read_text(encoding="utf-8")))
    out = str(Path(args.out).resolve())
    prepare(config, run_paths(config, out_dir=out, config_path=str(Path(args.config).resolve()), name=args.name))


if __name__ == "__main__":
    main()
