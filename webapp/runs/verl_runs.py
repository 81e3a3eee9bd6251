"""Runs of engine 'verl': checked before they queue, the GPUs they need, their job's command line, what
their page shows.

Before a verl run is created, its config goes through tirlab's translation (trainer.verl.overrides:
every field maps or is refused by name) and then verl's own composition and validation, run in verl's
environment (trainer.verl.validate; VERL_PYTHON); a managed run also needs a Ray cluster with the GPUs
its shape asks for. Each refusal names the config field it comes from, and nothing is created.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from trainer.config import ConfigError, RunConfig
from trainer.verl.command import command_text, launch_script, main_ppo_argv, run_paths
from trainer.verl.overrides import tirlab_fields, verl_overrides, verl_refusals
from trainer.verl.validate import check_with_verl
from webapp.runs.models import Run, RunStatus


def is_verl_run(run: Run) -> bool:
    return isinstance(run.config, dict) and run.config.get("engine") == "verl"


@dataclass(frozen=True)
class ClusterGPUs:
    """The GPUs of the Ray cluster's alive nodes, one count per node."""

    per_node: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.per_node)


class ClusterUnreachable(Exception):
    """Ray's state API did not answer: the cluster's GPUs are unknown."""


def cluster_gpus() -> ClusterGPUs:
    """The GPUs of RAY_ADDRESS's alive nodes, from Ray's state API (the dashboard's HTTP API: no ray.init)."""
    if not settings.RAY_ADDRESS:
        raise ClusterUnreachable("RAY_ADDRESS is not set")
    from ray.util.state import list_nodes

    try:
        nodes = list_nodes(
            address=settings.RAY_ADDRESS, filters=[("state", "=", "ALIVE")], raise_on_missing_output=False
        )
    except Exception as exc:  # noqa: BLE001 - connection and HTTP errors alike
        raise ClusterUnreachable(f"cannot read the nodes of the Ray cluster at {settings.RAY_ADDRESS}: {exc}") from exc
    return ClusterGPUs(tuple(int((node.resources_total or {}).get("GPU", 0)) for node in nodes))


def gpu_shortfall(config: RunConfig, gpus: ClusterGPUs) -> str:
    """What the cluster lacks for the run's shape, in a sentence; '' when it has enough."""
    shape = config.cluster
    needed = shape.nnodes * shape.gpus_per_node
    layout = f"{shape.nnodes} node{'s' if shape.nnodes > 1 else ''} x {shape.gpus_per_node} GPU"
    if gpus.total < needed:
        return (
            f"needs {needed} GPU{'s' if needed != 1 else ''} ({layout}); the cluster at {settings.RAY_ADDRESS} "
            f"has {gpus.total}"
        )
    fitting = sum(1 for count in gpus.per_node if count >= shape.gpus_per_node)
    if fitting < shape.nnodes:
        return (
            f"needs {shape.nnodes} node{'s' if shape.nnodes > 1 else ''} with {shape.gpus_per_node} GPUs each; "
            f"the cluster at {settings.RAY_ADDRESS} has {fitting} (GPUs per node: "
            f"{', '.join(map(str, gpus.per_node))})"
        )
    return ""


def verl_config_errors(config: dict[str, Any], *, managed: bool) -> dict[str, list[str]]:
    """Why a resolved config of engine 'verl' cannot run, by field; {} when it can. Cheapest first:
    tirlab's own refusals, then (managed) the cluster's GPUs, then verl's validation."""
    run_config = RunConfig.model_validate(config)
    refusals = verl_refusals(run_config)
    if refusals:
        return refusals
    if managed:
        try:
            shortfall = gpu_shortfall(run_config, cluster_gpus())
        except ClusterUnreachable as exc:
            shortfall = f"the cluster's GPUs cannot be checked: {exc}"
        if shortfall:
            return {"cluster.gpus_per_node": [shortfall]}
    paths = run_paths(
        run_config, out_dir="/tmp/tirlab-check", config_path="/tmp/tirlab-check/run-config.json", name="check"
    )
    errors: dict[str, list[str]] = {}
    for error in check_with_verl([("run", verl_overrides(run_config, paths))], python=settings.VERL_PYTHON)["run"]:
        # Each error starts with the tirlab fields behind the verl keys it names; one verl cannot place is
        # the engine's.
        errors.setdefault((tirlab_fields(error) or ["engine"])[0], []).append(error)
    return errors


def check_verl_config(config: dict[str, Any], *, managed: bool) -> None:
    """ConfigError (fields under "config.") when a resolved config of engine 'verl' cannot run."""
    errors = verl_config_errors(config, managed=managed)
    if errors:
        raise ConfigError({f"config.{path}": messages for path, messages in errors.items()})


def job_entrypoint(*, config_path: str, out_dir: str, name: str, report_url: str, resume: str = "") -> str:
    """The Ray job's command: tirlab's launch wrapper in verl's environment (trainer.verl.launch)."""
    argv = [settings.VERL_PYTHON, "-m", "trainer.verl.launch", "--config", config_path, "--out", out_dir]
    argv += ["--name", name, "--report-url", report_url]
    if resume:
        argv += ["--resume", resume]
    return shlex.join(argv)


def job_env(run: Run, token: str) -> dict[str, str]:
    """verl's MLflow tracking logs into this run, authenticated by the run's own token."""
    return {
        "MLFLOW_TRACKING_URI": f"{settings.PUBLIC_URL}/mlflow",
        "MLFLOW_RUN_ID": str(run.pk),
        "MLFLOW_TRACKING_TOKEN": token,
    }


@dataclass(frozen=True)
class VerlView:
    """What a verl run's page shows: verl's command with every override, and whether verl has gone quiet."""

    command: str
    overrides: list[str]
    shape: str
    silent_for_s: float | None

    @property
    def silent_minutes(self) -> int:
        return round((self.silent_for_s or 0) / 60)


def verl_view(run: Run, *, out_dir: str) -> VerlView:
    config = RunConfig.model_validate(run.config)
    paths = run_paths(config, out_dir=out_dir, config_path=f"{out_dir}/run-config.json", name=run.name)
    argv = main_ppo_argv(config, paths, python=settings.VERL_PYTHON, resume=run.resume_from)
    shape = config.cluster
    return VerlView(
        command=command_text(argv),
        overrides=argv[3:],
        shape=f"{shape.nnodes} x {shape.gpus_per_node} GPUs, tensor parallel {shape.tensor_parallel}",
        silent_for_s=silent_for_s(run),
    )


# verl logs it with every step's metrics (verl/trainer/ppo/ray_trainer.py:1765); tirlab's own reports of
# the run (trainer.verl.launch: heartbeats, metrics from the rollout dumps) never do.
VERL_STEP_KEY = "training/global_step"


def silent_for_s(run: Run) -> float | None:
    """Seconds a running verl run has gone since it started without verl logging a single metric through
    MLflow, once that is over VERL_SILENT_AFTER_S; else None."""
    if run.status != RunStatus.RUNNING or run.started_at is None or VERL_STEP_KEY in (run.metric_keys or []):
        return None
    quiet = (timezone.now() - run.started_at).total_seconds()
    return quiet if quiet > settings.VERL_SILENT_AFTER_S else None


def run_launch_script(run: Run) -> str:
    return launch_script(run.config, name=run.name)
