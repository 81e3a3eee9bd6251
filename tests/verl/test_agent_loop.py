"""tirlab's agent loop inside verl 0.9.1's own machinery gives the model what tirlab's own rollout gives it.

For each protocol (ToRL's markdown blocks, ReTool's <code>, ARTIST's <python>, JSON calls run against the
offered tools, JSON calls scored without running) one scripted model output is rolled out twice: by
tirlab's rollout (trainer.rollout.multi_turn, in this process) and by verl (in verl's environment): the rows
written by trainer.verl.data, read by verl's RLHFDataset, through verl's AgentLoopWorker.generate_sequences
(which builds tirlab's agent loop from the file trainer.verl.agent_loop writes, runs it, pads and batches),
with a scripted server answering as verl's server does (a TokenOutput of token ids). Code runs in tirlab's
sandbox on both sides. The response text and token ids are the same byte for byte, `response_mask` is 0
exactly on the tool-output tokens, and the extra fields carry the calls and their outputs.

The tokenizer is SmolLM2's (a real BPE tokenizer with a chat template, from its GGUF package), so tokens
that run past a stop string and re-tokenised tool output are exercised as with a real model.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from transformers import AutoTokenizer

from tests.trainer.test_envs import CALL, REPLY, WEATHER_TOOLS
from tests.verl_env import REPO, run_in_verl
from trainer.config import validate_config
from trainer.engines.base import GenerationOutput, GenerationRequest
from trainer.metrics.step import tool_call_count
from trainer.rewards import RewardState, score
from trainer.rollout.multi_turn import RolloutSettings, rollout
from trainer.trajectory import Example
from trainer.verl.data import verl_rows

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

FENCE = "```"
REWARD_FILE = REPO / "trainer" / "verl" / "reward.py"
LOGPROB = -0.25
# Marks verl's side's result lines among verl's own prints.
RESULT = "RESULT "


def scripted_generation(tokenizer: Any, text: str, stop_strings: Sequence[str], max_new_tokens: int) -> tuple:
    """The scripted model's turn: the tokens of `text` then EOS, one at a time, ending at the first stop
    string in the decoded text (the token that completes it kept), at EOS, or at `max_new_tokens`; the ids
    with the finish as tirlab's engines report it. Both sides of the test run this very function."""
    planned = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
    emitted: list[int] = []
    for token in planned:
        emitted.append(token)
        decoded = tokenizer.decode(emitted, skip_special_tokens=True)
        found = [(decoded.find(stop), stop) for stop in stop_strings if stop and stop in decoded]
        if found:
            return emitted, decoded, "stop", min(found)[1]
        if token == tokenizer.eos_token_id:
            return emitted, decoded, "eos", None
        if len(emitted) >= max_new_tokens:
            return emitted, decoded, "length", None
    raise AssertionError("a scripted turn ends with EOS")


class ScriptedEngine:
    """tirlab's Engine replaying each prompt's scripted turns (scripted_generation), per trajectory."""

    def __init__(self, tokenizer: Any, scripts: dict[tuple[int, ...], list[str]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.turns: Counter[Hashable] = Counter()
        self.stops: list[list[str]] = []

    def release(self, cache_key: Hashable) -> None:
        pass

    def generate(
        self, requests: Sequence[GenerationRequest], on_finish: Callable[[int, GenerationOutput], None] | None = None
    ) -> list[GenerationOutput]:
        outputs = []
        for index, request in enumerate(requests):
            prompt = next(p for p in self.scripts if tuple(request.token_ids[: len(p)]) == p)
            turn = self.turns[request.cache_key]
            self.turns[request.cache_key] += 1
            turns = self.scripts[prompt]
            self.stops.append(list(request.stop_strings))
            ids, text, finish, stop = scripted_generation(
                self.tokenizer, turns[turn] if turn < len(turns) else "", request.stop_strings, request.max_new_tokens
            )
            output = GenerationOutput(ids, text, [LOGPROB] * len(ids), finish, stop)
            outputs.append(output)
            if on_finish is not None:
                on_finish(index, output)
        return outputs


# verl's side, run by verl's python: the rows through verl's RLHFDataset and AgentLoopWorker, one case after
# another, against a scripted server answering as verl's does (verl/workers/rollout/replica.py:39-51).
VERL_SIDE = """
from __future__ import annotations
import asyncio, json, os, sys, tempfile
from collections import Counter
from pathlib import Path

import verl
from hydra import compose, initialize_config_dir
from hydra.errors import InstantiationException
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from trainer.verl.agent_loop import write_agent_loop_config

{scripted_generation}

LOGPROB = {logprob}
RESULT = {result!r}


class ScriptedServer:
    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts = tokenizer, scripts
        self.turns, self.stops = Counter(), []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        turns = next(turns for p, turns in self.scripts if list(prompt_ids[: len(p)]) == p)
        turn = self.turns[request_id]
        self.turns[request_id] += 1
        stops = sampling_params.get("stop") or []
        self.stops.append(list(stops))
        ids, _, _, _ = scripted_generation(
            self.tokenizer, turns[turn] if turn < len(turns) else "", stops, sampling_params["max_tokens"]
        )
        logprobs = [LOGPROB] * len(ids) if sampling_params.get("logprobs") else None
        extra = {{"global_steps": 3}}
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed", extra_fields=extra)


# A reward-loop worker called in this process, as the agent loop calls its Ray actor (`.remote`).
class LocalHandle:

    def __init__(self, worker):
        self.compute_score = type("Method", (), {{"remote": staticmethod(worker.compute_score)}})


async def generate(config, case, server):
    # Rewards streamed from the agent loop, as main_ppo runs them without a reward model (ray_trainer.py:955-965);
    # built on the running loop, which the reward manager keeps (reward_manager/base.py get_event_loop).
    handle = LocalHandle(RewardLoopWorker(config))
    worker = AgentLoopWorker(config, server, reward_loop_worker_handles=[handle])
    server.tokenizer = worker.tokenizer
    dataset = RLHFDataset(case["parquet"], worker.tokenizer, config.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    batch.meta_info = {{"global_steps": 4, "validate": False}}
    return worker, await worker.generate_sequences(batch)


job = json.load(sys.stdin)
config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
work = Path(tempfile.mkdtemp())
for case in job["cases"]:
    loop_file = work / (case["name"] + ".yaml")
    write_agent_loop_config(loop_file, run_config=Path(case["run_config"]))
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=[
            "actor_rollout_ref.model.path=" + job["model"],
            "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.calculate_log_probs=true",
            "actor_rollout_ref.rollout.prompt_length=" + str(case["prompt_length"]),
            "actor_rollout_ref.rollout.response_length=" + str(case["response_length"]),
            "actor_rollout_ref.rollout.agent.agent_loop_config_path=" + str(loop_file),
            "actor_rollout_ref.rollout.agent.default_agent_loop=tirlab",
            "data.max_prompt_length=" + str(case["prompt_length"]),
            "data.max_response_length=" + str(case["response_length"]),
            "data.filter_overlong_prompts=false",
            "reward.custom_reward_function.path=" + job["reward_file"],
            "reward.custom_reward_function.name=compute_score",
            "+reward.custom_reward_function.reward_kwargs.run_config=" + case["run_config"],
        ])
    server = ScriptedServer(None, [(prompt, turns) for prompt, turns in case["scripts"]])
    try:
        worker, out = asyncio.run(generate(config, case, server))
    except InstantiationException as exc:  # hydra's, around the agent loop's ValueError
        print(RESULT + json.dumps({{"name": case["name"], "error": str(exc)}}), flush=True)
        continue
    samples = []
    reward_keys = out.meta_info["reward_extra_keys"]
    prompt_width = out.batch["prompts"].shape[1]
    for i in range(len(out)):
        attention = out.batch["attention_mask"][i]
        prompt_ids = out.batch["prompts"][i][attention[:prompt_width].bool()].tolist()
        valid = int(attention[prompt_width:].sum())
        fields = {{key: out.non_tensor_batch[key][i] for key in (
            "tool_call_counts", "tirlab_text", "tirlab_executions", "tirlab_truncated", "tirlab_response_tokens",
            "global_steps", "__num_turns__")}}
        samples.append({{
            "prompt_ids": prompt_ids,
            "response_ids": out.batch["responses"][i][:valid].tolist(),
            "response_mask": out.batch["response_mask"][i][:valid].tolist(),
            "logprobs": out.batch["rollout_log_probs"][i][:valid].tolist(),
            "text": worker.tokenizer.decode(out.batch["responses"][i][:valid].tolist(), skip_special_tokens=True),
            "fields": {{key: (value.item() if hasattr(value, "item") else value) for key, value in fields.items()}},
            "reward": float(out.batch["rm_scores"][i].sum()),
            "reward_extra_info": {{key: out.non_tensor_batch[key][i].item() for key in reward_keys}},
        }})
    print(RESULT + json.dumps({{"name": case["name"], "samples": samples, "stops": server.stops}}), flush=True)
"""


def _case(
    tools: dict[str, Any],
    turns: list[str],
    *,
    question: str = "What is 6 times 7?",
    reward: dict[str, Any] | None = None,
    truth: Any = "42",
    **data: Any,
) -> dict:
    reward = reward or {"name": "torl", "params": {"exec_error_penalty": 0.5}}
    return {"tools": tools, "turns": turns, "question": question, "reward": reward, "truth": truth, "data": data}


OSLO_CALLS = [{"name": "get_weather", "arguments": {"city": "Oslo"}}]


CASES = {
    # ToRL: a call, a failing call whose marker the protocol moves to its own line, then the answer.
    "torl": _case(
        {"protocol": "python_markdown", "feedback": "torl", "max_tool_calls": 2},
        [
            f"Let me compute it.\n{FENCE}python\nprint(6 * 7)\n{FENCE}\n{FENCE}output",
            f"42 it is; and 1/0?\n{FENCE}python\nprint(1 / 0)\n{FENCE}{FENCE}output",
            "So the answer is \\boxed{42}.",
        ],
    ),
    "torl_trained_on_tool_output": _case(
        {"protocol": "python_markdown", "feedback": "torl", "train_on_tool_output": True},
        [f"{FENCE}python\nprint(6 * 7)\n{FENCE}\n{FENCE}output", "\\boxed{42}"],
    ),
    # The response limit cuts the fed-back output: verl's response_length is tirlab's max_response_tokens.
    "torl_cut_at_the_limit": _case(
        {"protocol": "python_markdown", "feedback": "torl"},
        [f"{FENCE}python\nprint('ab ' * 200)\n{FENCE}\n{FENCE}output", "never generated"],
        max_response_tokens=48,
    ),
    "retool": _case(
        {"protocol": "retool", "feedback": "retool", "max_tool_calls": 2},
        [
            f"Compute 2**10:\n<code>\n{FENCE}python\nprint(2 ** 10)\n{FENCE}\n</code>",
            "<answer>\n\\boxed{1024}\n</answer>",
        ],
        question="What is 2 to the 10th?",
        reward={"name": "retool"},
        truth="1024",
    ),
    "artist": _case(
        {"protocol": "artist", "feedback": "tirlab", "max_tool_calls": 3},
        ["<think>Add them.</think>\n<python>\nprint(3 + 4)\n</python>", "<answer>\\boxed{7}</answer>"],
        question="What is 3 plus 4?",
        reward={"name": "artist"},
        truth="7",
    ),
    "function_calling": _case(
        {"protocol": "tool_call_json", "environment": "function_calling", "max_tool_calls": 2},
        [CALL, REPLY],
        question="What is the weather in Oslo?",
        reward={"name": "toolrl"},
        truth=OSLO_CALLS,
    ),
    "json_calls_scored_not_run": _case(
        {"protocol": "tool_call_json", "environment": "none"},
        [CALL],
        question="What is the weather in Oslo?",
        reward={"name": "toolrl"},
        truth=OSLO_CALLS,
    ),
}
CALL_TOOLS = {"function_calling", "json_calls_scored_not_run"}
PROMPT_TOKENS = 2048


@pytest.fixture(scope="module")
def rolled(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each case rolled out by tirlab's rollout here and by tirlab's agent loop in verl (one subprocess)."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    work = tmp_path_factory.mktemp("verl-agent-loop")
    job: dict[str, Any] = {"model": str(model_dir), "reward_file": str(REWARD_FILE), "cases": []}
    ours = {}
    for name, case in CASES.items():
        data = {"max_prompt_tokens": PROMPT_TOKENS, "max_response_tokens": 512, **case["data"]}
        config = validate_config({"data": data, "tools": case["tools"], "reward": case["reward"]})
        run_config = work / f"{name}.json"
        run_config.write_text(json.dumps(config.model_dump(mode="json")))
        tools = WEATHER_TOOLS if name in CALL_TOOLS else None
        example = Example(
            id="0", prompt=[{"role": "user", "content": case["question"]}], ground_truth=case["truth"], data_source="t",
            tools=tools,
        )  # fmt: skip
        (row,) = verl_rows(config, [example], split="train", tokenizer=tokenizer)
        parquet = work / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist([row]), parquet)
        prompt_ids = tokenizer.encode(row["extra_info"]["prompt_text"], add_special_tokens=False)[-PROMPT_TOKENS:]
        engine = ScriptedEngine(tokenizer, {tuple(prompt_ids): case["turns"]})
        result = rollout(engine, [prompt_ids], RolloutSettings.from_config(config), tools=[tools])
        ours[name] = (prompt_ids, result.trajectories[0], engine.stops, config)
        job["cases"].append(
            {
                "name": name,
                "run_config": str(run_config),
                "parquet": str(parquet),
                "prompt_length": PROMPT_TOKENS,
                "response_length": config.data.max_response_tokens,
                "scripts": [[prompt_ids, case["turns"]]],
            }
        )
    # The same run with verl's response_length not the run's max_response_tokens.
    job["cases"].append({**job["cases"][0], "name": "length_mismatch", "response_length": 256})
    script = VERL_SIDE.format(
        scripted_generation=textwrap.dedent(inspect.getsource(scripted_generation)), logprob=LOGPROB, result=RESULT
    )
    done = run_in_verl(["-c", script], input=json.dumps(job), timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line.removeprefix(RESULT)) for line in done.stdout.splitlines() if line.startswith(RESULT)]
    theirs = {line["name"]: line for line in lines}
    return {"ours": ours, "theirs": theirs, "tokenizer": tokenizer}


@pytest.mark.parametrize("name", CASES)
def test_verl_rolls_out_the_same_response_as_tirlab(rolled: dict[str, Any], name: str) -> None:
    prompt_ids, trajectory, _, _ = rolled["ours"][name]
    (sample,) = rolled["theirs"][name]["samples"]
    assert sample["prompt_ids"] == prompt_ids
    assert sample["response_ids"] == trajectory.response_ids
    assert sample["text"] == trajectory.completion.text
    assert sample["fields"]["tirlab_text"] == trajectory.completion.text


@pytest.mark.parametrize("name", CASES)
def test_the_response_mask_is_zero_exactly_on_tool_output(rolled: dict[str, Any], name: str) -> None:
    _, trajectory, _, _ = rolled["ours"][name]
    (sample,) = rolled["theirs"][name]["samples"]
    trained = CASES[name]["tools"].get("train_on_tool_output", False)
    assert sample["response_mask"] == [1 if trained or not tool else 0 for tool in trajectory.tool_mask]
    assert sample["logprobs"] == [0.0 if tool else LOGPROB for tool in trajectory.tool_mask]
    calls = name != "json_calls_scored_not_run"
    assert (sum(trajectory.tool_mask) > 0) == calls, "a case with calls must feed some output back"


@pytest.mark.parametrize("name", CASES)
def test_the_calls_and_their_outputs_reach_the_extra_fields(rolled: dict[str, Any], name: str) -> None:
    _, trajectory, stops, _ = rolled["ours"][name]
    line = rolled["theirs"][name]
    (sample,) = line["samples"]
    fields = sample["fields"]
    completion = trajectory.completion
    executions = json.loads(fields["tirlab_executions"])
    assert [(e["call"], e["status"], e["output"], e["stderr"]) for e in executions] == [
        (e.call, e.status, e.output, e.stderr) for e in completion.executions
    ]
    assert fields["tool_call_counts"] == tool_call_count(completion)
    assert fields["tirlab_truncated"] == completion.truncated
    assert fields["tirlab_response_tokens"] == completion.response_tokens
    assert fields["global_steps"] == 3
    # Each generation asked verl's server to stop where tirlab's asked its engine to.
    assert line["stops"] == stops


def test_the_calls_of_a_scored_only_response_are_counted_from_its_text(rolled: dict[str, Any]) -> None:
    fields = rolled["theirs"]["json_calls_scored_not_run"]["samples"][0]["fields"]
    assert fields["tool_call_counts"] == 1 and json.loads(fields["tirlab_executions"]) == []


def test_code_ran_in_the_sandbox_and_its_output_was_fed_back(rolled: dict[str, Any]) -> None:
    text = rolled["theirs"]["torl"]["samples"][0]["text"]
    assert f"{FENCE}output\n42\n{FENCE}" in text
    assert "ZeroDivisionError" in text
    executions = json.loads(rolled["theirs"]["torl"]["samples"][0]["fields"]["tirlab_executions"])
    assert [e["status"] for e in executions] == ["ok", "error"]


def test_a_response_cut_at_verls_response_length_is_truncated(rolled: dict[str, Any]) -> None:
    (sample,) = rolled["theirs"]["torl_cut_at_the_limit"]["samples"]
    assert len(sample["response_ids"]) == 48
    assert sample["fields"]["tirlab_truncated"] is True


def test_the_torl_trajectory_beside_tirlabs(rolled: dict[str, Any]) -> None:
    """Printed for the record (pytest -s): one ToRL trajectory from verl and tirlab's for the same outputs."""
    _, trajectory, _, _ = rolled["ours"]["torl"]
    (sample,) = rolled["theirs"]["torl"]["samples"]
    tokenizer = rolled["tokenizer"]
    print("\n=== verl (tirlab's agent loop): response; [tool] marks response_mask 0 ===")
    print(_marked(tokenizer, sample["response_ids"], [1 - m for m in sample["response_mask"]]))
    print("=== tirlab's rollout: response; [tool] marks tool_mask 1 ===")
    print(_marked(tokenizer, trajectory.response_ids, trajectory.tool_mask))
    assert sample["text"] == trajectory.completion.text


def _marked(tokenizer: Any, ids: list[int], tool: list[int]) -> str:
    parts, start = [], 0
    for end in range(1, len(ids) + 1):
        if end == len(ids) or tool[end] != tool[start]:
            text = tokenizer.decode(ids[start:end], skip_special_tokens=True)
            parts.append(f"[tool]{text}[/tool]" if tool[start] else text)
            start = end
    return "".join(parts)


@pytest.mark.parametrize("name", CASES)
def test_verl_streams_the_reward_tirlab_gives_the_response(rolled: dict[str, Any], name: str) -> None:
    """verl's reward loop, fed by the agent loop (agent_loop.py:962-1030), scores with the adapter what
    trainer.rewards scores for tirlab's completion: the extra fields reached the reward's extra_info."""
    _, trajectory, _, config = rolled["ours"][name]
    (sample,) = rolled["theirs"][name]["samples"]
    expected = score(
        config.reward.name, trajectory.completion, CASES[name]["truth"], params=config.reward.params, step=3,
        state=RewardState(),
    )  # fmt: skip
    assert sample["reward"] == pytest.approx(expected.total)
    info = sample["reward_extra_info"]
    assert info["correct"] == int(expected.correct)
    assert info["tool_calls"] == tool_call_count(trajectory.completion)
    assert {key: info[key] for key in expected.components} == pytest.approx(expected.components)


def test_the_torl_penalty_reads_the_failed_call_from_the_rollout(rolled: dict[str, Any]) -> None:
    info = rolled["theirs"]["torl"]["samples"][0]["reward_extra_info"]
    assert info["correct"] == 1 and info["exec_error_penalty"] == pytest.approx(-0.5) and info["tool_calls"] == 2


def test_verl_lengths_other_than_the_runs_are_refused(rolled: dict[str, Any]) -> None:
    error = rolled["theirs"]["length_mismatch"]["error"]
    assert "data.max_response_tokens is 512 but verl's actor_rollout_ref.rollout.response_length is 256" in error
