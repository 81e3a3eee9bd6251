"""The rewards compute what the papers' released code computes (issue 13, items 5-8).

Each expected value is derived by hand from the paper's code on a case built here; the comment
next to it says what that code does and where (repository path:line @commit).
"""

import json
import math

import pytest

from trainer.config import RunConfig
from trainer.loop.collect import Group
from trainer.loop.train import Trainer
from trainer.rewards import RewardParamsError, RewardState, score, score_group
from trainer.rollout.multi_turn import Trajectory
from trainer.trajectory import Completion, Example, ToolExecution

FENCE = "```"


def call(printed: str, code: str = "print(x)") -> str:
    """One ToRL round: a python block and the output block the rollout appends after it."""
    return f"{FENCE}python\n{code}\n{FENCE}\n{FENCE}output\n{printed}\n{FENCE}\n"


# --- item 5: ToRL scores the whole response ---------------------------------------------------
# ToRL: naive.py:51-57 decodes every response token, tool outputs included, and
# math_verifier.py:63-66 answers with boxed_pattern.findall(response)[-1] (GAIR-NLP/ToRL @cb78cf1).


def test_torl_a_box_only_in_the_printed_output_scores_plus_one() -> None:
    # findall over "...```output\n\boxed{42}\n```\nDone." finds ["42}"]; pred "42" == "42" -> +1.
    # The model's own text holds no box: the program builds it.
    text = call("\\boxed{42}", code="print(chr(92) + 'boxed{' + str(6 * 7) + '}')") + "Done."
    assert score("torl", text, "42").total == 1.0


def test_torl_a_right_box_printed_after_a_wrong_one_scores_plus_one() -> None:
    # findall finds ["41}", "42}"] in that order; the last, "42", is the answer -> +1.
    text = "So \\boxed{41}. Let me check.\n" + call("\\boxed{42}") + "Checked."
    assert score("torl", text, "42").total == 1.0


def test_torl_model_text_only_closes_the_printed_box_hack() -> None:
    text = "So \\boxed{41}. Let me check.\n" + call("\\boxed{42}") + "Checked."
    result = score("torl", text, "42", params={"answer_from": "model_text"})
    assert (result.total, result.details["answer"]) == (-1.0, "41")


def test_torl_a_box_cut_off_at_the_end_falls_back_to_the_box_before() -> None:
    # The regex cannot match the unclosed "\boxed{4"; findall's last match is "42}" -> +1.
    assert score("torl", "First \\boxed{42}, so the final answer is \\boxed{4", "42").total == 1.0


def test_torl_penalty_applies_to_a_response_without_a_call() -> None:
    # execution_pass starts at 0 (vllm_rollout_spmd.py:267) and only a call that ran sets it to 1
    # (:309-314, :350); naive.py:72-73 then subtracts 0.5: a right answer without a call scores 0.5.
    assert score("torl", "It is \\boxed{42}.", "42", params={"exec_error_penalty": 0.5}).total == 0.5


def test_torl_penalty_follows_the_last_call() -> None:
    # Round 1 fails, round 2 runs: execution_pass is set per round, so the last round's 1 stands.
    text = call("NameError: x") + call("42") + "\\boxed{42}"
    completion = Completion(
        text=text, executions=(ToolExecution(call="a", status="error"), ToolExecution(call="b", status="ok"))
    )
    assert score("torl", completion, "42", params={"exec_error_penalty": 0.5}).total == 1.0
    failed_last = Completion(text=text, executions=tuple(reversed(completion.executions)))
    assert score("torl", failed_last, "42", params={"exec_error_penalty": 0.5}).total == 0.5


def test_torl_a_program_that_prints_and_then_raises_passes() -> None:
    # postproc (vllm_rollout_spmd.py:229-230): return code 1 but stdout "7\n" is ("7\n", "Done"),
    # so execution_pass is 1 (:312-314) and no penalty is taken.
    text = call("7") + "\\boxed{7}"
    raised = ToolExecution(
        call="print(7); 1/0", status="error", output="7\nZeroDivisionError", stderr="ZeroDivisionError"
    )
    completion = Completion(text=text, executions=(raised,))
    assert score("torl", completion, "7", params={"exec_error_penalty": 0.5}).total == 1.0


def test_torl_a_timed_out_call_is_not_a_pass() -> None:
    # A timeout makes ToRL's request fail: ("Error", "UnknownError") is no "Done" (:224-225, 233-234).
    text = call("UnknownError") + "\\boxed{7}"
    timed_out = ToolExecution(call="while True: print(1)", status="timeout", output="1\n1\n")
    completion = Completion(text=text, executions=(timed_out,))
    assert score("torl", completion, "7", params={"exec_error_penalty": 0.5}).total == 0.5


def test_torl_answer_from_rejects_other_sources() -> None:
    with pytest.raises(RewardParamsError) as caught:
        score("torl", "\\boxed{1}", "1", params={"answer_from": "tool_output"})
    assert "params.answer_from" in caught.value.errors


# --- item 6: where ToRL's verifier is wrong, tirlab stays right ------------------------------
# ToRL's is_equiv (math_verifier.py:104-116) calls math_verify.parse on the bare answer: parse
# then extracts "6" from "6-6i" and "6-5i" (equal -> ToRL says +1) and nothing from
# "\frac{20000}{\pi}" (verify([], []) is False -> ToRL says -1).


def test_torl_six_minus_six_i_is_not_six_minus_five_i() -> None:
    assert score("torl", "\\boxed{6-6i}", "6-5i").total == -1.0


def test_torl_dfrac_over_pi_equals_frac_over_pi() -> None:
    assert score("torl", "\\boxed{\\dfrac{20000}{\\pi}}", "\\frac{20000}{\\pi}").total == 1.0


@pytest.mark.parametrize("wrapper", ["textbf", "text", "mathbf", "mathrm"])
def test_torl_a_bold_or_text_wrapped_answer_is_its_content(wrapper: str) -> None:
    # ToRL's normalize_final_answer strips \text{} and \textbf{} (eval.py:165-166), so it gives +1
    # for those two; \mathbf{} and \mathrm{} it keeps, and math-verify then reads no number (-1).
    assert score("torl", f"\\boxed{{\\{wrapper}{{1.25}}}}", "1.25").total == 1.0


def test_torl_a_wrapped_wrong_answer_stays_wrong() -> None:
    assert score("torl", "\\boxed{\\textbf{1.26}}", "1.25").total == -1.0


# --- item 7: ToolRL's steps and switches -----------------------------------------------------
# qiancheng0/ToolRL @8cee13e, verl/utils/reward_score/rlla.py; its trainer counts from 1
# (verl/trainer/ppo/ray_trainer.py:625-626).

WEATHER = {"name": "get_weather", "parameters": {"city": "Paris", "unit": "C"}}
TIME = {"name": "get_time", "parameters": {"zone": "CET"}}


def gt(*calls: dict) -> str:
    return "<think>plan</think>\n<tool_call>\n" + "\n".join(json.dumps(c) for c in calls) + "\n</tool_call>"


def reply(*calls: dict, think: str = "I should call the tool.") -> str:
    return f"<think>{think}</think>\n<tool_call>\n" + "\n".join(json.dumps(c) for c in calls) + "\n</tool_call>"


def toolrl(text: str, truth: str, step: int = 0, **params: object) -> dict[str, float]:
    return score("toolrl", text, truth, params=params, step=step).components


def test_toolrl_step_zero_is_toolrl_step_one() -> None:
    # SCHEDULEREWARD at t = 1: format max 2 - (2 - 1) * 1/150 (rlla.py:57), correctness max
    # (3 - 2) * 1/150 + 2 (rlla.py:214).
    components = toolrl(reply(WEATHER), gt(WEATHER), step=0, schedule="scheduled")
    assert components == pytest.approx({"format": 2 - 1 / 150, "correctness": 2 + 1 / 150})


def test_toolrl_max3_starts_at_tirlab_step_29() -> None:
    # MAX1STEP30MAX3 at t = 30: format 1/2 (rlla.py:47-49), correctness keeps max 3 (rlla.py:205-210).
    assert toolrl(reply(WEATHER), gt(WEATHER), step=29, schedule="max1_step30_max3") == {
        "format": 0.5,
        "correctness": 3.0,
    }


def test_toolrl_with_length_adds_think_words_over_512() -> None:
    # WITHLENGTH (rlla.py:297-299): 128 words / 512 = 0.25, on [0, 1] (rlla.py:118-122).
    think = " ".join(["word"] * 128)
    components = toolrl(reply(WEATHER, think=think), gt(WEATHER), with_length=True)
    assert components == {"format": 1.0, "correctness": 3.0, "length": 0.25}
    assert score("toolrl", reply(WEATHER, think=think), gt(WEATHER), params={"with_length": True}).total == 4.25


def test_toolrl_length_is_capped_at_one_and_zero_without_think() -> None:
    # 600 / 512 = 1.17 -> 1.0 (rlla.py:119-120); no </think> -> the minimum 0 (rlla.py:114-116).
    assert toolrl(reply(WEATHER, think=" ".join(["w"] * 600)), gt(WEATHER), with_length=True)["length"] == 1.0
    no_think = '<tool_call>\n{"name": "x"}\n</tool_call>'
    assert toolrl(no_think, gt(WEATHER), with_length=True)["length"] == 0.0


def test_toolrl_schedule_length_target_grows_from_384() -> None:
    # SCHEDULELENGTH (rlla.py:103-105) at t = 1: 256 * 1/105 + 384 = 386.44; 100 words -> 0.2588 -> 0.26.
    think = " ".join(["word"] * 100)
    assert toolrl(reply(WEATHER, think=think), gt(WEATHER), step=0, with_length=True, schedule_length=True)[
        "length"
    ] == pytest.approx(0.26)
    # At t = 105 the target is 640: 160 words -> 0.25.
    think = " ".join(["word"] * 160)
    assert toolrl(reply(WEATHER, think=think), gt(WEATHER), step=104, with_length=True, schedule_length=True)[
        "length"
    ] == pytest.approx(0.25)


PARIS_F = {"name": "get_weather", "parameters": {"city": "Paris", "unit": "F"}}


def test_toolrl_correct_max1_scales_correctness_to_one() -> None:
    # CORRECTMAX1 (rlla.py:277-280): [-1, 1]. S = 1 (names) + 1 (keys) + 1 (city) = 3,
    # S_max = 1 + (1 + 2) = 4 (rlla.py:157): 2 * 3/4 - 1 = 0.5 (rlla.py:198).
    assert toolrl(reply(PARIS_F), gt(WEATHER), correct_max1=True)["correctness"] == pytest.approx(0.5)


def test_toolrl_coarse_reward_is_all_or_nothing() -> None:
    # COARSEREWARD (rlla.py:137-140): not an exact match -> the minimum -3 (1.5 without it).
    assert toolrl(reply(PARIS_F), gt(WEATHER), coarse_reward=True)["correctness"] == -3.0
    assert toolrl(reply(WEATHER), gt(WEATHER), coarse_reward=True)["correctness"] == 3.0


def test_toolrl_refined_reward_matches_names_strictly() -> None:
    # REFINEDREWARD (rlla.py:26-29): match_score of unequal lists is 0. Prediction without "unit":
    # keys ["city", "unit"] vs ["city"] score 0 (1/2 without it), value of city 1:
    # S = 1 + 0 + 1 = 2 of 4 -> 6 * 2/4 - 3 = 0 (6 * 2.5/4 - 3 = 0.75 without it).
    partial = {"name": "get_weather", "parameters": {"city": "Paris"}}
    assert toolrl(reply(partial), gt(WEATHER))["correctness"] == pytest.approx(0.75)
    assert toolrl(reply(partial), gt(WEATHER), refined_reward=True)["correctness"] == pytest.approx(0.0)


def test_toolrl_intermediate_reward_counts_whole_calls() -> None:
    # INTERMEDIATEREWARD (rlla.py:153-175): S_max = 1 + 1 per call = 3; names equal 1, WEATHER
    # identical 1, TIME with another zone 0: S = 2 -> 6 * 2/3 - 3 = 1.0. Without it: S_max = 1 + 3 + 2,
    # S = 1 + 3 + (1 + 0) = 5 -> 6 * 5/6 - 3 = 2.0.
    other_zone = {"name": "get_time", "parameters": {"zone": "UTC"}}
    assert toolrl(reply(WEATHER, other_zone), gt(WEATHER, TIME))["correctness"] == pytest.approx(2.0)
    assert toolrl(reply(WEATHER, other_zone), gt(WEATHER, TIME), intermediate_reward=True)[
        "correctness"
    ] == pytest.approx(1.0)


def test_toolrl_intermediate_reward_never_reads_predicted_parameters() -> None:
    # A call without "parameters": rlla.py:177 raises KeyError -> minimum -3, but in intermediate
    # mode that line is skipped (rlla.py:168-175): names 1 of S_max 2 -> 6 * 1/2 - 3 = 0.
    bare = {"name": "get_weather"}
    assert toolrl(reply(bare), gt(WEATHER))["correctness"] == -3.0
    assert toolrl(reply(bare), gt(WEATHER), intermediate_reward=True)["correctness"] == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"schedule_length": True}, "params.schedule_length"),
        ({"coarse_reward": True, "refined_reward": True}, "params.refined_reward"),
        ({"coarse_reward": True, "intermediate_reward": True}, "params.intermediate_reward"),
    ],
)
def test_toolrl_switches_without_effect_are_refused(params: dict, field: str) -> None:
    with pytest.raises(RewardParamsError) as caught:
        score("toolrl", reply(WEATHER), gt(WEATHER), params=params)
    assert field in caught.value.errors


# --- item 8: OTC-GRPO's global minimum per split ---------------------------------------------


def solved(calls: int, answer: str = "42") -> str:
    return "".join(call(answer) for _ in range(calls)) + f"\\boxed{{{answer}}}"


GLOBAL = {"global_min": True}


def test_otc_grpo_validation_does_not_lower_the_training_minimum() -> None:
    state = RewardState()
    score_group("otc_grpo", [solved(2)], "42", params=GLOBAL, prompt_id="3", state=state)
    # Validation row 3 is another prompt, solved without a call.
    score_group("otc_grpo", [solved(0, "7")], "7", params=GLOBAL, prompt_id="3", state=state, split="val")
    later = score_group("otc_grpo", [solved(2)], "42", params=GLOBAL, prompt_id="3", state=state)[0]
    # n stays 2: f(2, 2) = 2, sin(2 pi / 4) = 1. Had validation's 0 leaked, cos(2 pi / 7) = 0.62.
    assert later.total == pytest.approx(1.0)
    assert state.min_tool_calls == {"train": {"3": 2}, "val": {"3": 0}}


def test_otc_grpo_validation_remembers_its_own_minimum() -> None:
    state = RewardState()
    score_group("otc_grpo", [solved(1, "7")], "7", params=GLOBAL, prompt_id="3", state=state, split="val")
    result = score_group("otc_grpo", [solved(2, "7")], "7", params=GLOBAL, prompt_id="3", state=state, split="val")[0]
    # n = 1 from the earlier evaluation: f(2, 1) = 4/3 -> sin((4/3) pi / 2).
    assert result.total == pytest.approx(math.sin(4 / 3 * math.pi / 2))


def _trajectory(text: str) -> Trajectory:
    return Trajectory(
        completion=Completion(text=text), prompt_ids=[1], response_ids=[2], loss_mask=[1], tool_mask=[0], logprobs=[0.0]
    )


def test_trainer_evaluation_keeps_its_otc_minimum_apart() -> None:
    trainer = object.__new__(Trainer)
    trainer.config = RunConfig.model_validate({"reward": {"name": "otc_grpo", "params": GLOBAL}})
    trainer.reward_state = RewardState()
    prompt = [{"role": "user", "content": "q"}]
    train_row = Example(id="3", prompt=prompt, ground_truth="42", data_source="t")
    trainer.val_data = [Example(id="3", prompt=prompt, ground_truth="7", data_source="v")]

    def roll(examples: list, *, group_size: int, seed: int, greedy: bool = False) -> tuple[list[Group], None]:
        trajectories = [_trajectory(solved(0, "7"))] * group_size
        return [Group(index=i, example=e, trajectories=trajectories) for i, e in examples], None

    trainer.roll = roll
    trainer.score([Group(index=3, example=train_row, trajectories=[_trajectory(solved(2))])], step=0)
    trainer.evaluate(step=0)
    assert trainer.reward_state.min_tool_calls["train"] == {"3": 2}
    assert trainer.reward_state.min_tool_calls["val"] == {"3": 0}
