"""Reward configs saved from the reward page or the API: one service (webapp.rewards.services), the
same rules and messages through both doors, and who may change what."""

import pytest
from django.test import Client

from tests.webapp.conftest import client_for
from trainer.rewards import reward_defaults
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed

pytestmark = pytest.mark.django_db


def save_from_the_page(user, name: str, reward: str = "torl", **params):
    client = Client()
    client.force_login(user)
    data = {"reward": reward, "action": "save", "name": name} | {f"params.{k}": v for k, v in params.items()}
    return client.post("/rewards/", data)


def save_from_the_api(user, name: str, reward: str = "torl", **params):
    body = {"name": name, "reward": reward, "params": params}
    return client_for(user).post("/api/v1/reward-configs/", body, format="json")


@pytest.mark.parametrize(
    "name, message", [(" ", "Give the reward config a name."), ("x" * 201, "At most 200 characters.")]
)
def test_both_doors_refuse_a_bad_name_with_the_same_message(owner, name, message):
    page = save_from_the_page(owner, name)
    assert page.status_code == 400 and message in page.context["errors"]
    api = save_from_the_api(owner, name)
    assert api.status_code == 400 and api.json() == {"name": [message]}
    assert not RewardConfig.objects.exists()


def test_both_doors_store_the_name_trimmed_and_the_params_completed(owner):
    assert save_from_the_page(owner, " from the page ", "otc_grpo", c="2").status_code == 302
    assert save_from_the_api(owner, " from the api ", "otc_grpo", c=2).status_code == 201
    page, api = RewardConfig.objects.order_by("pk")
    assert (page.name, api.name) == ("from the page", "from the api")
    assert page.params == api.params and page.params["c"] == 2.0 and len(page.params) > 1


def test_the_api_reports_bad_params_by_field(owner):
    response = save_from_the_api(owner, "bad", "otc_grpo", c=0)
    assert response.status_code == 400 and set(response.json()) == {"params.c"}


def test_changing_the_reward_starts_from_its_defaults(owner, api):
    config = save_from_the_api(owner, "mine", "torl", exec_error_penalty=0.5).json()
    response = api.patch(f"/api/v1/reward-configs/{config['id']}/", {"reward": "otc_grpo"}, format="json")
    assert response.status_code == 200
    assert response.json()["params"] == reward_defaults()["otc_grpo"]


@pytest.fixture
def configs(owner) -> dict[str, RewardConfig]:
    builtin = {config.name: config for config in builtin_reward_configs_seed()}["torl"]
    mine = RewardConfig.objects.create(name="mine", owner=owner, reward="torl", params={})
    return {"builtin": builtin, "mine": mine}


def delete_from_the_page(user, config: RewardConfig) -> int:
    client = Client()
    client.force_login(user)
    return client.post(f"/rewards/{config.pk}/delete").status_code


def delete_from_the_api(user, config: RewardConfig) -> int:
    return client_for(user).delete(f"/api/v1/reward-configs/{config.pk}/").status_code


@pytest.mark.parametrize("door", [delete_from_the_page, delete_from_the_api])
def test_who_may_delete_is_the_same_on_both_doors(door, configs, owner, stranger, staff):
    assert door(stranger, configs["mine"]) == 404  # not even visible
    assert door(owner, configs["builtin"]) == 403
    assert door(staff, configs["builtin"]) == 403
    assert door(staff, configs["mine"]) in (204, 302)
    assert not RewardConfig.objects.filter(pk=configs["mine"].pk).exists()
    assert RewardConfig.objects.filter(pk=configs["builtin"].pk).exists()


def test_a_builtin_config_cannot_be_edited(configs, staff):
    response = client_for(staff).patch(
        f"/api/v1/reward-configs/{configs['builtin'].pk}/", {"name": "renamed"}, format="json"
    )
    assert response.status_code == 403
