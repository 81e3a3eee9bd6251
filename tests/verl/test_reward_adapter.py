"""The reward adapter, loaded by verl 0.9.1's own `load_reward_manager` from
`reward.custom_reward_function.path/name` with the run config passed through `reward_kwargs`, and called by
verl's reward manager (`run_single`, as the reward loop calls it for each rolled-out sample), scores every
registered per-sample reward as trainer.rewards does: the rewards page's worked example of each
(webapp/ui/reward_examples.py), right and wrong, and the cases that need what only the rollout knows (a
failed execution for ToRL's penalty and ARTIST's tool success, truncation for ZeroTIR, the step for
ToolRL's schedule). A reward that compares a group's completions is refused. All of verl's side runs in one
subprocess of verl's python.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.verl_env import REPO, run_in_verl
from trainer.config import validate_config
from trainer.metrics.step import tool_call_count
from trainer.rewards import TEXT_REWARD_NAMES, RewardState, registered, score
from trainer.trajectory import Completion, ToolExecution
from webapp.ui.reward_examples import EXAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REWARD_FILE = REPO / "trainer" / "verl" / "reward.py"
RESULT = "RESULT "
WRONG_CALL = [{"name": "set_timer", "arguments": {"minutes": 11}}]
WRONG = {"tool_call_json": WRONG_CALL, "artist_fc": {"calls": WRONG_CALL, "state": {}}}
# A call that printed its result and then ran out of time: only the rollout's status says it failed, the
# fed-back text looks like a success.
TIMED_OUT = ToolExecution(call="print(6 * 7)", status="timeout", output="42\n")
OK_42 = ToolExecution(call="print(6 * 7)", status="ok", output="42\n")
ARTIST_TWO_CALLS = (
    "<think>Compute it twice.</think>\n<python>\nprint(6 * 7)\n</python>\n<output>\n42\n</output>\n"
    "<python>\nprint(6 * 7)\n</python>\n<output>\n42\n</output>\n<answer>\\boxed{42}</answer>"
)

# otc_grpo compares a group (refused on verl); swe reads the environment's graded patch (refused on verl too).
SCORED = [name for name in TEXT_REWARD_NAMES if name != "otc_grpo"]


def _truth(text: str) -> Any:
    """A worked example's ground truth as the dataset holds it: JSON lists and objects decoded."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, list | dict) else text


def _case(name: str, reward: str, text: str, truth: Any, **more: Any) -> dict[str, Any]:
    return {"name": name, "reward": reward, "text": text, "truth": truth, "params": {}, "executions": [], **more}


def _cases() -> list[dict[str, Any]]:
    cases = []
    for reward in SCORED:
        example = EXAMPLES[reward]
        cases.append(_case(f"{reward}-right", reward, example.completion, _truth(example.ground_truth)))
        wrong = WRONG.get(registered(reward).protocol, "41")
        cases.append(_case(f"{reward}-wrong", reward, example.completion, wrong))
    torl = EXAMPLES["torl"].completion
    return [
        *cases,
        _case("torl-timed-out-call-penalised", "torl", torl, "42", executions=[TIMED_OUT],
              params={"exec_error_penalty": 0.5}),
        _case("torl-ok-call-not-penalised", "torl", torl, "42", executions=[OK_42], params={"exec_error_penalty": 0.5}),
        _case("artist-one-of-two-calls-timed-out", "artist", ARTIST_TWO_CALLS, "42", executions=[TIMED_OUT, OK_42]),
        _case("zerotir-truncated", "zerotir", EXAMPLES["zerotir"].completion, "42", truncated=True),
        # ToolRL's step 41 (tirlab's 40): past step 30, format halved to 0.5 and correctness up to 3.
        _case("toolrl-max1-step30-max3-at-step-40", "toolrl", EXAMPLES["toolrl"].completion,
              _truth(EXAMPLES["toolrl"].ground_truth), params={"schedule": "max1_step30_max3"}, step=40),
        # A sample tirlab's agent loop did not roll out: verl's decoded text, calls read from it.
        _case("torl-from-verls-text-alone", "torl", torl, "42", agent_loop=False, params={"exec_error_penalty": 0.5}),
    ]  # fmt: skip


CASES = _cases()

VERL_SIDE = """
import asyncio, json, os, sys

import numpy as np
import torch
import verl
from hydra import compose, initialize_config_dir
from verl.protocol import DataProto
from verl.trainer.ppo.reward import load_reward_manager
from verl.utils import hf_tokenizer

RESULT = {result!r}
job = json.load(sys.stdin)
config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
tokenizer = hf_tokenizer(job["model"])


async def score(case):
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=[
            "actor_rollout_ref.model.path=" + job["model"],
            "reward.custom_reward_function.path=" + job["reward_file"],
            "reward.custom_reward_function.name=compute_score",
            "+reward.custom_reward_function.reward_kwargs.run_config=" + case["run_config"],
        ])
    manager = load_reward_manager(config, tokenizer)
    prompt = tokenizer.encode("A question.", add_special_tokens=False)
    response = tokenizer.encode(case["solution_str"], add_special_tokens=False)
    # The agent loop's extra fields, as verl's agent loop hands them to the reward loop (agent_loop.py:1016).
    fields = case["extra_fields"]
    extra = {{"tool_extra_fields": np.array([fields], dtype=object)}} if fields else {{}}
    data = DataProto.from_dict(
        tensors={{
            "prompts": torch.tensor([prompt]),
            "responses": torch.tensor([response]),
            "attention_mask": torch.ones(1, len(prompt) + len(response), dtype=torch.int64),
        }},
        non_tensors={{
            "data_source": np.array(["tirlab"], dtype=object),
            "reward_model": np.array([{{"style": "rule", "ground_truth": case["ground_truth"]}}], dtype=object),
            "extra_info": np.array([case["extra_info"]], dtype=object),
            **extra,
        }},
    )
    try:
        return await manager.run_single(data)
    except ValueError as exc:
        return {{"error": str(exc)}}


async def main():
    for case in job["cases"]:
        print(RESULT + json.dumps({{"name": case["name"], "result": await score(case)}}), flush=True)


asyncio.run(main())
"""


def _tools(reward: str) -> dict[str, Any]:
    """The tools section of a run with `reward`'s protocol (a search run names the corpus it searches)."""
    protocol = registered(reward).protocol
    return {"protocol": protocol, **({"search_corpus": "search-mini"} if protocol == "search_r1" else {})}


def _run_config(work: Path, name: str, reward: str, params: dict[str, Any]) -> Path:
    config = validate_config({"tools": _tools(reward), "reward": {"name": reward, "params": params}})
    path = work / f"{name}.json"
    path.write_text(json.dumps(config.model_dump(mode="json")))
    return path


def _verl_case(case: dict[str, Any], run_config: Path) -> dict[str, Any]:
    """The sample as verl's reward manager gets it: the row's ground truth and extra_info
    (trainer.verl.data) and, when tirlab's agent loop rolled it out, its extra fields."""
    truth = case["truth"]
    fields = {}
    if case.get("agent_loop", True):
        fields = {
            "tirlab_text": case["text"],
            "tirlab_executions": json.dumps([dataclasses.asdict(e) for e in case["executions"]]),
            "tirlab_truncated": case.get("truncated", False),
            "tirlab_response_tokens": 17,
            "global_steps": case.get("step", 0),
            "tool_call_counts": len(case["executions"]),
        }
    return {
        "name": case["name"],
        "run_config": str(run_config),
        "solution_str": case["text"],
        "ground_truth": truth if isinstance(truth, str) else json.dumps(truth),
        "extra_info": {"index": 0, "ground_truth": json.dumps(truth), "prompt_text": "A question."},
        "extra_fields": fields,
    }


@pytest.fixture(scope="module")
def verl_scores(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    work = tmp_path_factory.mktemp("verl-reward")
    cases = [_verl_case(case, _run_config(work, case["name"], case["reward"], case["params"])) for case in CASES]
    refused = _run_config(work, "otc-grpo", "otc_grpo", {})
    cases.append(_verl_case(_case("otc_grpo-refused", "otc_grpo", EXAMPLES["otc_grpo"].completion, "42"), refused))
    job = {"model": str(model_dir), "reward_file": str(REWARD_FILE), "cases": cases}
    done = run_in_verl(["-c", VERL_SIDE.format(result=RESULT)], input=json.dumps(job), timeout=500)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line.removeprefix(RESULT)) for line in done.stdout.splitlines() if line.startswith(RESULT)]
    return {line["name"]: line["result"] for line in lines}


def _expected(case: dict[str, Any]) -> tuple[Any, Completion]:
    reward = case["reward"]
    config = validate_config({"tools": _tools(reward), "reward": {"name": reward, "params": case["params"]}})
    completion = Completion(
        text=case["text"],
        protocol=config.tools.protocol,
        executions=tuple(case["executions"]),
        truncated=case.get("truncated", False),
    )
    result = score(
        reward, completion, case["truth"], params=config.reward.params, step=case.get("step", 0), state=RewardState()
    )
    return result, completion


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_verl_scores_as_tirlab(verl_scores: dict[str, dict[str, Any]], case: dict[str, Any]) -> None:
    expected, completion = _expected(case)
    got = verl_scores[case["name"]]
    assert "error" not in got, got
    assert got["reward_score"] == pytest.approx(expected.total)
    info = got["reward_extra_info"]
    assert info["score"] == pytest.approx(expected.total)
    assert info["correct"] == int(expected.correct) and info["acc"] == float(expected.correct)
    assert info["tool_calls"] == tool_call_count(completion)
    for name, value in expected.components.items():
        assert info[name] == pytest.approx(value), name
    assert set(info) == {"score", "acc", "correct", "tool_calls", *expected.components}


def test_the_worked_examples_score_right_and_their_wrong_twins_do_not(verl_scores: dict[str, dict[str, Any]]) -> None:
    for reward in SCORED:
        assert verl_scores[f"{reward}-right"]["reward_extra_info"]["correct"] == 1, reward
        assert verl_scores[f"{reward}-wrong"]["reward_extra_info"]["correct"] == 0, reward


def test_what_only_the_rollout_knows_changes_the_score(verl_scores: dict[str, dict[str, Any]]) -> None:
    penalised = verl_scores["torl-timed-out-call-penalised"]["reward_extra_info"]
    assert penalised["score"] == pytest.approx(0.5) and penalised["exec_error_penalty"] == pytest.approx(-0.5)
    assert verl_scores["torl-ok-call-not-penalised"]["reward_score"] == pytest.approx(1.0)
    timed_out = verl_scores["artist-one-of-two-calls-timed-out"]["reward_extra_info"]
    assert timed_out["tool_execution"] == pytest.approx(0.5)
    assert verl_scores["zerotir-truncated"]["reward_score"] < verl_scores["zerotir-right"]["reward_score"]
    # At step 0 the same schedule gives 1 + 1: verl's weights version is the step the reward reads.
    assert verl_scores["toolrl-max1-step30-max3-at-step-40"]["reward_score"] == pytest.approx(0.5 + 3.0)


def test_a_group_reward_is_refused_naming_the_field(verl_scores: dict[str, dict[str, Any]]) -> None:
    error = verl_scores["otc_grpo-refused"]["error"]
    assert error.startswith("reward.name: otc_grpo") and "each sample alone" in error
