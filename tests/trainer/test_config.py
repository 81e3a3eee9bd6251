from typing import Any

import pytest

from trainer.config import (
    ConfigError,
    RunConfig,
    config_json_schema,
    default_config,
    merge_overrides,
    validate_config,
)
from trainer.rewards import REWARD_NAMES


def _errors(data: Any) -> dict[str, list[str]]:
    with pytest.raises(ConfigError) as info:
        validate_config(data)
    return info.value.errors


def test_empty_config_validates_to_defaults() -> None:
    assert validate_config({}) == RunConfig()


def test_default_config_validates() -> None:
    assert validate_config(default_config()).model_dump(mode="json") == default_config()


def test_defaults_describe_a_tiny_cpu_run() -> None:
    config = RunConfig()

    assert config.model.name_or_path == "tirlab/tiny-char"
    assert config.model.dtype == "float32"
    assert config.engine == "hf"
    assert config.data.train_dataset == "arithmetic"
    assert config.tools.protocol == "python_markdown"
    assert config.reward.name == "torl"
    assert config.schedule.max_steps == 20


def test_default_reward_params_are_filled_in() -> None:
    assert default_config()["reward"] == {
        "name": "torl",
        "params": {"answer_from": "response", "exec_error_penalty": 0.0},
    }


@pytest.mark.parametrize(
    ("section", "field", "value", "message"),
    [
        ("rollout", "group_size", 0, "Input should be greater than or equal to 1"),
        ("rollout", "prompts_per_step", 0, "Input should be greater than or equal to 1"),
        ("rollout", "temperature", -0.1, "Input should be greater than or equal to 0"),
        ("rollout", "top_p", 0, "Input should be greater than 0"),
        ("rollout", "top_p", 1.5, "Input should be less than or equal to 1"),
        ("rollout", "trajectories_to_report", -1, "Input should be greater than or equal to 0"),
        ("rollout", "replicas", 0, "Input should be greater than or equal to 1"),
        ("rollout", "sandbox_actors", 0, "Input should be greater than or equal to 1"),
        ("data", "max_prompt_tokens", 0, "Input should be greater than or equal to 1"),
        ("data", "max_response_tokens", 0, "Input should be greater than or equal to 1"),
        ("tools", "max_tool_calls", -1, "Input should be greater than or equal to 0"),
        ("tools", "sandbox_timeout_s", 0, "Input should be greater than 0"),
        ("optim", "learning_rate", 0, "Input should be greater than 0"),
        ("optim", "grad_clip", -1, "Input should be greater than or equal to 0"),
        ("optim", "ppo_epochs", 0, "Input should be greater than or equal to 1"),
        ("grpo", "kl_coef", -0.1, "Input should be greater than or equal to 0"),
        ("filtering", "accuracy_min", -0.1, "Input should be greater than or equal to 0"),
        ("filtering", "accuracy_max", 1.1, "Input should be less than or equal to 1"),
        ("schedule", "max_steps", 0, "Input should be greater than or equal to 1"),
    ],
)
def test_range_error_surfaces_under_its_dotted_path(section: str, field: str, value: float, message: str) -> None:
    assert _errors({section: {field: value}}) == {f"{section}.{field}": [message]}


def test_unknown_top_level_key_is_refused() -> None:
    assert _errors({"bogus": 1}) == {"bogus": ["Extra inputs are not permitted"]}


def test_unknown_nested_key_is_refused() -> None:
    assert _errors({"grpo": {"clip": 0.2}}) == {"grpo.clip": ["Extra inputs are not permitted"]}


def test_unknown_literal_value_is_refused() -> None:
    assert list(_errors({"engine": "sglang"})) == ["engine"]


def test_errors_of_several_fields_are_all_reported() -> None:
    assert set(_errors({"seed": -1, "rollout": {"group_size": 0}})) == {"seed", "rollout.group_size"}


def test_non_object_config_is_a_non_field_error() -> None:
    assert list(_errors([1])) == ["__all__"]


def test_non_finite_number_is_refused() -> None:
    assert list(_errors({"rollout": {"temperature": float("nan")}})) == ["rollout.temperature"]


def test_unknown_reward_name_is_reported_at_reward_name() -> None:
    errors = _errors({"reward": {"name": "foo"}})

    assert list(errors) == ["reward.name"]
    assert errors["reward.name"][0].startswith("unknown reward 'foo'; choose one of: ")
    assert "torl" in errors["reward.name"][0]


def test_reward_param_error_is_reported_at_reward_params_field() -> None:
    assert _errors({"reward": {"name": "otc_ppo", "params": {"c": 0}}}) == {
        "reward.params.c": ["Input should be greater than 0"]
    }


def test_weighted_reward_terms_are_validated_recursively() -> None:
    config = {"reward": {"name": "weighted", "params": {"terms": [{"name": "otc_grpo", "params": {"c": 0}}]}}}

    assert _errors(config) == {"reward.params.terms.0.params.c": ["Input should be greater than 0"]}


def test_reward_params_get_their_defaults() -> None:
    config = validate_config({"reward": {"name": "otc_grpo", "params": {"global_min": True}}})

    assert config.reward.params == {"alpha": 1.0, "c": 3.0, "wrong_reward": 0.0, "global_min": True}


def test_rollouts_are_local_by_default() -> None:
    rollout = RunConfig().rollout

    assert (rollout.backend, rollout.replicas, rollout.sandbox_actors) == ("local", 1, 1)


def test_replicas_and_sandbox_actors_need_the_ray_backend() -> None:
    message = "needs backend 'ray'; the local backend runs one rollout in the trainer process"

    assert _errors({"rollout": {"replicas": 2, "sandbox_actors": 3}}) == {
        "rollout.replicas": [message],
        "rollout.sandbox_actors": [message],
    }


def test_ray_backend_takes_replicas_and_sandbox_actors() -> None:
    rollout = validate_config({"rollout": {"backend": "ray", "replicas": 4, "sandbox_actors": 2}}).rollout

    assert (rollout.backend, rollout.replicas, rollout.sandbox_actors) == ("ray", 4, 2)


def test_accuracy_min_above_accuracy_max_is_refused() -> None:
    errors = _errors({"filtering": {"accuracy_min": 0.8, "accuracy_max": 0.05}})

    assert list(errors) == ["filtering.accuracy_min"]


def test_zerotir_accuracy_band_is_accepted() -> None:
    config = validate_config({"filtering": {"accuracy_min": 0.05, "accuracy_max": 0.8}})

    assert (config.filtering.accuracy_min, config.filtering.accuracy_max) == (0.05, 0.8)


def test_sft_without_dataset_is_refused() -> None:
    for model in ("smollm2-135m-instruct", "tirlab/tiny-char", "tirlab/tiny-char-init"):
        errors = _errors({"model": {"name_or_path": model}, "sft": {"enabled": True}})
        assert list(errors) == ["sft.dataset"] and "'tiny-cold-start'" in errors["sft.dataset"][0]


def test_builtin_sft_traces_must_be_in_the_runs_protocol() -> None:
    errors = _errors({"sft": {"enabled": True, "dataset": "retool-mini-sft"}})
    assert list(errors) == ["sft.dataset"] and "written in the 'retool' protocol" in errors["sft.dataset"][0]
    config = {"tools": {"protocol": "retool"}, "sft": {"enabled": True, "dataset": "retool-mini-sft"}}
    assert validate_config(config).sft.dataset == "retool-mini-sft"


def test_sft_with_dataset_is_accepted_for_other_models() -> None:
    config = {"model": {"name_or_path": "smollm2-135m-instruct"}, "sft": {"enabled": True, "dataset": "dataset:7"}}

    assert validate_config(config).sft.dataset == "dataset:7"


def test_config_error_message_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"rollout\.group_size: "):
        validate_config({"rollout": {"group_size": 0}})


def test_merge_overrides_merges_nested_dicts() -> None:
    base = {"rollout": {"group_size": 8, "temperature": 1.0}, "seed": 0}

    merged = merge_overrides(base, {"rollout": {"group_size": 4}})

    assert merged == {"rollout": {"group_size": 4, "temperature": 1.0}, "seed": 0}


def test_merge_overrides_replaces_non_dict_values() -> None:
    base = {"data": {"val_dataset": "gsm8k"}, "tags": [1, 2]}

    merged = merge_overrides(base, {"data": {"val_dataset": None}, "tags": [3]})

    assert merged == {"data": {"val_dataset": None}, "tags": [3]}


def test_merge_overrides_adds_new_keys() -> None:
    assert merge_overrides({"a": {"b": 1}}, {"a": {"c": 2}, "d": 3}) == {"a": {"b": 1, "c": 2}, "d": 3}


def test_merge_overrides_leaves_its_inputs_untouched() -> None:
    base = {"rollout": {"group_size": 8}}
    overrides = {"rollout": {"group_size": 4}, "reward": {"params": {"c": 1.0}}}

    merged = merge_overrides(base, overrides)
    merged["reward"]["params"]["c"] = 2.0

    assert base == {"rollout": {"group_size": 8}}
    assert overrides == {"rollout": {"group_size": 4}, "reward": {"params": {"c": 1.0}}}


def test_fork_with_overrides_validates() -> None:
    forked = merge_overrides(default_config(), {"grpo": {"scale_by_std": False}, "schedule": {"max_steps": 5}})

    config = validate_config(forked)

    assert (config.grpo.scale_by_std, config.schedule.max_steps) == (False, 5)


def _walk_properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    objects = {"RunConfig": schema, **schema["$defs"]}
    return [
        (f"{owner}.{field}", spec)
        for owner, obj in objects.items()
        for field, spec in obj.get("properties", {}).items()
    ]


def test_schema_has_a_description_for_every_property() -> None:
    properties = _walk_properties(config_json_schema())

    assert len(properties) > 40
    assert [path for path, spec in properties if not spec.get("description")] == []


def test_schema_covers_every_section() -> None:
    assert set(config_json_schema()["properties"]) == {
        "seed",
        "model",
        "engine",
        "data",
        "tools",
        "reward",
        "rollout",
        "optim",
        "grpo",
        "filtering",
        "sft",
        "cluster",
        "schedule",
    }


def test_schema_lists_reward_names() -> None:
    assert config_json_schema()["$defs"]["RewardSpec"]["properties"]["name"]["enum"] == list(REWARD_NAMES)


def test_snapshot_round_trips() -> None:
    config = validate_config(
        {
            "seed": 3,
            "model": {"name_or_path": "smollm2-135m-instruct", "dtype": "bfloat16"},
            "data": {"train_dataset": "dataset:12", "val_dataset": "gsm8k"},
            "reward": {
                "name": "weighted",
                "params": {"terms": [{"name": "artist"}, {"name": "otc_ppo", "weight": 0.3}]},
            },
            "filtering": {"accuracy_min": 0.05, "accuracy_max": 0.8},
            "sft": {"enabled": True, "dataset": "dataset:13"},
        }
    )

    snapshot = config.model_dump(mode="json")

    assert validate_config(snapshot) == config
    assert validate_config(snapshot).model_dump(mode="json") == snapshot


def test_the_shortcut_filter_needs_the_python_markdown_protocol() -> None:
    errors = _errors({"tools": {"protocol": "retool"}, "filtering": {"drop_shortcut": True}})
    assert (
        list(errors) == ["filtering.drop_shortcut"]
        and "needs tools.protocol 'python_markdown'" in errors["filtering.drop_shortcut"][0]
    )
    assert validate_config({"filtering": {"drop_shortcut": True}}).filtering.drop_shortcut


def test_a_protocol_is_a_run_choice_once_its_environment_is_registered() -> None:
    # A protocol whose environment is not registered renders and previews traces, and a run choosing it is refused by
    # its field, not started to fail at its first rollout (search_r1 was one until 'search' landed).
    from trainer.config import RUN_PROTOCOLS
    from trainer.envs import ENVIRONMENT_NAMES
    from trainer.protocols import PROTOCOL_NAMES, default_environment

    assert RUN_PROTOCOLS == tuple(name for name in PROTOCOL_NAMES if default_environment(name) in ENVIRONMENT_NAMES)
    assert "search_r1" in RUN_PROTOCOLS
    assert "search_r1" in config_json_schema()["$defs"]["ToolConfig"]["properties"]["protocol"]["enum"]


def test_a_run_evaluates_on_several_datasets_after_its_val_dataset() -> None:
    data = validate_config({"data": {"val_dataset": "torl-test", "extra_val_datasets": ["gsm8k-test"]}}).data

    assert (data.val_dataset, data.extra_val_datasets) == ("torl-test", ["gsm8k-test"])


def test_extra_val_datasets_need_a_val_dataset() -> None:
    errors = _errors({"data": {"extra_val_datasets": ["gsm8k-test"]}})

    assert errors == {"data.extra_val_datasets": ["needs data.val_dataset: name the first dataset to evaluate there"]}


def test_an_eval_temperature_needs_more_than_one_sample() -> None:
    errors = _errors({"schedule": {"eval_temperature": 0.6}})

    assert errors == {
        "schedule.eval_temperature": ["needs schedule.eval_pass_k > 1: one sample per prompt is evaluated greedily"]
    }
    assert validate_config({"schedule": {"eval_pass_k": 8, "eval_temperature": 0.6}}).schedule.eval_temperature == 0.6
