"""The asynchronous rollout loop with the real sandbox.

Tool calls must happen deterministically, which a randomly initialised model will not do, so the
bookkeeping tests drive the loop with ScriptedEngine: a test-only Engine that "generates" given
texts one character per step, batched and with the same stop-string, EOS, length and on_finish
behaviour as the hf engine. The last test runs the loop on the real hf engine.
"""

import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence

import pytest
import torch

from trainer.config import RunConfig
from trainer.engines import GenerationOutput, GenerationRequest
from trainer.engines.hf import HFEngine
from trainer.models import CharTokenizer, build_tiny_model
from trainer.protocols import get_protocol
from trainer.rollout.multi_turn import RolloutSettings, rollout

SCRIPTED_LOGPROB = -0.25
CALL_42 = "Let me compute.\n```python\nprint(6*7)\n```\n```output"


class ScriptedEngine:
    """Replays, for each prompt, one scripted text per turn (test double, not a model).

    Each step emits one character for every sequence in the batch, after `step_s` of sleep (the
    compute a model would spend), stopping at a stop string, at max_new_tokens, or with EOS once
    the turn's text is used up.
    """

    def __init__(self, tokenizer: CharTokenizer, scripts: dict[str, list[str]], step_s: float = 0.0) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.step_s = step_s
        self.turns: Counter[Hashable] = Counter()
        self.released: list[Hashable] = []

    def release(self, cache_key: Hashable) -> None:
        self.released.append(cache_key)

    def _plan(self, request: GenerationRequest) -> list[int]:
        context = self.tokenizer.decode(request.token_ids)
        prompt = next(p for p in self.scripts if context.startswith(p))
        turn = self.turns[request.cache_key]
        self.turns[request.cache_key] += 1
        turns = self.scripts[prompt]
        text = turns[turn] if turn < len(turns) else ""
        return self.tokenizer.encode(text) + [self.tokenizer.eos_token_id]

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_finish: Callable[[int, GenerationOutput], None] | None = None,
    ) -> list[GenerationOutput]:
        plans = [self._plan(r) for r in requests]
        emitted: list[list[int]] = [[] for _ in requests]
        outputs: dict[int, GenerationOutput] = {}
        while len(outputs) < len(requests):
            time.sleep(self.step_s)
            for i, request in enumerate(requests):
                if i in outputs:
                    continue
                emitted[i].append(plans[i][len(emitted[i])])
                text = self.tokenizer.decode(emitted[i], skip_special_tokens=True)
                stop = next((s for s in request.stop_strings if text.endswith(s)), None)
                if stop is not None:
                    reason = "stop"
                elif emitted[i][-1] == self.tokenizer.eos_token_id:
                    reason = "eos"
                elif len(emitted[i]) >= request.max_new_tokens:
                    reason = "length"
                else:
                    continue
                outputs[i] = GenerationOutput(emitted[i], text, [SCRIPTED_LOGPROB] * len(emitted[i]), reason, stop)
                if on_finish is not None:
                    on_finish(i, outputs[i])
        return [outputs[i] for i in range(len(requests))]


@pytest.fixture(scope="module")
def tokenizer() -> CharTokenizer:
    return CharTokenizer()


def _run(tokenizer, scripts, *, prompts=None, step_s=0.0, **settings):
    engine = ScriptedEngine(tokenizer, scripts, step_s=step_s)
    prompts = list(scripts) if prompts is None else prompts
    result = rollout(engine, [tokenizer.encode(p) for p in prompts], RolloutSettings(**settings))
    return engine, result


def _check_alignment(tokenizer, trajectory, *, train_on_tool_output=False):
    n = len(trajectory.response_ids)
    assert len(trajectory.loss_mask) == len(trajectory.tool_mask) == len(trajectory.logprobs) == n
    assert tokenizer.decode(trajectory.response_ids, skip_special_tokens=True) == trajectory.completion.text
    columns = zip(trajectory.tool_mask, trajectory.loss_mask, trajectory.logprobs, strict=True)
    for token_is_tool, trained, logprob in columns:
        assert logprob == (0.0 if token_is_tool else SCRIPTED_LOGPROB)
        assert trained == (1 if train_on_tool_output or not token_is_tool else 0)
    assert trajectory.completion.response_tokens == n - sum(trajectory.tool_mask)


def _tool_text(tokenizer, trajectory):
    return tokenizer.decode([t for t, m in zip(trajectory.response_ids, trajectory.tool_mask, strict=True) if m])


def test_tool_output_comes_back_and_the_mask_covers_exactly_it(tokenizer):
    _, result = _run(tokenizer, {"Q: 6*7?\n": [CALL_42, "\nSo \\boxed{42}."]}, temperature=1.0)
    (trajectory,) = result.trajectories
    completion = trajectory.completion
    assert completion.text == CALL_42 + "\n42\n```\n" + "\nSo \\boxed{42}."
    assert [(e.call, e.status, e.output) for e in completion.executions] == [("print(6*7)\n", "ok", "42\n")]
    assert not completion.truncated
    _check_alignment(tokenizer, trajectory)
    protocol = get_protocol("python_markdown")
    assert _tool_text(tokenizer, trajectory) == "".join(protocol.tool_texts(completion.text)) == "\n42\n```\n"
    assert protocol.final_answer(completion.text, tool_outputs=1) == "42"
    assert trajectory.response_ids[-1] == tokenizer.eos_token_id  # EOS is trained: the model learns to stop
    assert [s.kind for s in trajectory.spans] == ["gen", "tool", "gen"]
    assert result.gen_s > 0 and result.tool_s > 0


def test_train_on_tool_output_unmasks_tool_tokens(tokenizer):
    _, result = _run(tokenizer, {"Q\n": [CALL_42, "done"]}, train_on_tool_output=True)
    (trajectory,) = result.trajectories
    _check_alignment(tokenizer, trajectory, train_on_tool_output=True)
    assert sum(trajectory.tool_mask) == len("\n42\n```\n") and all(trajectory.loss_mask)


def test_a_marker_the_protocol_moves_to_a_new_line_becomes_tool_text(tokenizer):
    # python_markdown puts "```output" on its own line: the generated marker glued to the fence is
    # replaced, and text and tokens still agree.
    _, result = _run(tokenizer, {"Q\n": ["```python\nprint(6*7)\n``````output", "ok"]})
    (trajectory,) = result.trajectories
    assert trajectory.completion.text == "```python\nprint(6*7)\n```\n```output\n42\n```\nok"
    _check_alignment(tokenizer, trajectory)
    assert _tool_text(tokenizer, trajectory) == "\n```output\n42\n```\n"


def test_budget_stops_tool_execution(tokenizer):
    second = "\nagain:\n```python\nprint(1+1)\n```\n```output\n2\n```\n\\boxed{42}"
    scripts = {"Q\n": [CALL_42, second]}
    _, result = _run(tokenizer, scripts, max_tool_calls=1)
    (trajectory,) = result.trajectories
    assert len(trajectory.completion.executions) == 1
    # The second block was written by the model itself (not executed): trained, not masked.
    assert trajectory.completion.text.endswith(second)
    assert _tool_text(tokenizer, trajectory) == "\n42\n```\n"
    _check_alignment(tokenizer, trajectory)

    engine, result = _run(tokenizer, scripts, max_tool_calls=0)
    (trajectory,) = result.trajectories
    assert trajectory.completion.executions == () and sum(trajectory.tool_mask) == 0
    assert trajectory.completion.text == CALL_42  # no stop: the turn ran on to EOS
    assert len(engine.released) == 1  # the trajectory released its engine state


def test_with_tirlab_feedback_missing_code_and_timeout_are_failed_calls(tokenizer):
    sleepy = "```python\nimport time\ntime.sleep(5)\n```\n```output"
    scripts = {"A\n": ["no code here ```output", "x"], "B\n": [sleepy, "y"]}
    _, result = _run(tokenizer, scripts, sandbox_timeout_s=0.5, max_tool_calls=2, feedback="tirlab")
    no_code, timed_out = (t.completion for t in result.trajectories)
    assert [(e.call, e.status) for e in no_code.executions] == [("", "error")]
    assert "SyntaxError" in no_code.text
    assert [e.status for e in timed_out.executions] == ["timeout"]
    assert "TimeoutError" in timed_out.text
    for trajectory in result.trajectories:
        _check_alignment(tokenizer, trajectory)


def test_truncation_at_the_response_limit_is_recorded(tokenizer):
    # Cut while generating.
    _, result = _run(tokenizer, {"Q\n": ["x" * 50]}, max_response_tokens=20)
    (trajectory,) = result.trajectories
    assert trajectory.completion.truncated and len(trajectory.response_ids) == 20
    assert trajectory.completion.text == "x" * 20
    _check_alignment(tokenizer, trajectory)
    # Cut inside the appended tool output: the output is cut at the limit.
    limit = len(CALL_42) + 3
    _, result = _run(tokenizer, {"Q\n": [CALL_42, "never seen"]}, max_response_tokens=limit)
    (trajectory,) = result.trajectories
    assert trajectory.completion.truncated and len(trajectory.response_ids) == limit
    assert trajectory.completion.text == CALL_42 + "\n42"
    assert trajectory.tool_mask[-3:] == [1, 1, 1]
    _check_alignment(tokenizer, trajectory)
    # A response that ends exactly at the limit with EOS is not truncated.
    _, result = _run(tokenizer, {"Q\n": ["abc"]}, max_response_tokens=4)
    assert not result.trajectories[0].completion.truncated


def test_other_trajectories_keep_generating_during_a_slow_tool_call(tokenizer):
    slow = "```python\nimport time\ntime.sleep(0.5)\nprint(1)\n```\n```output"
    quick = "```python\nprint(1)\n```\n```output"
    scripts = {"slow\n": [slow, "done"], "quick\n": [quick, quick, quick, "done"]}
    _, result = _run(tokenizer, scripts, step_s=0.002, max_tool_calls=3)
    slow_run, quick_run = result.trajectories
    (slow_tool,) = [s for s in slow_run.spans if s.kind == "tool"]
    assert slow_tool.end - slow_tool.start >= 0.5
    quick_gens = [s for s in quick_run.spans if s.kind == "gen"]
    inside = [s for s in quick_gens if slow_tool.start <= s.start and s.end <= slow_tool.end]
    assert len(inside) >= 2, (slow_tool, quick_gens)
    assert len(quick_run.completion.executions) == 3
    # Overlap: the wall time is below the sum of engine time and tool time.
    assert result.wall_s < result.gen_s + result.tool_s


class AdmittingEngine(ScriptedEngine):
    """ScriptedEngine with continuous batching: requests `admit` returns join at the next step."""

    def generate(self, requests, on_finish=None, admit=None):
        requests = list(requests)
        plans = [self._plan(r) for r in requests]
        emitted: list[list[int]] = [[] for _ in requests]
        outputs: dict[int, GenerationOutput] = {}
        while len(outputs) < len(requests):
            for joining in admit() if admit is not None else []:
                requests.append(joining)
                plans.append(self._plan(joining))
                emitted.append([])
            time.sleep(self.step_s)
            for i, request in enumerate(requests):
                if i in outputs:
                    continue
                emitted[i].append(plans[i][len(emitted[i])])
                text = self.tokenizer.decode(emitted[i], skip_special_tokens=True)
                stop = next((s for s in request.stop_strings if text.endswith(s)), None)
                if stop is None and emitted[i][-1] != self.tokenizer.eos_token_id:
                    continue
                outputs[i] = GenerationOutput(
                    emitted[i], text, [SCRIPTED_LOGPROB] * len(emitted[i]), "stop" if stop else "eos", stop
                )
                if on_finish is not None:
                    on_finish(i, outputs[i])
        return [outputs[i] for i in range(len(requests))]


@pytest.mark.parametrize("continuous", [True, False])
def test_a_turn_that_is_ready_joins_the_running_engine_call(tokenizer, continuous):
    quick = "```python\nprint(6 * 7)\n```\n```output"
    scripts = {"long\n": ["thinking " * 30 + "\\boxed{1}"], "quick\n": [quick, "\\boxed{42}"]}
    engine = AdmittingEngine(tokenizer, scripts, step_s=0.005)
    prompts = [tokenizer.encode(p) for p in scripts]
    settings = RolloutSettings(continuous_batching=continuous, max_response_tokens=512)
    result = rollout(engine, prompts, settings)
    long_run, quick_run = result.trajectories
    assert quick_run.completion.text.endswith("\\boxed{42}") and quick_run.completion.executions[0].output == "42\n"
    long_gen = next(s for s in long_run.spans if s.kind == "gen")
    answer = [s for s in quick_run.spans if s.kind == "gen"][-1]
    if continuous:
        # The answer turn joined the long call and finished inside it: one engine call in all.
        assert result.batch_sizes == [2] and answer.end < long_gen.end
    else:
        # It waited for the long call to end, then took a call of its own.
        assert result.batch_sizes == [2, 1] and answer.end > long_gen.end


def test_an_engine_failure_reaches_the_caller(tokenizer):
    class Broken(ScriptedEngine):
        def generate(self, requests, on_finish=None):
            raise RuntimeError("out of memory")

    engine = Broken(tokenizer, {"Q\n": ["x"]})
    with pytest.raises(RuntimeError, match="out of memory"):
        rollout(engine, [tokenizer.encode("Q\n")] * 3, RolloutSettings())
    assert len(engine.released) == 3


def test_settings_from_run_config():
    config = RunConfig.model_validate(
        {"tools": {"max_tool_calls": 3, "train_on_tool_output": True}, "data": {"max_response_tokens": 99}}
    )
    settings = RolloutSettings.from_config(config)
    assert (settings.max_tool_calls, settings.train_on_tool_output, settings.max_response_tokens) == (3, True, 99)
    assert settings.feedback == "torl"
    tirlab = RunConfig.model_validate({"tools": {"feedback": "tirlab"}})
    assert RolloutSettings.from_config(tirlab).feedback == "tirlab"


def test_rollout_on_the_hf_engine_keeps_tokens_and_logprobs_aligned():
    model, tokenizer = build_tiny_model(seed=0)
    engine = HFEngine(model.eval(), tokenizer, num_threads=1)
    prompts = [tokenizer.encode(p) for p in ["What is 3+4?\nassistant: ", "Q: 12*7\nA: "] * 2]
    settings = RolloutSettings(max_response_tokens=24, temperature=1.0)
    result = rollout(engine, prompts, settings, seed=7)
    again = rollout(engine, prompts, settings, seed=7)
    assert [t.response_ids for t in result.trajectories] == [t.response_ids for t in again.trajectories]
    assert engine.kept_keys == []  # every trajectory released its cache
    for trajectory in result.trajectories:
        n = len(trajectory.response_ids)
        assert 0 < n <= 24 and len(trajectory.logprobs) == n
        assert trajectory.completion.truncated == (n == 24 and trajectory.response_ids[-1] != tokenizer.eos_token_id)
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([trajectory.prompt_ids + trajectory.response_ids])).logits[0]
        logp = torch.log_softmax(logits.float(), -1)
        start = len(trajectory.prompt_ids) - 1
        expected = [float(logp[start + i, t]) for i, t in enumerate(trajectory.response_ids)]
        for got, want, is_tool in zip(trajectory.logprobs, expected, trajectory.tool_mask, strict=True):
            assert got == (0.0 if is_tool else pytest.approx(want, abs=1e-4))
