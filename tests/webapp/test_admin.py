import pytest
from django.apps import apps
from django.contrib import admin

from webapp.datasets.services import builtin_datasets_seed
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.runs.models import Experiment, MetricSeries
from webapp.tracking.models import MlflowExperiment, MlflowRun

pytestmark = pytest.mark.django_db

TIRLAB_APPS = {"accounts", "datasets", "rewards", "runs", "tracking"}
# Derived rows that only webapp.runs.metric_store writes, under a composite primary key (which
# Django's admin cannot address); their series are listed.
NOT_IN_ADMIN = {"runs.MetricRollup"}


def tirlab_models() -> list:
    return [model for model in admin.site._registry if model._meta.app_label in TIRLAB_APPS]


def test_every_tirlab_model_has_an_admin_page():
    labels = {f"{m._meta.app_label}.{m.__name__}" for m in tirlab_models()}
    models = [m for label in TIRLAB_APPS for m in apps.get_app_config(label).get_models()]
    every = {f"{m._meta.app_label}.{m.__name__}" for m in models}
    assert labels == every - NOT_IN_ADMIN
    assert {"runs.MetricSeries", "tracking.MlflowRun", "tracking.MlflowExperiment"} <= labels


def test_admin_lists_and_detail_pages_render(client, django_user_model, make_run):
    admin_user = django_user_model.objects.create_superuser("root", password="root-pw-123")
    client.force_login(admin_user)
    builtin_datasets_seed()
    builtin_reward_configs_seed()
    run, _token = make_run(name="admin view")
    # An MLflow-logged run's rows, so that their change pages render too.
    MetricSeries.objects.create(run=run, key="train/loss")
    MlflowRun.objects.create(run=run, user_id="researcher", tags={"mlflow.runName": "admin view"})
    experiment = Experiment.objects.create(name="mlflow-logged", owner=run.owner)
    MlflowExperiment.objects.create(experiment=experiment, tags={"team": "tir"})
    for model in tirlab_models():
        meta = model._meta
        base = f"/admin/{meta.app_label}/{meta.model_name}/"
        assert client.get(base).status_code == 200, base
        first = model.objects.first()
        if first is not None:
            assert client.get(f"{base}{first.pk}/change/").status_code == 200, base


def test_admin_index_names_tirlab_and_its_models_in_plain_english(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="root-pw-123"))
    html = client.get("/admin/").content.decode()
    assert "tirlab administration" in html and "Django administration" not in html
    assert "Trajectories" in html and "Trajectorys" not in html
