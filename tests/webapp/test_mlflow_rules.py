"""The rules behind tirlab's MLflow API, one at a time: filters, run states, silence, the params tree."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.runs.models import Run, RunStatus
from webapp.runs.transitions import IllegalTransition, run_transition
from webapp.tracking.errors import MlflowError
from webapp.tracking.search import Comparison, matches, parse_filter, parse_order_by
from webapp.tracking.tasks import lose_silent_runs
from webapp.ui.external_runs import external_headline, external_max_steps, external_model, params_tree


def test_filters_read_as_mlflow_writes_them():
    assert parse_filter("") == []
    assert parse_filter("params.lr = '1e-6' and metrics.`val/acc` >= 0.5") == [
        Comparison("params", "lr", "=", "1e-6"),
        Comparison("metrics", "val/acc", ">=", 0.5),
    ]
    assert parse_filter("tags.mlflow.runName LIKE 'grpo%'") == [Comparison("tags", "mlflow.runName", "LIKE", "grpo%")]
    assert parse_filter('attributes.status IN ("RUNNING", "FINISHED")') == [
        Comparison("attributes", "status", "IN", ["RUNNING", "FINISHED"])
    ]
    assert parse_filter("tags.note IS NULL AND status != 'FAILED'") == [
        Comparison("tags", "note", "IS NULL", None),
        Comparison("attributes", "status", "!=", "FAILED"),
    ]
    for bad in (
        "params.lr = '1' OR params.lr = '2'",
        "datasets.name = 'x'",
        "params.lr ~ '1'",
        "params.lr = ",
        "(a = 1)",
    ):
        with pytest.raises(MlflowError) as refused:
            parse_filter(bad)
        assert refused.value.code == "INVALID_PARAMETER_VALUE"


def test_comparisons_match_numbers_as_numbers_and_missing_values_never():
    assert matches(Comparison("metrics", "acc", ">", 0.5), 0.75)
    assert not matches(Comparison("metrics", "acc", ">", 0.5), None)
    assert matches(Comparison("params", "lr", "=", "1e-6"), "1e-6")
    assert matches(Comparison("tags", "x", "ILIKE", "%GRPO%"), "qwen-grpo-1")
    assert not matches(Comparison("tags", "x", "LIKE", "%GRPO%"), "qwen-grpo-1")
    assert matches(Comparison("attributes", "status", "NOT IN", ["FAILED"]), "RUNNING")
    assert [(o.entity, o.key, o.descending) for o in parse_order_by(["metrics.acc DESC", "start_time"])] == [
        ("metrics", "acc", True),
        ("attributes", "start_time", False),
    ]


@pytest.mark.django_db
def test_an_external_run_moves_as_mlflow_lets_a_client_move_it(owner):
    run = Run.objects.create(
        name="verl", owner=owner, config={}, status=RunStatus.RUNNING, source="mlflow", managed=False
    )
    run = run_transition(run=run, status=RunStatus.SUCCEEDED)
    assert run.finished_at is not None
    run = run_transition(run=run, status=RunStatus.RUNNING)  # resumed with MLFLOW_RUN_ID
    assert run.finished_at is None
    run = run_transition(run=run, status=RunStatus.FAILED)
    run = run_transition(run=run, status=RunStatus.CANCELLED)
    # A run of tirlab's own trainer never changes once it ended.
    mine = Run.objects.create(name="torl", owner=owner, config={}, status=RunStatus.SUCCEEDED)
    with pytest.raises(IllegalTransition):
        run_transition(run=mine, status=RunStatus.RUNNING)


@pytest.mark.django_db
def test_a_silent_external_run_is_lost_and_the_others_are_not(owner, settings):
    settings.EXTERNAL_HEARTBEAT_TIMEOUT_S = 600
    now = timezone.now()

    def run(name: str, silent_s: float, **kwargs) -> Run:
        defaults = {"status": RunStatus.RUNNING, "source": "mlflow", "managed": False}
        return Run.objects.create(
            name=name, owner=owner, config={}, heartbeat_at=now - timedelta(seconds=silent_s), **{**defaults, **kwargs}
        )

    silent, talking = run("silent", 601), run("talking", 10)
    ended = run("ended", 5000, status=RunStatus.SUCCEEDED)
    own = run("tirlab's", 5000, source="tirlab", managed=True)
    assert lose_silent_runs() == [silent.pk]
    assert Run.objects.get(pk=silent.pk).status == RunStatus.LOST
    assert {r.status for r in Run.objects.filter(pk__in=[talking.pk, ended.pk, own.pk])} == {"running", "succeeded"}
    assert "logged nothing for 600 s" in Run.objects.get(pk=silent.pk).log_lines.last().message


def test_params_read_as_a_tree_and_the_first_charts_are_the_runs_own():
    config = {
        "actor_rollout_ref/rollout/n": "16",
        "actor_rollout_ref/actor/optim/lr": "1e-06",
        "algorithm/adv_estimator": "grpo",
        "trainer/total_training_steps": "500",
    }
    tree = params_tree(config)
    assert [n.name for n in tree] == ["actor_rollout_ref", "algorithm", "trainer"]
    rollout = next(c for c in tree[0].children if c.name == "rollout")
    assert (rollout.children[0].name, rollout.children[0].value, rollout.children[0].path) == (
        "n",
        "16",
        "actor_rollout_ref/rollout/n",
    )
    assert tree[0].size == 2
    # MLFLOW_FLATTEN_PARAMS's dots are the separator when no key has '/'.
    assert [n.name for n in params_tree({"generation.top_k": "5", "generation.top_p": "1.0", "lr": "1"})] == [
        "generation",
        "lr",
    ]
    assert external_max_steps(config) == 500 and external_max_steps({"max_steps": "-1"}) is None
    assert external_model({"_name_or_path": "Qwen/Qwen2.5-0.5B", "model": "x"}) == "Qwen/Qwen2.5-0.5B"
    keys = ["actor/pg_loss", "critic/score/mean", "val-core/openai/gsm8k/reward/mean_at_1", "timing_s/gen", "zzz"]
    assert external_headline(keys) == [
        "val-core/openai/gsm8k/reward/mean_at_1",
        "critic/score/mean",
        "actor/pg_loss",
        "timing_s/gen",
        "zzz",
    ]
