"""torl, retool, otc_ppo, otc_grpo, zerotir and artist: one behaviour per test, paper constants."""

import math

import pytest

from trainer.rewards import RewardState, score, score_group
from trainer.trajectory import Completion, ToolExecution

FENCE = "```"


def pm(*calls: str, answer: str = "42") -> str:
    """A python_markdown response making one call per output given, then boxing `answer`."""
    body = "".join(f"{FENCE}python\nprint(x)\n{FENCE}\n{FENCE}output\n{out}\n{FENCE}\n" for out in calls)
    return body + f"The answer is \\boxed{{{answer}}}."


def executed(text: str, *statuses: str) -> Completion:
    return Completion(text=text, executions=tuple(ToolExecution(call="x", status=s) for s in statuses))


# --- torl ------------------------------------------------------------------------------


def test_torl_correct_is_plus_one() -> None:
    assert score("torl", pm("42"), "42").total == 1.0


def test_torl_wrong_is_minus_one() -> None:
    assert score("torl", pm("41", answer="41"), "42").total == -1.0


def test_torl_no_box_is_minus_one() -> None:
    assert score("torl", "The answer is 42.", "42").total == -1.0


def test_torl_nested_braces_in_the_box() -> None:
    assert score("torl", r"so \boxed{\frac{1}{2}}", "0.5").correct


def test_torl_last_of_several_boxes_counts() -> None:
    assert score("torl", r"\boxed{42} no wait \boxed{41}", "42").total == -1.0


def test_torl_latex_answer_matches_decimal_truth() -> None:
    assert score("torl", r"\boxed{\dfrac{3}{4}}", "0.75").total == 1.0


def test_torl_box_in_tool_output_counts_as_in_torl() -> None:
    text = f"{FENCE}python\nprint(x)\n{FENCE}\n{FENCE}output\n\\boxed{{42}}\n{FENCE}\nDone."
    assert score("torl", text, "42").total == 1.0


def test_torl_model_text_ignores_a_box_in_tool_output() -> None:
    text = f"{FENCE}python\nprint(x)\n{FENCE}\n{FENCE}output\n\\boxed{{42}}\n{FENCE}\nDone."
    assert score("torl", text, "42", params={"answer_from": "model_text"}).total == -1.0


def test_torl_penalises_a_failed_last_call() -> None:
    text = pm("ZeroDivisionError: division by zero")
    assert score("torl", text, "42", params={"exec_error_penalty": 0.5}).total == 0.5


def test_torl_penalty_reads_statuses_of_a_completion() -> None:
    result = score("torl", executed(pm("boom"), "ok", "timeout"), "42", params={"exec_error_penalty": 0.5})
    assert result.components == {"answer": 1.0, "exec_error_penalty": -0.5}


def test_torl_no_penalty_when_the_last_call_succeeded() -> None:
    text = pm("NameError: x", "42")
    assert score("torl", text, "42", params={"exec_error_penalty": 0.5}).total == 1.0


def test_torl_penalises_a_response_without_a_call() -> None:
    # ToRL's execution_pass starts at 0 and only a call that ran sets it to 1.
    assert score("torl", r"\boxed{41}", "42", params={"exec_error_penalty": 0.5}).total == -1.5


def test_torl_penalty_is_off_by_default() -> None:
    assert score("torl", pm("ZeroDivisionError: division by zero"), "42").total == 1.0


# --- retool ----------------------------------------------------------------------------


def rt(calls: int, answer: str) -> str:
    turns = "".join("<code>\n```python\nprint(1)\n```\n</code><interpreter>\n1\n</interpreter>\n" for _ in range(calls))
    return turns + f"<answer>\\boxed{{{answer}}}</answer>"


def test_retool_correct_is_plus_one() -> None:
    assert score("retool", rt(2, "7"), "7").total == 1.0


def test_retool_wrong_is_minus_one_without_shaping() -> None:
    assert score("retool", rt(3, "8"), "7").total == -1.0


def test_retool_shaping_lifts_a_wrong_answer_by_calls() -> None:
    # min(-0.6, -1 + 0.1 * 3) = -0.7
    assert score("retool", rt(3, "8"), "7", params={"turn_shaping": True}).total == pytest.approx(-0.7)


def test_retool_shaping_is_capped_at_minus_point_six() -> None:
    assert score("retool", rt(6, "8"), "7", params={"turn_shaping": True}).total == pytest.approx(-0.6)


def test_retool_shaping_without_calls_stays_minus_one() -> None:
    assert score("retool", rt(0, "8"), "7", params={"turn_shaping": True}).total == -1.0


def test_retool_shaping_leaves_correct_answers_alone() -> None:
    assert score("retool", rt(4, "7"), "7", params={"turn_shaping": True}).total == 1.0


# --- otc_ppo ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [0, 1, 2, 5])
def test_otc_ppo_scales_correct_by_cos(m: int) -> None:
    expected = math.cos(m * math.pi / (2 * m + 3))
    assert score("otc_ppo", pm(*["1"] * m), "42").total == pytest.approx(expected)


def test_otc_ppo_wrong_scores_zero() -> None:
    assert score("otc_ppo", pm("1", answer="41"), "42").total == 0.0


def test_otc_ppo_wrong_reward_is_not_scaled() -> None:
    assert score("otc_ppo", pm("1", "1", answer="41"), "42", params={"wrong_reward": -1}).total == -1.0


def test_otc_ppo_alpha_and_c() -> None:
    result = score("otc_ppo", pm("1"), "42", params={"alpha": 2.0, "c": 1.0})
    assert result.total == pytest.approx(2 * math.cos(math.pi / 3))


# --- otc_grpo --------------------------------------------------------------------------


def test_otc_grpo_optimum_scores_one_and_more_calls_less() -> None:
    group = [pm("1"), pm("1", "1"), pm("1", "1", "1")]
    totals = [r.total for r in score_group("otc_grpo", group, "42")]
    # n = 1: f(2,1) = 4/3 -> sin(2pi/3); f(3,1) = 3/2 -> sin(3pi/4)
    assert totals == pytest.approx([1.0, math.sin(2 * math.pi / 3), math.sin(3 * math.pi / 4)])


def test_otc_grpo_zero_optimum_uses_cos_for_calls() -> None:
    totals = [r.total for r in score_group("otc_grpo", [pm(), pm("1", "1")], "42")]
    assert totals == pytest.approx([1.0, math.cos(2 * math.pi / 7)])


def test_otc_grpo_wrong_completions_do_not_set_the_optimum() -> None:
    results = score_group("otc_grpo", [pm(answer="41"), pm("1", "1")], "42")
    assert [r.total for r in results] == [0.0, 1.0]
    assert results[1].details["optimal_calls"] == 2


def test_otc_grpo_all_wrong_scores_wrong_reward() -> None:
    results = score_group("otc_grpo", [pm(answer="1"), pm("1", answer="2")], "42", params={"wrong_reward": -1})
    assert [r.total for r in results] == [-1.0, -1.0]


def test_otc_grpo_global_min_remembers_the_fewest_calls_per_prompt() -> None:
    state = RewardState()
    score_group("otc_grpo", [pm("1", "1")], "42", params={"global_min": True}, prompt_id="p", state=state)
    result = score_group(
        "otc_grpo", [pm("1", "1", "1")], "42", params={"global_min": True}, prompt_id="p", state=state
    )[0]
    # n = 2 from the earlier step: f(3, 2) = 12/5 -> sin(2.4 pi / 4)
    assert result.total == pytest.approx(math.sin(2.4 * math.pi / 4))
    assert state.min_tool_calls == {"train": {"p": 2}}


def test_otc_grpo_global_min_keys_by_prompt() -> None:
    state = RewardState(min_tool_calls={"train": {"other": 0}})
    score_group("otc_grpo", [pm("1")], "42", params={"global_min": True}, prompt_id="p", state=state)
    assert state.min_tool_calls == {"train": {"other": 0, "p": 1}}


def test_otc_grpo_without_global_min_ignores_the_state() -> None:
    state = RewardState(min_tool_calls={"train": {"p": 0}})
    result = score_group("otc_grpo", [pm("1")], "42", prompt_id="p", state=state)[0]
    assert result.total == 1.0


def test_otc_grpo_global_min_needs_a_prompt_id_to_remember() -> None:
    state = RewardState()
    score_group("otc_grpo", [pm("1")], "42", params={"global_min": True}, state=state)
    assert state.min_tool_calls == {}


# --- zerotir ---------------------------------------------------------------------------

VALID = "<think>6*7</think>\n" + pm("42", answer="0").split("The answer")[0] + "<answer>\\boxed{42}</answer>"


def test_zerotir_correct_and_valid_is_one() -> None:
    assert score("zerotir", VALID, "42").total == 1.0


def test_zerotir_wrong_is_zero() -> None:
    assert score("zerotir", VALID, "41").total == 0.0


def test_zerotir_truncated_is_zero_without_penalty() -> None:
    result = score("zerotir", Completion(text=VALID, truncated=True), "42", params={"format_penalty": 1})
    assert result.total == 0.0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (r"<think>x</think> \boxed{42}", "no <answer>"),
        ("<think>x</think><answer>42</answer>", "no \\boxed"),
        (r"<think>x</think></think><answer>\boxed{42}</answer>", "</think> appears 2 times"),
        (r"<answer>\boxed{42}</answer>", "</think> appears 0 times"),
        (r"<think>x</think><answer>\boxed{42}</answer> and some more words after it", "text after"),
    ],
)
def test_zerotir_invalid_format_scores_zero(text: str, problem: str) -> None:
    result = score("zerotir", text, "42")
    assert result.total == 0.0 and problem in result.details["format_problem"]


def test_zerotir_format_penalty_is_subtracted() -> None:
    assert score("zerotir", r"\boxed{42}", "42", params={"format_penalty": 0.5}).total == -0.5


def test_zerotir_allows_a_few_trailing_tokens() -> None:
    assert score("zerotir", r"<think>x</think><answer>\boxed{42}</answer> done.", "42").total == 1.0


def test_zerotir_takes_the_last_box_in_the_answer() -> None:
    assert score("zerotir", r"<think>x</think><answer>\boxed{1} \boxed{42}</answer>", "42").total == 1.0


def test_zerotir_tags_in_tool_output_do_not_count() -> None:
    call = f"{FENCE}python\nprint(s)\n{FENCE}\n{FENCE}output\n</think>\n{FENCE}\n"
    text = f"<think>x</think>{call}<answer>\\boxed{{42}}</answer>"
    assert score("zerotir", text, "42").total == 1.0


# --- artist ----------------------------------------------------------------------------

ARTIST_FULL = (
    "<think>Compute it.</think>\n<python>print(6*7)</python><output>\n42\n</output>\n"
    "<think>So 42.</think>\n<answer>\\boxed{42}</answer>"
)


def test_artist_correct_formatted_successful_call_is_three_and_a_half() -> None:
    result = score("artist", ARTIST_FULL, "42")
    assert result.components == {"answer": 2.0, "format": 0.5, "tool_execution": 1.0}
    assert result.total == 3.5


def test_artist_wrong_answer_keeps_format_and_tool_terms() -> None:
    assert score("artist", ARTIST_FULL, "41").total == 1.5


def test_artist_tool_term_is_the_success_ratio() -> None:
    completion = Completion(
        text=ARTIST_FULL,
        protocol="artist",
        executions=(
            ToolExecution(call="a", status="ok"),
            ToolExecution(call="b", status="error"),
            ToolExecution(call="c", status="ok"),
            ToolExecution(call="d", status="timeout"),
        ),
    )
    assert score("artist", completion, "42").components["tool_execution"] == 0.5


def test_artist_error_output_in_text_counts_as_failed() -> None:
    text = ARTIST_FULL.replace("\n42\n", "\nNameError: x\n")
    assert score("artist", text, "42").components["tool_execution"] == 0.0


def test_artist_no_call_has_no_tool_term() -> None:
    result = score("artist", "<think>easy</think><answer>42</answer>", "42")
    assert result.components == {"answer": 2.0, "format": 0.5, "tool_execution": 0.0}


@pytest.mark.parametrize(
    "text",
    [
        "<answer>42</answer>",  # no reasoning first
        "<think>a</think><python>x</python><answer>42</answer>",  # a call without its output
        "<think>a</think><output>1</output><answer>42</answer>",  # an output without a call
        "<think>a</think><answer>42</answer><think>b</think>",  # answer not last
        "<think>a</think><answer>4</answer><answer>42</answer>",  # two answers
        "<think>a<python>x</python></think><answer>42</answer>",  # nested blocks
        "<think>a</think><answer>42",  # unclosed answer
        "<think>a</python><answer>42</answer>",  # mismatched close
    ],
)
def test_artist_format_breaks(text: str) -> None:
    assert score("artist", text, "42").components["format"] == 0.0
