import json

import pytest

from trainer.rewards import REWARD_NAMES
from webapp.core.tokens import hash_secret
from webapp.datasets.services import builtin_datasets_seed
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.runs.models import Run
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db


def create(api, **body):
    body.setdefault("name", "torl baseline")
    return api.post("/api/v1/runs/", body, format="json")


def test_a_launched_run_is_queued_with_its_place_in_line_and_no_token(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        first = create(api, name="first").json()
        second = create(api, name="second").json()
    # The launch is queued for the worker once the run commits; the worker mints the trainer's token.
    assert [c.__name__ for c in callbacks].count("_queue_launch") == 2
    assert (first["managed"], first["ingest_token"], first["queue_position"]) == (True, None, 1)
    assert second["queue_position"] == 2
    assert Run.objects.get(pk=first["id"]).token_hash == ""
    assert api.get(f"/api/v1/runs/{second['id']}/").json()["queue_position"] == 2


def test_created_run_is_queued_with_a_resolved_snapshot_and_a_token_shown_once(api):
    response = create(api, launch=False, config={"rollout": {"group_size": 16}, "reward": {"name": "torl"}})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued"
    assert body["managed"] is False and body["queue_position"] is None
    assert body["config"]["rollout"]["group_size"] == 16
    assert body["config"]["reward"] == {
        "name": "torl",
        "params": {"answer_from": "response", "exec_error_penalty": 0.0},
    }
    run = Run.objects.get(pk=body["id"])
    assert run.token_hash == hash_secret(body["ingest_token"])
    assert "ingest_token" not in api.get(f"/api/v1/runs/{run.pk}/").json()


def test_invalid_config_answers_field_errors_and_creates_nothing(api):
    response = create(api, config={"rollout": {"group_size": 0}, "bogus": 1, "reward": {"name": "nope"}})
    assert response.status_code == 400
    errors = response.json()
    assert {"config.rollout.group_size", "config.bogus", "config.reward.name"} <= set(errors)
    assert Run.objects.count() == 0


def test_builtin_dataset_name_resolves_to_its_file_and_checksum(api):
    gsm8k = builtin_datasets_seed()[0]
    body = create(api, config={"data": {"train_dataset": "gsm8k"}}).json()
    assert body["config"]["data"]["train_dataset"] == gsm8k.path
    assert body["sources"]["data.train_dataset"]["checksum"] == gsm8k.checksum


def test_a_dataset_reference_must_be_one_the_user_can_see(api, stranger):
    from webapp.datasets.models import Dataset

    theirs = Dataset.objects.create(
        name="private", owner=stranger, format="jsonl_qa", row_count=1, size_bytes=1, checksum="x", path="/x"
    )
    response = create(api, config={"data": {"train_dataset": f"dataset:{theirs.pk}"}})
    assert response.status_code == 400
    assert "config.data.train_dataset" in response.json()


def test_reward_config_is_copied_into_the_snapshot_not_referenced(api, owner):
    reward = RewardConfig.objects.create(
        name="torl -0.5", owner=owner, reward="torl", params={"exec_error_penalty": 0.5}
    )
    body = create(api, reward_config=reward.pk).json()
    reward.params = {"exec_error_penalty": 0.1}
    reward.save()
    assert Run.objects.get(pk=body["id"]).config["reward"]["params"]["exec_error_penalty"] == 0.5


def test_fork_applies_overrides_and_records_its_parent(api):
    parent = create(api, config={"rollout": {"group_size": 16, "temperature": 0.7}}).json()
    response = api.post(
        f"/api/v1/runs/{parent['id']}/fork/", {"overrides": {"rollout": {"group_size": 4}}}, format="json"
    )
    assert response.status_code == 201, response.json()
    child = response.json()
    assert child["parent"] == parent["id"] and child["parent_relation"] == "fork"
    assert child["config"]["rollout"]["group_size"] == 4
    assert child["config"]["rollout"]["temperature"] == 0.7


def test_fork_to_another_reward_replaces_its_parameters(api):
    parent = create(api, config={"reward": {"name": "torl", "params": {"exec_error_penalty": 0.5}}}).json()
    child = api.post(
        f"/api/v1/runs/{parent['id']}/fork/", {"overrides": {"reward": {"name": "otc_grpo"}}}, format="json"
    ).json()
    assert child["config"]["reward"]["name"] == "otc_grpo"
    assert "exec_error_penalty" not in child["config"]["reward"]["params"]


def test_fork_with_invalid_override_is_refused(api):
    parent = create(api).json()
    response = api.post(f"/api/v1/runs/{parent['id']}/fork/", {"overrides": {"grpo": {"clip_low": "x"}}}, format="json")
    assert response.status_code == 400 and "config.grpo.clip_low" in response.json()


def test_cancel_ends_an_active_run_and_refuses_a_finished_one(api):
    run = create(api).json()
    response = api.post(f"/api/v1/runs/{run['id']}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert api.post(f"/api/v1/runs/{run['id']}/cancel/").status_code == 409


def test_an_active_run_cannot_be_deleted(api):
    run = create(api).json()
    assert api.delete(f"/api/v1/runs/{run['id']}/").status_code == 409
    api.post(f"/api/v1/runs/{run['id']}/cancel/")
    assert api.delete(f"/api/v1/runs/{run['id']}/").status_code == 204


def test_status_cannot_be_set_through_update(api):
    run = create(api).json()
    response = api.patch(f"/api/v1/runs/{run['id']}/", {"status": "succeeded", "name": "renamed"}, format="json")
    assert response.status_code == 200
    assert Run.objects.get(pk=run["id"]).status == "queued"


def test_runs_filter_by_status_experiment_and_tags(api, experiment, make_run):
    a, _ = make_run(name="a", experiment=experiment, tags=["torl", "c1"])
    b, _ = make_run(name="b", tags=["torl"])
    run_transition(run=b, status="cancelled")

    def names(query: str) -> list[str]:
        return sorted(r["name"] for r in api.get(f"/api/v1/runs/?{query}").json()["results"])

    assert names("status=queued") == ["a"]
    assert names("status=queued&status=cancelled") == ["a", "b"]
    assert names(f"experiment={experiment.pk}") == ["a"]
    assert names("tags=torl") == ["a", "b"]
    assert names("tags=torl,c1") == ["a"]
    assert names("created_after=2000-01-01T00:00:00Z") == ["a", "b"]
    assert names("created_before=2000-01-01T00:00:00Z") == []


def test_run_list_makes_a_fixed_number_of_queries(api, make_run, django_assert_max_num_queries):
    for i in range(20):
        make_run(name=f"r{i}")
    with django_assert_max_num_queries(6):
        assert len(api.get("/api/v1/runs/").json()["results"]) == 20


def ingest(api, run_id, token, payload):
    return api.post(
        f"/api/v1/runs/{run_id}/ingest",
        json.dumps(payload),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def trajectory(step, prompt, sample, *, correct, tool_status=None, text="2+2"):
    turns = [{"kind": "model", "text": f"compute {text}"}]
    if tool_status:
        turns.append({"kind": "tool", "text": "4", "call": "print(2+2)", "status": tool_status})
    return {
        "step": step,
        "prompt_index": prompt,
        "sample_index": sample,
        "prompt": f"What is {text}?",
        "turns": turns,
        "final_answer": "4",
        "ground_truth": "4",
        "reward": 1.0 if correct else -1.0,
        "correct": correct,
        "tool_call_count": 1 if tool_status else 0,
    }


def test_trajectories_filter_and_page_with_a_cursor(api, run_and_token):
    run, token = run_and_token
    items = [
        trajectory(step, prompt, sample, correct=sample % 2 == 0, tool_status=["ok", "error", None][sample % 3])
        for step in range(3)
        for prompt in range(2)
        for sample in range(4)
    ]
    items.append(trajectory(3, 0, 0, correct=True, text="needle 7*6"))
    assert ingest(api, run.pk, token, {"trajectories": items}).status_code == 200
    url = f"/api/v1/runs/{run.pk}/trajectories"

    assert len(api.get(f"{url}?step=1").json()["results"]) == 8
    assert all(t["correct"] for t in api.get(f"{url}?correct=true").json()["results"])
    assert all(t["has_tool_error"] for t in api.get(f"{url}?has_tool_error=true").json()["results"])
    assert [t["step"] for t in api.get(f"{url}?q=NEEDLE").json()["results"]] == [3]
    assert api.get(f"{url}?correct=maybe").status_code == 400

    seen, page = [], api.get(f"{url}?page_size=5").json()
    while True:
        seen += [(t["step"], t["prompt_index"], t["sample_index"]) for t in page["results"]]
        if not page["next"]:
            break
        page = api.get(page["next"]).json()
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == 25


def test_logs_list_trainer_and_tirlab_lines_in_order(api, run_and_token):
    run, token = run_and_token
    ingest(api, run.pk, token, {"logs": [{"seq": 1, "message": "loading model"}]})
    messages = [line["message"] for line in api.get(f"/api/v1/runs/{run.pk}/logs").json()["results"]]
    assert messages[0].startswith("run created")
    # The trainer's first report is what starts a run created with launch=false.
    assert messages[1:] == ["loading model", "status queued → starting", "status starting → running"]


def test_reward_catalog_lists_every_reward_with_its_schema(api):
    catalog = api.get("/api/v1/rewards/").json()
    assert [r["name"] for r in catalog] == list(REWARD_NAMES)  # the registry's order: the combinator last
    assert all(r["description"] and r["schema"]["type"] == "object" for r in catalog)


def test_reward_config_params_are_validated_with_field_errors(api):
    response = api.post(
        "/api/v1/reward-configs/", {"name": "bad", "reward": "otc_ppo", "params": {"c": -1}}, format="json"
    )
    assert response.status_code == 400 and "params.c" in response.json()
    ok = api.post("/api/v1/reward-configs/", {"name": "otc", "reward": "otc_ppo", "params": {"c": 2}}, format="json")
    assert ok.status_code == 201 and ok.json()["params"]["alpha"] == 1.0


def test_builtin_reward_presets_are_read_only(api):
    torl = builtin_reward_configs_seed()[0]
    assert api.get(f"/api/v1/reward-configs/{torl.pk}/").status_code == 200
    assert api.patch(f"/api/v1/reward-configs/{torl.pk}/", {"params": {}}, format="json").status_code == 403


def test_run_config_schema_is_served_with_defaults(api):
    body = api.get("/api/v1/run-config/schema/").json()
    assert "rollout" in body["schema"]["properties"] and body["defaults"]["rollout"]["group_size"] >= 1


def test_trajectory_step_beyond_any_step_is_a_field_error(api, run_and_token):
    run, _ = run_and_token
    response = api.get(f"/api/v1/runs/{run.pk}/trajectories?step=99999999999")
    assert response.status_code == 400 and "step" in response.json()


def test_a_run_created_from_a_preset_starts_from_its_config(api):
    """`preset` is the config the run starts from, not only a label: the README's curl gives the
    quickstart with 20 steps, not the trainer's defaults called quickstart."""
    from trainer.presets import preset_config

    response = create(api, launch=False, preset="toolrl-mini", config={"schedule": {"max_steps": 20}})
    assert response.status_code == 201, response.json()
    config, preset = response.json()["config"], preset_config("toolrl-mini").model_dump(mode="json")
    assert config["schedule"]["max_steps"] == 20 != preset["schedule"]["max_steps"]
    assert config["tools"] == preset["tools"] and config["tools"]["protocol"] == "tool_call_json"
    assert config["reward"] == preset["reward"] and config["model"] == preset["model"]
    # Another reward replaces the preset's, parameters and all.
    body = create(api, launch=False, preset="toolrl-mini", config={"reward": {"name": "torl"}}).json()
    assert body["config"]["reward"]["name"] == "torl" and "format_weight" not in body["config"]["reward"]["params"]


def test_an_unknown_preset_is_refused_by_name(api):
    response = create(api, launch=False, preset="tor1", config={})
    assert response.status_code == 400
    assert "Unknown preset 'tor1'" in json.dumps(response.json())
