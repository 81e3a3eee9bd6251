from typing import Any

import pytest

from trainer.rewards import (
    REWARD_DESCRIPTIONS,
    REWARD_NAMES,
    RewardParamsError,
    reward_defaults,
    reward_params_model,
    reward_params_schema,
    validate_reward_params,
)
from trainer.rewards.weighted import term_rewards


def _errors(name: Any, params: Any) -> dict[str, list[str]]:
    with pytest.raises(RewardParamsError) as info:
        validate_reward_params(name, params)
    return info.value.errors


def test_every_papers_reward_is_registered_by_name_and_the_combinator_comes_last() -> None:
    papers = (
        "artist",
        "artist_fc",
        "otc_grpo",
        "otc_ppo",
        "retool",
        "search_r1",
        "swe",
        "tool_n1",
        "toolrl",
        "torl",
        "zerotir",
    )
    assert REWARD_NAMES == (*papers, "weighted")


def test_weighted_terms_accept_every_reward_but_weighted() -> None:
    assert set(term_rewards()) == set(REWARD_NAMES) - {"weighted"}
    term_schema = reward_params_schema("weighted")["$defs"]["WeightedTerm"]["properties"]["name"]
    assert set(term_schema["enum"]) == set(REWARD_NAMES) - {"weighted"}


def test_every_reward_has_a_description() -> None:
    assert set(REWARD_DESCRIPTIONS) == set(REWARD_NAMES)
    assert all(text.strip() for text in REWARD_DESCRIPTIONS.values())


def test_defaults_come_from_the_papers() -> None:
    defaults = reward_defaults()

    assert defaults["torl"] == {"exec_error_penalty": 0.0, "answer_from": "response"}
    assert defaults["retool"] == {"turn_shaping": False}
    assert defaults["otc_ppo"] == {"alpha": 1.0, "c": 3.0, "wrong_reward": 0.0}
    assert defaults["otc_grpo"] == {"alpha": 1.0, "c": 3.0, "wrong_reward": 0.0, "global_min": False}
    assert defaults["toolrl"] == {
        "schedule": "constant",
        "with_length": False,
        "schedule_length": False,
        "correct_max1": False,
        "coarse_reward": False,
        "refined_reward": False,
        "intermediate_reward": False,
    }
    assert defaults["tool_n1"] == {}
    assert defaults["zerotir"] == {"format_penalty": 0.0}
    assert defaults["artist"] == {}
    assert defaults["artist_fc"] == {}
    assert defaults["search_r1"] == {
        "format": False,
        "structure_format_score": 0.2,
        "final_format_score": 0.1,
        "retrieval_score": 0.0,
    }


def test_weighted_default_is_a_single_torl_term() -> None:
    assert reward_defaults()["weighted"] == {
        "terms": [{"name": "torl", "weight": 1.0, "params": {"exec_error_penalty": 0.0, "answer_from": "response"}}]
    }


def test_every_default_validates_to_itself() -> None:
    for name, params in reward_defaults().items():
        assert validate_reward_params(name, params) == params


def test_none_params_mean_defaults() -> None:
    assert validate_reward_params("otc_ppo", None) == {"alpha": 1.0, "c": 3.0, "wrong_reward": 0.0}


def test_given_params_override_defaults() -> None:
    assert validate_reward_params("otc_ppo", {"wrong_reward": -1}) == {"alpha": 1.0, "c": 3.0, "wrong_reward": -1.0}


def test_unknown_reward_name_lists_the_choices() -> None:
    assert _errors("foo", {}) == {"name": [f"unknown reward 'foo'; choose one of: {', '.join(REWARD_NAMES)}"]}


def test_unhashable_reward_name_is_an_unknown_name() -> None:
    assert list(_errors(["torl"], {})) == ["name"]


def test_range_error_is_reported_under_params_field() -> None:
    assert _errors("otc_ppo", {"c": 0}) == {"params.c": ["Input should be greater than 0"]}


def test_negative_exec_error_penalty_is_refused() -> None:
    assert list(_errors("torl", {"exec_error_penalty": -0.5})) == ["params.exec_error_penalty"]


def test_unknown_param_is_refused() -> None:
    assert _errors("tool_n1", {"alpha": 1}) == {"params.alpha": ["Extra inputs are not permitted"]}


def test_unknown_toolrl_schedule_is_refused() -> None:
    assert list(_errors("toolrl", {"schedule": "linear"})) == ["params.schedule"]


def test_non_finite_number_is_refused() -> None:
    assert list(_errors("zerotir", {"format_penalty": float("inf")})) == ["params.format_penalty"]


def test_params_that_are_not_an_object_are_refused() -> None:
    assert list(_errors("torl", [1])) == ["params"]


def test_weighted_term_params_are_validated_recursively() -> None:
    errors = _errors("weighted", {"terms": [{"name": "torl"}, {"name": "otc_grpo", "params": {"c": -1, "x": 1}}]})

    assert errors == {
        "params.terms.1.params.c": ["Input should be greater than 0"],
        "params.terms.1.params.x": ["Extra inputs are not permitted"],
    }


def test_weighted_term_params_get_their_defaults() -> None:
    params = validate_reward_params("weighted", {"terms": [{"name": "otc_grpo", "weight": 0.5}]})

    assert params == {
        "terms": [
            {
                "name": "otc_grpo",
                "weight": 0.5,
                "params": {"alpha": 1.0, "c": 3.0, "wrong_reward": 0.0, "global_min": False},
            }
        ]
    }


def test_weighted_term_cannot_be_weighted() -> None:
    assert list(_errors("weighted", {"terms": [{"name": "weighted"}]})) == ["params.terms.0.name"]


def test_weighted_needs_at_least_one_term() -> None:
    assert list(_errors("weighted", {"terms": []})) == ["params.terms"]


def test_error_message_lists_every_field_error() -> None:
    with pytest.raises(RewardParamsError, match=r"params\.c: Input should be greater than 0"):
        validate_reward_params("otc_ppo", {"c": 0})


def test_params_model_is_looked_up_by_name() -> None:
    assert reward_params_model("otc_grpo").model_fields.keys() == {"alpha", "c", "wrong_reward", "global_min"}


def test_params_model_of_unknown_name_raises() -> None:
    with pytest.raises(RewardParamsError):
        reward_params_model("foo")


def test_schema_describes_every_param_of_every_reward() -> None:
    for name in REWARD_NAMES:
        schema = reward_params_schema(name)
        objects = [schema, *schema.get("$defs", {}).values()]
        for obj in objects:
            for field, spec in obj.get("properties", {}).items():
                assert spec.get("description"), f"{name}: {field} has no description"


def test_schema_refuses_extra_params() -> None:
    assert reward_params_schema("torl")["additionalProperties"] is False
