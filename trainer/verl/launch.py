"""`python -m trainer.verl.launch --config FILE --out DIR [--report-url URL] [--resume CHECKPOINT]`: one
tirlab run trained by verl, supervised as tirlab supervises its own trainer. The dashboard submits it
as the run's Ray job in verl's environment (webapp.runs.lifecycle); it runs as well by hand.

It writes verl's files (trainer.verl.prepare), starts `python -m verl.trainer.main_ppo` with the run's
overrides (trainer.verl.command) in its own process group, and meanwhile, through tirlab's reporter
(trainer.report.client, the run token in TIRLAB_RUN_TOKEN):

- heartbeats every `schedule.heartbeat_s`, so the dashboard's supervision treats it as any run;
- reads verl's per-step rollout dumps (trainer.verl.samples) into the headline metrics verl has no
  equivalent for, computed per sample, and the step's GRPO groups as trajectories;
- warns in the run's log when verl gives up on MLflow ("Proceeding without MLflow tracking": verl
  then trains on and logs no metric, verl/utils/tracking.py:129);
- reports verl's newest checkpoint, and the end: succeeded when verl exits 0, failed with the last
  lines of its output otherwise. SIGTERM (Ray stopping the job on cancel) stops verl's process group.

verl's own metrics reach the run through tirlab's MLflow API: the dashboard sets MLFLOW_TRACKING_URI,
MLFLOW_RUN_ID (the run) and MLFLOW_TRACKING_TOKEN (the run token) in the job's environment.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from trainer.config import RunConfig, validate_config
from trainer.report.client import Reporter
from trainer.verl.command import latest_checkpoint, main_ppo_argv, run_paths
from trainer.verl.prepare import prepare
from trainer.verl.process import VerlProcess
from trainer.verl.samples import publish_dumps

POLL_S = 2.0


def run(config: RunConfig, *, config_path: Path, out: Path, name: str, reporter: Reporter, resume: str = "") -> int:
    paths = run_paths(config, out_dir=str(out), config_path=str(config_path), name=name)
    reporter.set_phase("loading", 0, 1, detail="writing verl's data")
    prepare(config, paths, log=reporter.log)
    argv = main_ppo_argv(config, paths, python=sys.executable, resume=resume)
    reporter.log("starting verl: " + " ".join(argv[:3]) + f" with {len(argv) - 3} overrides (the run page lists them)")
    verl = VerlProcess(argv, reporter, cwd=str(Path(paths.train_files).parent))
    stopping = threading.Event()

    def on_term(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_term)
    seen: set[int] = set()
    reported_checkpoint: Path | None = None
    while verl.proc.poll() is None:
        if stopping.is_set() or reporter.stopped_by_dashboard:
            verl.stop()
            break
        publish_dumps(config, Path(paths.rollout_data_dir), reporter, seen)
        checkpoint = latest_checkpoint(Path(paths.checkpoints))
        if checkpoint is not None and checkpoint != reported_checkpoint:
            reporter.log(f"verl saved {checkpoint}")
            reported_checkpoint = checkpoint
        time.sleep(POLL_S)
    code = verl.wait()
    publish_dumps(config, Path(paths.rollout_data_dir), reporter, seen, final=True)
    checkpoint = latest_checkpoint(Path(paths.checkpoints))
    where = str(checkpoint) if checkpoint is not None else None
    if stopping.is_set() or reporter.stopped_by_dashboard:
        # As tirlab's own trainer ends on SIGTERM: cancelled, with verl's newest checkpoint to resume from.
        error = "" if reporter.stopped_by_dashboard else "stopped (SIGTERM)"
        reporter.set_status("cancelled", error=error, checkpoint=where)
        return 143
    if code == 0:
        reporter.set_status("succeeded", checkpoint=where)
    else:
        tail = "\n".join(verl.tail)
        reporter.set_status(
            "failed", error=f"verl exited with code {code}\n--- last lines ---\n{tail}", checkpoint=where
        )
    return code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trainer.verl.launch", description=__doc__)
    parser.add_argument("--config", required=True, help="the run's config (JSON) with engine 'verl'")
    parser.add_argument("--out", required=True, help="the run's out directory")
    parser.add_argument("--name", default="tirlab-run", help="the run's name (verl's experiment_name)")
    parser.add_argument("--report-url", default=None, help="the dashboard's ingest URL of the run")
    parser.add_argument("--resume", default="", help="a verl global_step_N folder to continue from")
    args = parser.parse_args(argv)
    config_path = Path(args.config).resolve()
    config = validate_config(json.loads(config_path.read_text(encoding="utf-8")))
    if config.engine != "verl":
        parser.error(
            f"the config's engine is {config.engine!r}; this runs engine 'verl' (python -m trainer run does the rest)"
        )
    out = Path(args.out).resolve()
    token = os.environ.get("TIRLAB_RUN_TOKEN") if args.report_url else None
    with Reporter(
        out, report_url=args.report_url, run_token=token, heartbeat_s=config.schedule.heartbeat_s
    ) as reporter:
        reporter.set_status("running")
        try:
            code = run(config, config_path=config_path, out=out, name=args.name, reporter=reporter, resume=args.resume)
        except Exception as exc:
            reporter.set_status("failed", error=f"{type(exc).__name__}: {exc}")
            raise
    sys.exit(code)


if __name__ == "__main__":
    main()
