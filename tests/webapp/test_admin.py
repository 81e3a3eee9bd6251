import pytest
from django.contrib import admin

from webapp.core.seed import builtin_datasets_seed, builtin_reward_configs_seed

pytestmark = pytest.mark.django_db

TIRLAB_APPS = {"accounts", "datasets", "rewards", "runs"}


def tirlab_models() -> list:
    return [model for model in admin.site._registry if model._meta.app_label in TIRLAB_APPS]


def test_every_tirlab_model_has_an_admin_page():
    labels = {f"{m._meta.app_label}.{m.__name__}" for m in tirlab_models()}
    assert labels == {
        "accounts.ApiToken", "datasets.Dataset", "rewards.RewardConfig", "runs.Experiment",
        "runs.Run", "runs.MetricStep", "runs.Trajectory", "runs.RunLogLine",
    }  # fmt: skip


def test_admin_lists_and_detail_pages_render(client, django_user_model, make_run):
    admin_user = django_user_model.objects.create_superuser("root", password="root-pw-123")
    client.force_login(admin_user)
    builtin_datasets_seed()
    builtin_reward_configs_seed()
    make_run(name="admin view")
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
