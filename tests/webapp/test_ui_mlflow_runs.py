"""Runs logged through the MLflow API on the dashboard's pages: what they show and what they leave out."""

from __future__ import annotations

import pytest

from webapp.tracking.runs import create_run, log_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def verl_run(owner):
    run = create_run(
        owner,
        experiment_id="0",
        user_id="researcher",
        start_time=None,
        run_name="qwen05b-grpo",
        tags={"mlflow.source.name": "verl/trainer/main_ppo.py", "mlflow.user": "researcher"},
    )
    log_batch(
        owner,
        str(run.pk),
        metrics=[{"key": "critic/score/mean", "value": 0.5, "timestamp": 1_700_000_000_000, "step": 1}],
        params=[
            {"key": "actor_rollout_ref/model/path", "value": "Qwen/Qwen2.5-0.5B-Instruct"},
            {"key": "actor_rollout_ref/rollout/n", "value": "16"},
            {"key": "trainer/total_training_steps", "value": "100"},
        ],
        tags=[{"key": "team", "value": "<b>rl</b>"}],
        body_bytes=0,
    )
    return run


def test_the_run_page_shows_params_as_a_tree_and_no_buttons_that_cannot_work(client, owner, verl_run):
    client.force_login(owner)
    page = client.get(f"/runs/{verl_run.pk}/").content.decode()
    assert "MLflow</span> logged by <code>verl/trainer/main_ppo.py</code> as researcher" in page
    assert 'id="params-tree"' in page and ">rollout<" in page and "actor_rollout_ref/rollout/n" in page
    assert 'id="mlflow-tags"' in page and "&lt;b&gt;rl&lt;/b&gt;" in page
    for absent in ('id="cancel-form"', 'id="resume-form"', 'id="fork"', "<h2>Config</h2>"):
        assert absent not in page


def test_the_runs_list_marks_mlflow_runs_and_reads_their_model_and_steps(client, owner, verl_run):
    client.force_login(owner)
    page = client.get("/runs/").content.decode()
    row = page[page.index(f'data-run-id="{verl_run.pk}"') :]
    row = row[: row.index("</tr>")]
    assert ">MLflow</span>" in row and "Qwen/Qwen2.5-0.5B-Instruct" in row and "2 / 100" in row
