"""The new-run form as the server renders and reads it (no JavaScript): generated from the config schema."""

import re

import pytest

from trainer.config import default_config
from trainer.presets import preset_config
from webapp.datasets.services import builtin_datasets_seed
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.runs.models import Experiment, Run
from webapp.ui.config_form import all_fields, config_sections

pytestmark = pytest.mark.django_db


def form_data(config: dict, **meta) -> dict:
    """What a browser submits for `config`: every generated field, checkboxes only when ticked."""
    from trainer.config import config_json_schema

    data = {"name": "from the form", **meta}
    for field in all_fields(config_sections(config_json_schema(), config)):
        if field.kind == "checkbox":
            if field.value:
                data[field.name] = "on"
        else:
            data[field.name] = field.value
    return data


def test_every_config_field_is_rendered_from_the_schema(client, owner):
    client.force_login(owner)
    page = client.get("/runs/new/").content.decode()
    for section, fields in default_config().items():
        for key in fields if isinstance(fields, dict) else [None]:
            path = section if key is None else f"{section}.{key}"
            assert f'name="config.{path}"' in page, path
    assert re.search(r'<select id="f-model-dtype" name="config.model.dtype">', page)
    assert re.search(
        r'type="checkbox" id="f-grpo-scale_by_std" name="config.grpo.scale_by_std" value="on" checked', page
    )
    assert re.search(r'name="config.rollout.top_p" value="1.0" step="any" min="0" max="1" required', page)
    assert "Responses sampled per prompt (GRPO&#x27;s G)." in page


def test_a_preset_in_the_query_fills_the_form_without_javascript(client, owner):
    client.force_login(owner)
    page = client.get("/runs/new/?preset=quickstart").content.decode()
    assert 'name="config.rollout.prompts_per_step" value="16"' in page
    assert 'name="config.sft.enabled" value="on">' in page  # the shipped model is the cold start
    page = client.get("/runs/new/?preset=quickstart-sft").content.decode()
    assert 'name="config.sft.enabled" value="on" checked' in page
    assert re.search(r'name="config.sft.dataset"[^>]* value="tiny-cold-start"', page)
    unknown = client.get("/runs/new/?preset=nope").content.decode()
    assert "Unknown preset &#x27;nope&#x27;" in unknown


def test_stored_datasets_and_reward_configs_are_offered(client, owner):
    builtin_datasets_seed()
    builtin_reward_configs_seed()
    client.force_login(owner)
    page = client.get("/runs/new/").content.decode()
    assert '<option value="gsm8k-test"' in page and 'list="dataset-choices"' in page
    assert "otc_grpo (otc_grpo, built-in)" in page


def test_launch_creates_a_managed_queued_run_with_the_submitted_config(
    client, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    config = preset_config("quickstart").model_dump(mode="json")
    config["rollout"]["group_size"] = 4
    data = form_data(config, preset="quickstart", tags="cpu, smoke", new_experiment="form tests")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post("/runs/new/", data)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.managed, run.status, run.preset, run.tags) == (True, "queued", "quickstart", ["cpu", "smoke"])
    assert run.experiment == Experiment.objects.get(owner=owner, name="form tests")
    assert run.config["rollout"]["group_size"] == 4
    assert run.config["sft"] == config["sft"] and run.config["optim"] == config["optim"]
    assert "_queue_launch" in [callback.__name__ for callback in callbacks]


def test_errors_are_shown_at_their_fields_and_nothing_is_created(client, owner):
    client.force_login(owner)
    config = default_config()
    data = form_data(config, name="")
    data["config.rollout.group_size"] = "0"
    data["config.optim.learning_rate"] = "fast"
    data["config.reward.params"] = '{"exec_error_penalty": "lots"}'
    response = client.post("/runs/new/", data)
    assert response.status_code == 400 and Run.objects.count() == 0
    page = response.content.decode()
    assert "Give the run a name." in page
    assert re.search(r'data-path="optim.learning_rate">.*?must be a number', page, re.S)
    data["name"] = "named"
    data["config.optim.learning_rate"] = "1e-5"
    page = client.post("/runs/new/", data).content.decode()
    group = re.search(r'data-path="rollout.group_size">(.*?)</div>', page, re.S).group(1)
    assert "field-error" in group and "greater than or equal to 1" in group
    params = re.search(r'data-path="reward.params">(.*?)</div>', page, re.S).group(1)
    assert "exec_error_penalty" in params and "field-error" in params
    assert Run.objects.count() == 0


def test_a_stored_reward_config_replaces_the_reward_section(client, owner):
    builtin_reward_configs_seed()
    otc = RewardConfig.objects.get(name="otc_grpo")
    client.force_login(owner)
    data = form_data(default_config(), reward_config=str(otc.pk))
    data["config.reward.params"] = "not even json"  # ignored: the stored config replaces it
    assert client.post("/runs/new/", data).status_code == 302
    assert Run.objects.get().config["reward"]["name"] == "otc_grpo"
