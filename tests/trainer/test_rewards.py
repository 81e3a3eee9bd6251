"""The score_group API, the registry, RewardState and the weighted reward."""

import pytest

from trainer.contract import is_metric_key
from trainer.rewards import REWARD_NAMES, RewardParamsError, RewardState, score, score_group
from trainer.rewards.base import REWARDS
from trainer.trajectory import Completion, RewardResult, ToolExecution

RIGHT = "```python\nprint(6 * 7)\n```\n```output\n42\n```\nSo the answer is \\boxed{42}."
WRONG = "I guess \\boxed{41}."


def test_every_reward_name_is_registered() -> None:
    assert set(REWARDS.names()) == set(REWARD_NAMES)


@pytest.mark.parametrize("name", REWARD_NAMES)
def test_empty_group_scores_to_an_empty_list(name: str) -> None:
    assert score_group(name, [], "42") == []


def test_score_group_returns_one_result_per_completion() -> None:
    results = score_group("torl", [RIGHT, WRONG], "42")
    assert [r.total for r in results] == [1.0, -1.0]
    assert all(isinstance(r, RewardResult) for r in results)


def test_score_group_validates_params() -> None:
    with pytest.raises(RewardParamsError):
        score_group("torl", [RIGHT], "42", params={"exec_error_penalty": -1})


def test_unknown_reward_is_a_params_error() -> None:
    with pytest.raises(RewardParamsError):
        score_group("nope", [RIGHT], "42")


def test_score_is_a_group_of_one() -> None:
    assert score("torl", RIGHT, "42").correct


def test_completion_object_is_read_with_its_own_protocol() -> None:
    text = "<code>print(1)</code><interpreter>\n1\n</interpreter>\n<answer>\\boxed{7}</answer>"
    result = score("torl", Completion(text=text, protocol="retool"), "7")
    assert result.total == 1.0


def test_completion_without_executions_counts_calls_from_text() -> None:
    result = score("retool", Completion(text=RIGHT, protocol="python_markdown"), "41", params={"turn_shaping": True})
    assert result.details["tool_calls"] == 1


def test_non_text_completion_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        score_group("torl", [42], "42")  # type: ignore[list-item]


def test_reward_state_round_trips_through_a_dict() -> None:
    state = RewardState(min_tool_calls={"train": {"p1": 2, "p2": 0}, "val": {"p1": 1}})
    assert RewardState.from_dict(state.to_dict()) == state


def test_reward_state_from_a_checkpoint_without_splits_is_the_training_minimum() -> None:
    assert RewardState.from_dict({"min_tool_calls": {"p1": 2}}) == RewardState(min_tool_calls={"train": {"p1": 2}})


def test_reward_state_from_nothing_is_empty() -> None:
    assert RewardState.from_dict(None) == RewardState()


def test_weighted_sums_weighted_terms() -> None:
    params = {"terms": [{"name": "torl", "weight": 0.5}, {"name": "otc_ppo", "weight": 2.0}]}
    result = score("weighted", RIGHT, "42", params=params)
    # torl +1 * 0.5, otc_ppo cos(pi/5) * 2 for one call
    assert result.components["torl"] == pytest.approx(0.5)
    assert result.components["otc_ppo"] == pytest.approx(2 * 0.8090169943749475)
    assert result.total == pytest.approx(0.5 + 2 * 0.8090169943749475)


def test_weighted_names_a_repeated_term_apart_with_a_name_the_dashboard_stores() -> None:
    params = {"terms": [{"name": "torl"}, {"name": "torl", "weight": 2}]}
    components = score("weighted", WRONG, "42", params=params).components
    assert components == {"torl": -1.0, "torl@2": -2.0}
    assert all(is_metric_key(f"reward/{name}/mean") for name in components)


def test_weighted_correct_is_the_first_terms() -> None:
    params = {"terms": [{"name": "zerotir"}, {"name": "torl"}]}
    # Right answer but no <answer> block: zerotir says wrong, torl right; the first term decides.
    assert score("weighted", RIGHT, "42", params=params).correct is False


def test_weighted_passes_term_params() -> None:
    failed = Completion(
        text="```python\n1/0\n```\n```output\nZeroDivisionError: division by zero\n```\n\\boxed{42}",
        executions=(
            ToolExecution(
                call="1/0",
                status="error",
                output="ZeroDivisionError: division by zero",
                stderr="ZeroDivisionError: division by zero",
            ),
        ),
    )
    params = {"terms": [{"name": "torl", "params": {"exec_error_penalty": 0.5}}]}
    assert score("weighted", failed, "42", params=params).total == 0.5


def test_weighted_shares_otc_grpo_state() -> None:
    state = RewardState()
    params = {"terms": [{"name": "otc_grpo", "params": {"global_min": True}}]}
    score_group("weighted", [RIGHT], "42", params=params, prompt_id="p", state=state)
    assert state.min_tool_calls == {"train": {"p": 1}}
