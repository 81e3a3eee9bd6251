"""Runs of engine 'verl' in the dashboard: refused by field before anything is created, and a verl run's
page with verl's command and its launch script (webapp.runs.verl_runs)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from django.test import Client
from django.utils import timezone

from trainer.config import RunConfig
from trainer.presets import preset_config
from webapp.runs.models import Run, RunStatus

pytestmark = pytest.mark.django_db

ON_8_GPUS = {"engine": "verl", "cluster": {"nnodes": 1, "gpus_per_node": 8}}


def torl_on_verl() -> dict:
    config = preset_config("torl").model_dump(mode="json") | ON_8_GPUS
    return RunConfig.model_validate(config).model_dump(mode="json")


def test_a_field_verl_cannot_take_is_refused_by_name_and_nothing_is_created(api) -> None:
    config = {**ON_8_GPUS, "rollout": {"async_rollouts": True}}
    response = api.post("/api/v1/runs/", {"name": "async on verl", "preset": "torl", "config": config}, format="json")
    assert response.status_code == 400, response.content
    assert "config.rollout.async_rollouts" in response.json()
    assert not Run.objects.exists()


def test_a_managed_verl_run_without_a_cluster_to_check_is_refused(api, settings) -> None:
    settings.RAY_ADDRESS = ""
    response = api.post("/api/v1/runs/", {"name": "torl on verl", "preset": "torl", "config": ON_8_GPUS}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["config.cluster.gpus_per_node"] == [
        "the cluster's GPUs cannot be checked: RAY_ADDRESS is not set"
    ]
    assert not Run.objects.exists()


def test_cluster_fields_are_refused_for_tirlabs_own_trainer(api) -> None:
    response = api.post(
        "/api/v1/runs/", {"name": "hf on 8", "config": {"cluster": {"gpus_per_node": 8}}}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["config.cluster.gpus_per_node"] == ["needs engine 'verl'; engine 'hf' trains in one process"]


@pytest.fixture
def verl_run(owner) -> Run:
    return Run.objects.create(
        name="torl on verl",
        owner=owner,
        config=torl_on_verl(),
        managed=True,
        status=RunStatus.RUNNING,
        started_at=timezone.now(),
        preset="torl",
    )


def test_the_run_page_shows_verls_command_with_every_override(verl_run, owner) -> None:
    client = Client()
    client.force_login(owner)
    html = client.get(f"/runs/{verl_run.pk}/").content.decode()
    assert 'id="verl-command"' in html and "verl.trainer.main_ppo" in html
    assert "actor_rollout_ref.rollout.n=16" in html and "trainer.n_gpus_per_node=8" in html
    # verl's actors run in verl's environment, whatever python the cluster's nodes run.
    assert "ray_kwargs.ray_init.runtime_env.py_executable=" in html
    assert f"/runs/{verl_run.pk}/verl-launch.sh" in html
    assert 'id="verl-silent"' not in html


def test_the_launch_script_is_bash_with_the_config_inline_and_every_override(verl_run, owner, tmp_path) -> None:
    client = Client()
    client.force_login(owner)
    response = client.get(f"/runs/{verl_run.pk}/verl-launch.sh")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="tirlab-run-{verl_run.pk}-verl.sh"'
    script = response.content.decode()
    path = tmp_path / "launch.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True).returncode == 0
    inline = re.search(r"<<'TIRLAB_RUN_CONFIG'\n(.*?)\nTIRLAB_RUN_CONFIG\n", script, re.DOTALL)
    assert inline and json.loads(inline.group(1)) == verl_run.config
    assert "python -m trainer.verl.prepare" in script and "python -m verl.trainer.main_ppo" in script
    assert '"actor_rollout_ref.rollout.n=16"' in script
    # Bash expands $OUT inside the double quotes; hydra reads the single-quoted path as one string.
    assert """ "data.train_files='$OUT/verl/train.parquet'" """.strip() in script
    # The reward adapter is the cluster's checkout's, not this machine's.
    assert """ "reward.custom_reward_function.path='$TIRLAB_HOME/trainer/verl/reward.py'" """.strip() in script


def test_a_run_of_tirlabs_own_trainer_has_no_launch_script(make_run, owner) -> None:
    run, _ = make_run()
    client = Client()
    client.force_login(owner)
    assert client.get(f"/runs/{run.pk}/verl-launch.sh").status_code == 404
    assert 'id="verl"' not in client.get(f"/runs/{run.pk}/").content.decode()
