"""bench/rollout.py's parts: the cost-model engine keeps its timing model, the synchronous baseline
does the same work as the asynchronous loop, and the benchmark runs end to end."""

import asyncio
import dataclasses
import re
import time

import pytest

from bench import rollout as bench_rollout
from bench._cost_model import CostModel, CostModelEngine, ScriptedPolicy
from bench._sync_rollout import sync_rollout
from trainer.engines import GenerationOutput, GenerationRequest
from trainer.protocols import get_protocol
from trainer.protocols.python_markdown import OUTPUT_MARKER
from trainer.rollout.multi_turn import RolloutSettings, arollout

# Sleeping can only overrun its deadline; on a loaded 2-core machine by this much at most.
SLACK_S = 0.25


def _requests(engine: CostModelEngine, count: int) -> list[GenerationRequest]:
    tokenizer = engine.tokenizer
    return [
        GenerationRequest(
            token_ids=tokenizer.encode(f"user: what is {i} * 7?\nassistant: ", add_special_tokens=False),
            max_new_tokens=1024,
            stop_strings=[OUTPUT_MARKER],
            seed=i,
        )
        for i in range(count)
    ]


def test_a_batch_takes_its_longest_sequence_times_the_step_cost() -> None:
    engine = CostModelEngine(CostModel(step_s=0.01, prefill_s=0.0, prefill_token_s=0.0))
    started = time.perf_counter()
    outputs = engine.generate(_requests(engine, 6))
    elapsed = time.perf_counter() - started
    steps = max(len(o.new_token_ids) for o in outputs)
    assert steps * 0.01 <= elapsed <= steps * 0.01 + SLACK_S
    assert engine.steps == steps


def test_each_sequence_is_reported_when_its_own_tokens_are_done() -> None:
    engine = CostModelEngine(CostModel(step_s=0.01, prefill_s=0.0, prefill_token_s=0.0))
    requests = _requests(engine, 6)
    finished_at: dict[int, float] = {}
    started = time.perf_counter()

    def on_finish(index: int, output: GenerationOutput) -> None:
        finished_at[index] = time.perf_counter() - started

    outputs = engine.generate(requests, on_finish)
    lengths = [len(o.new_token_ids) for o in outputs]
    assert len(set(lengths)) > 1, "the scripted policy should give sequences of different lengths"
    for index, length in enumerate(lengths):
        assert length * 0.01 <= finished_at[index] <= length * 0.01 + SLACK_S
    shortest, longest = lengths.index(min(lengths)), lengths.index(max(lengths))
    assert finished_at[shortest] < finished_at[longest] - (max(lengths) - min(lengths)) * 0.01 + SLACK_S


def test_rows_beyond_max_batch_make_each_step_cost_more() -> None:
    cost = CostModel(step_s=0.01, max_batch=2)
    assert cost.step_cost(1) == cost.step_cost(2) == 0.01
    assert cost.step_cost(3) == cost.step_cost(4) == 0.02


def test_scripted_policy_calls_the_tool_then_answers_with_the_last_output() -> None:
    engine = CostModelEngine(CostModel(step_s=0.0))
    output = engine.generate(_requests(engine, 1))[0]
    assert output.finish_reason == "stop" and output.stop_string == OUTPUT_MARKER
    assert "```python\nimport time\ntime.sleep(" in output.text
    # Once the budget is used up (no stop string), the policy answers with the last tool output.
    context = get_protocol("python_markdown").append_output(output.text, "4321")
    request = GenerationRequest(token_ids=engine.tokenizer.encode(context), max_new_tokens=1024, seed=5)
    answer = engine.generate([request])[0]
    assert answer.finish_reason == "eos"
    assert answer.text.endswith("The answer is \\boxed{4321}.")


def test_a_request_admitted_mid_call_ends_its_own_length_after_joining() -> None:
    engine = CostModelEngine(CostModel(step_s=0.01, prefill_s=0.0, prefill_token_s=0.0))
    # Seeds 0 and 2: a 183-token and a 93-token generation.
    first, _, second = _requests(engine, 3)
    lengths = [len(o.new_token_ids) for o in CostModelEngine(CostModel(step_s=0.0)).generate([first, second])]
    started = time.perf_counter()
    joined_at: list[float] = []
    finished_at: dict[int, float] = {}

    def admit() -> list[GenerationRequest]:
        if not joined_at and time.perf_counter() - started >= 0.1:
            joined_at.append(time.perf_counter() - started)
            return [second]
        return []

    outputs = engine.generate([first], lambda i, _: finished_at.setdefault(i, time.perf_counter() - started), admit)
    assert [len(o.new_token_ids) for o in outputs] == lengths
    (joined,) = joined_at
    # The joiner does not wait for the running call: it ends its own length after joining, first. It
    # joins on the engine's schedule, which a late wake-up leaves behind the clock that `joined` reads
    # (and later steps catch up): it may end up to that much early too.
    assert abs(finished_at[1] - (joined + lengths[1] * 0.01)) <= SLACK_S
    assert finished_at[1] < finished_at[0]
    assert lengths[0] * 0.01 <= finished_at[0] <= lengths[0] * 0.01 + SLACK_S
    assert (engine.calls, engine.admitted) == (1, 1)


def test_sync_and_async_loops_make_the_same_calls_and_answers() -> None:
    policy = ScriptedPolicy(slow_fraction=0.3, slow_min_s=0.05, slow_max_s=0.1)
    engine = CostModelEngine(CostModel(step_s=0.0005), policy)
    tokenizer = engine.tokenizer
    prompts = [tokenizer.encode(f"user: what is {i} * 13?\nassistant: ", add_special_tokens=False) for i in range(6)]
    settings = RolloutSettings(protocol="python_markdown", max_tool_calls=3, max_response_tokens=1024)
    asynchronous = asyncio.run(arollout(engine, prompts, settings, seed=3))
    synchronous = asyncio.run(sync_rollout(engine, prompts, settings, seed=3))
    whole_calls = dataclasses.replace(settings, continuous_batching=False)
    whole = asyncio.run(arollout(engine, prompts, whole_calls, seed=3))
    protocol = get_protocol("python_markdown")
    calls_per_trajectory = []
    for a, s, c in zip(asynchronous.trajectories, synchronous.trajectories, whole.trajectories, strict=True):
        assert (c.completion.text, c.response_ids, c.loss_mask) == (s.completion.text, s.response_ids, s.loss_mask)
        assert [e.call for e in a.completion.executions] == [e.call for e in s.completion.executions]
        assert [e.output for e in a.completion.executions] == [e.output for e in s.completion.executions]
        assert all(e.status == "ok" for e in s.completion.executions)
        answer = protocol.final_answer(s.completion.text, tool_outputs=len(s.completion.executions))
        assert answer == protocol.final_answer(a.completion.text, tool_outputs=len(a.completion.executions))
        assert answer == s.completion.executions[-1].output.strip()
        assert (a.response_ids, a.loss_mask, a.tool_mask) == (s.response_ids, s.loss_mask, s.tool_mask)
        calls_per_trajectory.append(len(s.completion.executions))
    assert set(calls_per_trajectory) <= {1, 2, 3} and len(set(calls_per_trajectory)) > 1
    # The baseline generated turn by turn: one engine call per turn, for every trajectory still going.
    assert synchronous.batch_sizes[0] == len(prompts)
    assert len(synchronous.batch_sizes) == max(calls_per_trajectory) + 1


def test_quick_benchmark_prints_the_ratio(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    # main() sets the sandbox pool size through the environment; monkeypatch restores it.
    monkeypatch.setenv("TIRLAB_SANDBOX_WORKERS", "8")
    assert bench_rollout.main(["--quick", "--cases", "cost"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^sync/async cost model 2 ms/step, 16 traj: x\d+\.\d\d$", out, re.MULTILINE)
    assert re.search(r"\| 16/16 \|$", out, re.MULTILINE), out
