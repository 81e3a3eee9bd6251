"""The command that trains a tirlab run on verl, and the script that runs it on a cluster tirlab does not
manage. No verl import: the dashboard shows both on the run page, the launch wrapper (trainer.verl.launch)
runs the command, and a researcher downloads the script.

A run's verl files live in its out directory: `verl/train.parquet` and `verl/val.parquet` (trainer.verl.data),
`verl/agent_loop.yaml` (trainer.verl.agent_loop), `verl/rollouts/{step}.jsonl` (verl's own dumps, read by
trainer.verl.samples) and `checkpoints/` (verl's `global_step_N` folders).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from trainer.config import RunConfig
from trainer.verl.overrides import REWARD_FUNCTION, VerlPaths, hydra_value, verl_overrides

MAIN_PPO = ("-m", "verl.trainer.main_ppo")
# The script's shell variables: its out directory, under which every path of the overrides lies, and the
# tirlab checkout on the cluster (the reward adapter's file is there).
SCRIPT_OUT = "$OUT"
SCRIPT_HOME = "$TIRLAB_HOME"
_CHECKPOINT = re.compile(r"^global_step_(\d+)$")


def run_paths(
    config: RunConfig, *, out_dir: str, config_path: str, name: str, reward_function: str = REWARD_FUNCTION
) -> VerlPaths:
    """Where a run's verl files are, under its out directory."""
    return VerlPaths(
        reward_function=reward_function,
        train_files=f"{out_dir}/verl/train.parquet",
        val_files=f"{out_dir}/verl/val.parquet" if config.data.val_dataset else None,
        agent_loop_config=f"{out_dir}/verl/agent_loop.yaml",
        run_config=config_path,
        checkpoints=f"{out_dir}/checkpoints",
        rollout_data_dir=f"{out_dir}/verl/rollouts",
        project="tirlab",
        experiment=name,
    )


def resume_overrides(checkpoint: str) -> list[str]:
    """Continue from a `global_step_N` folder of an earlier run (verl's trainer.resume_mode=resume_path)."""
    return ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={checkpoint}"]


def main_ppo_argv(config: RunConfig, paths: VerlPaths, *, python: str = "python", resume: str = "") -> list[str]:
    """`python -m verl.trainer.main_ppo key=value …` for the run (trainer.verl.overrides)."""
    overrides = verl_overrides(config, paths)
    if resume:
        overrides = [item for item in overrides if not item.startswith("trainer.resume_mode=")]
        overrides += resume_overrides(resume)
    if Path(python).is_absolute():
        # verl's Ray actors run in verl's environment too, whatever python the cluster's nodes were started
        # with (tirlab's, on the local head): ray_kwargs.ray_init.runtime_env (_generated_ppo_trainer.yaml:1063-1064)
        # is merged into the job's own runtime env, whose env_vars (PYTHONPATH, the MLflow variables) the
        # actors keep (verl/trainer/main_ppo.py:61-73; ray/runtime_env/runtime_env.py _merge_runtime_env).
        overrides.append(f"ray_kwargs.ray_init.runtime_env.py_executable={hydra_value(python)}")
    return [python, *MAIN_PPO, *overrides]


def latest_checkpoint(folder: Path) -> Path | None:
    """verl's newest `global_step_N` folder under `folder`, or None."""
    if not folder.is_dir():
        return None
    found = [(int(m.group(1)), path) for path in folder.iterdir() if (m := _CHECKPOINT.match(path.name))]
    return max(found)[1] if found else None


def _double_quoted(text: str) -> str:
    """`text` in bash double quotes, with `$OUT` and `$TIRLAB_HOME` left to expand and nothing else."""
    escaped = re.sub(r'(["\\`$])', r"\\\1", text)
    for variable in (SCRIPT_OUT, SCRIPT_HOME):
        escaped = escaped.replace("\\" + variable, variable)
    return '"' + escaped + '"'


def launch_script(config: dict[str, Any], *, name: str) -> str:
    """A self-contained bash script that trains the run on a Ray cluster with verl: the run's config
    inline, verl's data written from it by tirlab's own code, then verl's command with every override."""
    run_config = RunConfig.model_validate(config)
    paths = run_paths(
        run_config,
        out_dir=SCRIPT_OUT,
        config_path=f"{SCRIPT_OUT}/run-config.json",
        name=name,
        reward_function=f"{SCRIPT_HOME}/trainer/verl/reward.py",
    )
    argv = main_ppo_argv(run_config, paths)
    shape = run_config.cluster
    data = run_config.data
    datasets = [value for value in (data.train_dataset, data.val_dataset, *data.extra_val_datasets) if value]
    lines = [
        "#!/usr/bin/env bash",
        f"# tirlab run {name!r} on verl 0.9.1: {shape.nnodes} node(s) x {shape.gpus_per_node} GPU(s),"
        f" tensor parallel {shape.tensor_parallel}.",
        "# Run it on the head node of a Ray cluster (RAY_ADDRESS, or a single GPU node) in verl's environment",
        "# (requirements-verl.txt; docs/verl.md), with a tirlab checkout in TIRLAB_HOME.",
        "# Datasets, as the run names them (copy files to the same path on the cluster): " + ", ".join(datasets),
        "# To report to tirlab as well, set MLFLOW_TRACKING_URI=<tirlab>/mlflow and MLFLOW_TRACKING_TOKEN=<API token>.",
        "set -euo pipefail",
        'TIRLAB_HOME="${TIRLAB_HOME:?set TIRLAB_HOME to a tirlab checkout}"',
        'OUT="$(realpath -m "${OUT:-./tirlab-verl-run}")"',
        'mkdir -p "$OUT"',
        'export PYTHONPATH="$TIRLAB_HOME${PYTHONPATH:+:$PYTHONPATH}"',
        "cat > \"$OUT/run-config.json\" <<'TIRLAB_RUN_CONFIG'",
        json.dumps(config, indent=2),
        "TIRLAB_RUN_CONFIG",
        "# verl's parquet files and agent-loop file, from the run's dataset and tool settings:",
        'python -m trainer.verl.prepare --config "$OUT/run-config.json" --out "$OUT"',
        " \\\n  ".join(["python " + " ".join(MAIN_PPO), *(_double_quoted(item) for item in argv[3:])]),
        "",
    ]
    return "\n".join(lines)


def command_text(argv: list[str]) -> str:
    """A command line as a shell reads it, one override per line."""
    return " \\\n  ".join([shlex.join(argv[:3]), *(shlex.quote(item) for item in argv[3:])])
