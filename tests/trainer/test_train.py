"""The training loop end to end on CPU: real rollouts, sandbox, rewards and updates."""

import importlib.util
import json
import math
from pathlib import Path

import numpy
import pytest
import torch
from pydantic import ValidationError

from tests.model_cache import MODEL_CACHE
from trainer.config import validate_config
from trainer.contract import ChatMessage, IngestBatch, TrajectoryIn
from trainer.loop.collect import Group
from trainer.loop.train import run_training
from trainer.metrics.step import step_metrics
from trainer.protocols import PROTOCOL_NAMES, get_protocol
from trainer.report.client import Reporter
from trainer.report.trajectories import trajectory_report
from trainer.rewards import score_group
from trainer.rollout.multi_turn import Trajectory
from trainer.trajectory import Completion, Example, RewardResult, ToolExecution


def small_config(model: str, **overrides) -> dict:
    config = {
        "model": {"name_or_path": model},
        "data": {"train_dataset": "arithmetic", "prompt_template": "plain", "max_response_tokens": 48},
        "rollout": {"prompts_per_step": 3, "group_size": 4, "trajectories_to_report": 1},
        "optim": {"learning_rate": 1e-4},
        "schedule": {"max_steps": 2, "checkpoint_every": 1},
    }
    for key, value in overrides.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


def train(config: dict, out: Path, **kwargs):
    with Reporter(out) as reporter:
        return run_training(validate_config(config), reporter=reporter, out_dir=out, model_cache=MODEL_CACHE, **kwargs)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_resumed_run_repeats_the_uninterrupted_step(random_tiny, tmp_path):
    train(small_config(str(random_tiny)), tmp_path / "full")
    train(small_config(str(random_tiny)), tmp_path / "resumed", resume=tmp_path / "full" / "checkpoints" / "step-1")
    full = read_jsonl(tmp_path / "full" / "metrics.jsonl")
    resumed = read_jsonl(tmp_path / "resumed" / "metrics.jsonl")
    assert [m["step"] for m in full] == [0, 1] and [m["step"] for m in resumed] == [1]
    measured = {k: v for k, v in full[1]["values"].items() if not k.startswith(("timing_s/", "perf/"))}
    again = {k: v for k, v in resumed[0]["values"].items() if not k.startswith(("timing_s/", "perf/"))}
    assert again == measured


def test_step_and_validation_metrics_are_split_by_difficulty(random_tiny, tmp_path):
    config = small_config(
        str(random_tiny),
        data={"val_dataset": "arithmetic"},
        rollout={"prompts_per_step": 8},
        schedule={"max_steps": 1, "eval_every": 1, "checkpoint_every": 0},
    )
    train(config, tmp_path)
    (metrics,) = read_jsonl(tmp_path / "metrics.jsonl")
    values = metrics["values"]
    # The seeded draw of 8 mixed problems holds both difficulties; so do the 200 validation problems.
    for prefix in ("train/", "val/"):
        for difficulty in ("easy", "hard"):
            for name in ("accuracy", "tool_call_ratio", "reward/mean"):
                assert f"{prefix}{difficulty}/{name}" in values, f"{prefix}{difficulty}/{name}"
    assert all(0.0 <= values[f"train/{d}/accuracy"] <= 1.0 for d in ("easy", "hard"))
    assert not any(name.startswith(("calls/", "val/calls/")) for name in values)  # no JSON calls, no call metrics


def test_a_function_calling_run_reports_its_calls_against_the_ground_truth(random_tiny, tmp_path):
    config = small_config(
        str(random_tiny),
        data={
            "train_dataset": "function-calling",
            "val_dataset": "function-calling:easy",
            "prompt_template": "tool-signatures",
            "max_prompt_tokens": 600,
        },
        tools={"protocol": "tool_call_json", "max_tool_calls": 1},
        reward={"name": "toolrl", "params": {"schedule": "constant"}},
        schedule={"max_steps": 1, "eval_every": 1, "checkpoint_every": 0},
    )
    train(config, tmp_path)
    (metrics,) = read_jsonl(tmp_path / "metrics.jsonl")
    values = metrics["values"]
    for prefix in ("", "val/"):
        for name in ("exact_match", "name_accuracy", "param_accuracy", "format_error_ratio"):
            assert 0.0 <= values[f"{prefix}calls/{name}"] <= 1.0
    # A random model writes no well-formed call: every completion is a format error.
    assert values["calls/format_error_ratio"] == 1.0 and values["calls/exact_match"] == 0.0
    # And per difficulty, named as the other subset metrics are: validation is all easy.
    assert values["val/easy/calls/format_error_ratio"] == 1.0 and "val/hard/calls/exact_match" not in values
    assert any(f"train/{level}/calls/exact_match" in values for level in ("easy", "hard"))
    # The prompt listed the offered tools as signatures (trainer.protocols.prompts, 'tool-signatures').
    reported = read_jsonl(tmp_path / "trajectories.jsonl")[0]
    assert "(" in json.dumps(reported["prompt"]) and ": string" in json.dumps(reported["prompt"])


def test_groups_without_signal_are_dropped_when_asked(random_tiny, tmp_path):
    # An untrained model never answers right: every torl reward is -1, no group carries a GRPO signal.
    config = small_config(str(random_tiny), filtering={"drop_all_same_reward": True, "max_resample_batches": 1})
    train(config, tmp_path, max_steps=1)
    (metrics,) = read_jsonl(tmp_path / "metrics.jsonl")
    values = metrics["values"]
    assert values["groups/kept"] == 0 and values["groups/sampled"] == 6
    assert "actor/pg_loss" not in values


@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None and torch.cuda.is_available(),
    reason="vllm and a GPU are here: engine 'vllm' is available (tests/trainer/test_vllm_engine.py)",
)
def test_vllm_engine_is_refused_clearly_on_this_build(random_tiny, tmp_path):
    with pytest.raises(ValueError, match="vLLM engine needs a GPU"):
        train(small_config(str(random_tiny), engine="vllm"), tmp_path)


def reported(protocol_name: str, *, reward: RewardResult | None = None) -> TrajectoryIn:
    """A trajectory as the training loop reports it: one tool call (where the protocol runs any), a
    dataset prompt with more than role and content, a numpy ground truth, a real reward's components."""
    protocol = get_protocol(protocol_name)
    execution = ToolExecution(call="print(6*7)", status="ok", output="42", duration_ms=3)
    text = "Let me compute. "
    executions: tuple[ToolExecution, ...] = ()
    if protocol.stop_marker is not None:
        text, executions = protocol.append_output(text, execution), (execution,)
    completion = Completion(text + " So \\boxed{42}.", protocol_name, executions, response_tokens=20)
    prompt = [{"role": "user", "content": "What is 6 * 7?", "name": "arithmetic"}]
    example = Example(id="7", prompt=prompt, ground_truth=numpy.int64(42), data_source="arithmetic")
    trajectory = Trajectory(
        completion, prompt_ids=[1, 2, 3], response_ids=[4], loss_mask=[1], tool_mask=[0], logprobs=[0.0]
    )
    if reward is None:
        terms = {"terms": [{"name": "torl"}, {"name": "torl", "weight": 2}]}  # components torl and torl@2
        (reward,) = score_group("weighted", [completion], "42", params=terms)
    group = Group(index=3, example=example, trajectories=[trajectory], rewards=[reward])
    return trajectory_report(group.example, 0, trajectory, reward, 0, 5, protocol)


@pytest.mark.parametrize("protocol_name", PROTOCOL_NAMES)
def test_a_reported_trajectory_is_valid_as_built_and_on_the_wire(protocol_name):
    report = reported(protocol_name)
    wire = IngestBatch.model_validate_json('{"trajectories": [' + report.model_dump_json(exclude_none=True) + "]}")
    assert wire.trajectories == [report]
    assert report.prompt == [ChatMessage(role="user", content="What is 6 * 7?")]
    assert report.ground_truth == 42 and set(report.reward_components) == {"torl", "torl@2"}
    tool_turns = [(turn.call, turn.status, turn.duration_ms) for turn in report.turns if turn.kind == "tool"]
    assert tool_turns == [("print(6*7)", "ok", 3.0)] * report.tool_call_count


def test_a_function_calling_reply_reports_the_calls_it_made():
    """tool_call_json's calls are scored, not run: the trajectory counts the calls in its text, as the
    step's tool-call metrics do (it reported the executions, 0, and the rollouts page said "tool calls
    0" beside "2 made", and its "used a tool" filter found none)."""
    protocol = get_protocol("tool_call_json")
    calls = '{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}'
    text = f"<think>two</think>\n<tool_call>\n{calls}\n</tool_call>"
    completion = Completion(text, "tool_call_json", response_tokens=20)
    example = Example(id="1", prompt=[{"role": "user", "content": "a then b"}], ground_truth="", data_source="fc")
    trajectory = Trajectory(
        completion, prompt_ids=[1, 2, 3], response_ids=[4], loss_mask=[1], tool_mask=[0], logprobs=[0.0]
    )
    report = trajectory_report(example, 0, trajectory, RewardResult(total=1.0), 0, 5, protocol)
    assert report.tool_call_count == 2 == step_metrics([[(completion, RewardResult(total=1.0))]])["tool_calls/max"]


def test_a_trajectory_the_dashboard_would_refuse_fails_where_it_is_built():
    with pytest.raises(ValidationError, match="reward"):
        reported("python_markdown", reward=RewardResult(total=math.nan, correct=False))


def test_a_reported_trajectory_shows_the_prompt_the_model_saw_and_the_answer_it_was_scored_on():
    """A raw template's text is what the model continued, so the rollout view shows that text, not
    the dataset row; and ToRL's reward reads the last box of the whole response (a box printed by
    the code counts), so the answer shown is the one scored."""
    from trainer.protocols.prompts import build_prompt

    protocol = get_protocol("python_markdown")
    execution = ToolExecution(call="print('\\\\boxed{42}')", status="ok", output="\\boxed{42}", duration_ms=3)
    text = protocol.append_output("Let me compute.\n```python\nprint('\\\\boxed{42}')\n```\n", execution)
    completion = Completion(text + "Done.", "python_markdown", (execution,), response_tokens=20)
    prompt = [{"role": "system", "content": "Please reason step by step."}, {"role": "user", "content": "6 * 7?"}]
    example = Example(id="7", prompt=prompt, ground_truth="42", data_source="torl")
    trajectory = Trajectory(
        completion, prompt_ids=[1, 2, 3], response_ids=[4], loss_mask=[1], tool_mask=[0], logprobs=[0.0]
    )
    (reward,) = score_group("torl", [completion], "42")
    group = Group(index=0, example=example, trajectories=[trajectory], rewards=[reward])
    raw = build_prompt(example, "python_markdown", "torl")
    report = trajectory_report(group.example, 0, trajectory, reward, 0, 5, protocol, raw)
    assert report.prompt == raw.text and report.prompt.endswith("\n6 * 7?\nAssistant:\n")
    assert reward.total == 1.0 and report.final_answer == "42"
    chat = build_prompt(example, "python_markdown", "torl-chat")
    report = trajectory_report(group.example, 0, trajectory, reward, 0, 5, protocol, chat)
    assert [m.role for m in report.prompt] == ["system", "user"]
    assert report.prompt[0].content != "Please reason step by step."  # the template's system prompt


@pytest.mark.parametrize("mini_batch_prompts", [None, 2])
def test_old_log_probs_taken_from_the_updates_first_pass_change_no_number(
    random_tiny, tmp_path, monkeypatch, mini_batch_prompts
):
    """On-policy, the first mini-batch's old log-probs come from the update's own first forward pass
    rather than a pass of their own: every metric of the run is what the separate pass gives, with
    one forward pass fewer per micro-batch of that mini-batch."""
    import trainer.loop.update as update_module

    config = small_config(str(random_tiny), optim={"learning_rate": 1e-3, "mini_batch_prompts": mini_batch_prompts})
    passes: list[int] = []
    logprobs = update_module.GRPOUpdate.logprobs

    def counted(self, model, batch):
        passes[-1] += 1
        return logprobs(self, model, batch)

    monkeypatch.setattr(update_module.GRPOUpdate, "logprobs", counted)
    runs = {}
    for shortcut in (True, False):
        monkeypatch.setattr(update_module, "without_dropout", lambda model, shortcut=shortcut: shortcut)
        passes.append(0)
        train(config, tmp_path / str(shortcut))
        runs[shortcut] = [
            {k: v for k, v in m["values"].items() if not k.startswith(("timing_s/", "perf/"))}
            for m in read_jsonl(tmp_path / str(shortcut) / "metrics.jsonl")
        ]
    assert runs[True] == runs[False]
    if mini_batch_prompts is None:  # one optimizer step per update: the ratio is exactly 1 throughout
        assert all(m["actor/approx_kl"] == 0.0 and m["actor/clip_ratio/high"] == 0.0 for m in runs[True])
    # 3 prompts × 4 samples: one micro-batch per mini-batch, one mini-batch (or two), two steps.
    assert passes[1] - passes[0] == 2


def test_a_model_with_dropout_computes_its_old_log_probs_in_a_pass_of_their_own():
    from trainer.loop.update import without_dropout
    from trainer.models import build_tiny_model

    model, _ = build_tiny_model(seed=0)
    assert without_dropout(model)
    model.config.attention_dropout = 0.1
    assert not without_dropout(model)
    model.config.attention_dropout = 0.0
    model.model.layers[0].mlp.add_module("dropout", torch.nn.Dropout(0.2))
    assert not without_dropout(model)
