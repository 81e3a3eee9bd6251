"""rollout.async_rollouts: step t+1 is rolled out by a behaviour copy of the policy while step t trains.

What trainer.rollout.off_policy promises: the rollout of step t+1 samples with the weights step t's update
starts from (v_t), the update's old log-probs are that copy's, `async/staleness` says so, a run
closes its background rollout however it ends, a seeded run repeats itself, a resumed run starts
on-policy, and the asynchronous quickstart still learns.
"""

import asyncio
import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import sandbox
from bench._cost_model import CostModel, CostModelEngine
from tests.trainer._learning import REPO, window
from trainer.config import TINY_MODEL, validate_config
from trainer.grpo import response_logprobs
from trainer.loop.train import Trainer, run_training
from trainer.report.client import Reporter
from trainer.rollout.multi_turn import RolloutSettings, RolloutStopped, arollout
from trainer.rollout.off_policy import CpuSplit, RolloutPipeline, cpu_split


class _Silent:
    stopped_by_dashboard = False

    def log_metrics(self, step: int, values: dict[str, float]) -> None: ...
    def log_trajectories(self, trajectories: list) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def set_phase(self, *args: Any, **kwargs: Any) -> None: ...


def async_config(**rollout: Any) -> dict:
    """The cold-started tiny model on a small batch, with a learning rate high enough that every
    update moves the weights (so each version's log-probs are told apart)."""
    return {
        "model": {"name_or_path": TINY_MODEL},
        "data": {"train_dataset": "arithmetic", "max_response_tokens": 64},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1, "feedback": "tirlab"},
        "rollout": {"prompts_per_step": 2, "group_size": 4, "async_rollouts": True, **rollout},
        "optim": {"learning_rate": 1e-3},
        "grpo": {"scale_by_std": True},
        "schedule": {"max_steps": 3},
    }


def make_trainer(model_cache: Path, tmp_path: Path, **rollout: Any) -> Trainer:
    config = validate_config(async_config(**rollout))
    return Trainer(config, reporter=_Silent(), out_dir=tmp_path, model_cache=model_cache, log=lambda _: None)


def digest(model: torch.nn.Module) -> str:
    return hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()


# -- the pipeline on its own ------------------------------------------------------------------------


def test_a_step_not_started_in_the_background_is_collected_when_taken():
    ran: list[tuple[int, str]] = []
    pipeline = RolloutPipeline(lambda step: ran.append((step, threading.current_thread().name)) or step)
    try:
        assert pipeline.take(0)[0] == 0
        pipeline.start(1)
        assert pipeline.take(1)[0] == 1
    finally:
        pipeline.close()
    assert ran[0] == (0, threading.current_thread().name)
    assert ran[1][0] == 1 and ran[1][1].startswith("tirlab-rollout")


def test_only_one_step_is_ever_in_flight_and_steps_are_taken_in_order():
    pipeline = RolloutPipeline(lambda step: step)
    try:
        pipeline.start(1)
        with pytest.raises(RuntimeError, match="one step off-policy at most"):
            pipeline.start(2)
        with pytest.raises(RuntimeError, match="in flight is step 1"):
            pipeline.take(2)
    finally:
        pipeline.close()


def test_a_background_failure_is_raised_where_the_step_is_taken():
    def job(step: int) -> int:
        raise ValueError(f"sandbox gone at step {step}")

    pipeline = RolloutPipeline(job)
    try:
        pipeline.start(4)
        with pytest.raises(ValueError, match="sandbox gone at step 4"):
            pipeline.take(4)
    finally:
        pipeline.close()


def test_cpu_runs_give_the_rollout_and_the_update_their_own_cores():
    cpu = torch.device("cpu")
    assert cpu_split(cpu, 1, cores=2) == CpuSplit(rollout=1, update=1)  # the tiny model's engine: one thread
    assert cpu_split(cpu, None, cores=8) == CpuSplit(rollout=4, update=4)
    assert cpu_split(torch.device("meta"), 1, cores=2) is None


def test_a_stopped_rollout_ends_while_its_tool_calls_are_still_running():
    engine = CostModelEngine(CostModel(step_s=0.001))
    prompts = [engine.tokenizer.encode(f"user: what is {i} * 7?\nassistant: ") for i in range(4)]
    stop = threading.Event()

    async def never_returns(code: str, *, timeout_s: float, memory_mb: int) -> sandbox.Result:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    settings = RolloutSettings(protocol="python_markdown", max_tool_calls=3, max_response_tokens=1024)
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    started = time.perf_counter()
    with pytest.raises(RolloutStopped):
        asyncio.run(arollout(engine, prompts, settings, seed=0, run_code=never_returns, stop=stop))
    assert time.perf_counter() - started < 3
    timer.join()


# -- the trainer ------------------------------------------------------------------------------------


def test_step_t_plus_1_is_sampled_by_the_weights_step_t_starts_from(tiny_model_cache, tmp_path, monkeypatch):
    sampled: dict[int, tuple[str, str]] = {}  # step -> (behaviour weights, thread)
    policy_before_update: list[str] = []
    collect, update = Trainer.collect, Trainer.update

    def recording_collect(self: Trainer, step: int, *, behaviour: bool = False):
        if behaviour:
            sampled[step] = (digest(self.behaviour.model), threading.current_thread().name)
        return collect(self, step, behaviour=behaviour)

    def recording_update(self: Trainer, groups, mini_batches=None):
        policy_before_update.append(digest(self.model))
        return update(self, groups, mini_batches)

    monkeypatch.setattr(Trainer, "collect", recording_collect)
    monkeypatch.setattr(Trainer, "update", recording_update)
    trainer = make_trainer(tiny_model_cache, tmp_path)
    try:
        staleness = [trainer.train_step(last=step == 2).metrics["async/staleness"] for step in range(3)]
    finally:
        trainer.close()
    assert len(set(policy_before_update)) == 3, "every update moves the weights"
    # Step 0 is sampled by v0 in the foreground; step t+1 by v_t (what step t's update starts from), in the background.
    assert sampled[0] == (policy_before_update[0], threading.current_thread().name)
    for step in (1, 2):
        assert sampled[step][0] == policy_before_update[step - 1]
        assert sampled[step][1].startswith("tirlab-rollout")
    assert staleness == [0.0, 1.0, 1.0]


def test_the_old_log_probs_are_the_behaviour_copys(tiny_model_cache, tmp_path, monkeypatch):
    seen: list[tuple[dict[str, torch.Tensor], list[dict[str, Any]]]] = []
    update = Trainer.update

    def recording_update(self: Trainer, groups, mini_batches=None):
        state = {k: v.clone() for k, v in self.model.state_dict().items()}
        seen.append((state, [b for mini_batch in mini_batches for b in mini_batch]))
        return update(self, groups, mini_batches)

    monkeypatch.setattr(Trainer, "update", recording_update)
    trainer = make_trainer(tiny_model_cache, tmp_path)
    try:
        for step in range(2):
            trainer.train_step(last=step == 1)
        model = trainer.behaviour.model
        temperature = trainer.config.rollout.temperature

        def logprobs(state: dict[str, torch.Tensor], batch: dict[str, Any]) -> torch.Tensor:
            model.load_state_dict(state)
            with torch.no_grad():
                scored, _ = response_logprobs(
                    model, batch["prompt_ids"], batch["prompt_mask"], batch["prompt_of"], batch["response_ids"],
                    batch["response_mask"], temperature=temperature,
                )  # fmt: skip
            return scored * batch["mask"]

        (v0, step0), (v1, step1) = seen
        for batch in step0:
            # On-policy: the copy held the policy's very weights, so the ratio starts at exactly 1.
            assert torch.equal(batch["old_logprobs"] * batch["mask"], logprobs(v0, batch))
        for batch in step1:
            old = batch["old_logprobs"] * batch["mask"]
            assert torch.allclose(old, logprobs(v0, batch), atol=1e-5)  # sampled by v0 ...
            assert (old - logprobs(v1, batch)).abs().max() > 1e-3  # ... not by the policy being updated (v1)
    finally:
        trainer.close()


def test_close_stops_the_rollout_in_flight(tiny_model_cache, tmp_path, monkeypatch):
    class EndlessEngine:
        """A generation that never ends by itself: only the rollout's stop ends it."""

        def __init__(self, tokenizer) -> None:
            self.tokenizer = tokenizer

        def generate(self, requests, on_finish=None, admit=None):
            while True:
                admit()
                time.sleep(0.01)

        def release(self, cache_key) -> None: ...
        def clear_cache(self) -> None: ...

    outcome: list[BaseException | None] = []
    collect_behind = Trainer._collect_behind

    def recording(self: Trainer, step: int):
        try:
            result = collect_behind(self, step)
        except BaseException as exc:
            outcome.append(exc)
            raise
        outcome.append(None)
        return result

    monkeypatch.setattr(Trainer, "_collect_behind", recording)
    trainer = make_trainer(tiny_model_cache, tmp_path)
    trainer.train_step()  # step 0; step 1 rolls out with the real engine meanwhile
    trainer.behaviour.engine = EndlessEngine(trainer.tokenizer)
    trainer.train_step()  # step 1; step 2 now rolls out for ever
    assert trainer.pipeline.in_flight == 2
    started = time.perf_counter()
    trainer.close()
    assert time.perf_counter() - started < 10
    assert isinstance(outcome[-1], RolloutStopped)
    assert not [t for t in threading.enumerate() if t.name.startswith("tirlab-rollout")]
    trainer.close()  # twice is harmless


def test_a_failed_run_leaves_no_rollout_running(tiny_model_cache, tmp_path, monkeypatch):
    def failing_update(self: Trainer, groups, mini_batches=None):
        if self.step == 1:
            raise RuntimeError("out of memory")
        return {}

    monkeypatch.setattr(Trainer, "update", failing_update)
    config = validate_config(async_config())
    with pytest.raises(RuntimeError, match="out of memory"):
        run_training(config, reporter=_Silent(), out_dir=tmp_path, model_cache=tiny_model_cache, log=lambda _: None)
    assert not [t for t in threading.enumerate() if t.name.startswith("tirlab-rollout")]


def _curve(out: Path) -> list[dict[str, float]]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r["values"].items() if not k.startswith(("timing_s/", "perf/"))} for r in rows]


def test_a_seeded_async_run_repeats_itself_and_a_resumed_one_starts_on_policy(tiny_model_cache, tmp_path):
    config = validate_config({**async_config(), "schedule": {"max_steps": 3, "checkpoint_every": 2}})
    for name in ("one", "two"):
        with Reporter(tmp_path / name) as reporter:
            run_training(config, reporter=reporter, out_dir=tmp_path / name, model_cache=tiny_model_cache)
    one, two = _curve(tmp_path / "one"), _curve(tmp_path / "two")
    assert len(one) == 3 and one == two
    assert [m["async/staleness"] for m in one] == [0.0, 1.0, 1.0]

    with Reporter(tmp_path / "resumed") as reporter:
        run_training(
            config, reporter=reporter, out_dir=tmp_path / "resumed", model_cache=tiny_model_cache,
            resume=tmp_path / "one" / "checkpoints" / "step-2",
        )  # fmt: skip
    (resumed,) = _curve(tmp_path / "resumed")
    # Step 2 again, now sampled by the checkpoint's own weights rather than the step before's.
    assert resumed["async/staleness"] == 0.0
    assert resumed["actor/clip_ratio/low"] == 0.0 and resumed["actor/clip_ratio/high"] == 0.0


def test_synchronous_runs_make_no_copy_and_report_staleness_0(tiny_model_cache, tmp_path):
    trainer = make_trainer(tiny_model_cache, tmp_path, async_rollouts=False)
    try:
        assert trainer.behaviour is None and trainer.pipeline is None
        metrics = trainer.train_step().metrics
    finally:
        trainer.close()
    assert metrics["async/staleness"] == 0.0
    assert metrics["timing_s/wait_rollout"] > 0


# -- learning ---------------------------------------------------------------------------------------


# About a minute on an idle 2-core machine (12 steps of 128 trajectories), more on a busy one.
@pytest.mark.timeout(1200)
def test_the_async_quickstart_learns_to_call_the_tool(tiny_model_cache, tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", "--preset", "skyrl-async", "--max-steps", "12", "--out", str(out),
         "--model-cache", str(tiny_model_cache)],
        cwd=REPO, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    values = _curve(out)
    assert len(values) == 12
    assert [v["async/staleness"] for v in values] == [0.0] + [1.0] * 11
    # As the quickstart's (test_quickstart_learns.py), 12 steps in: measured tool use 0.51 -> 0.76 and
    # hard-problem accuracy 0.56 -> 0.77 (means of the first and last 3 steps).
    start, end = slice(0, 3), slice(-3, None)
    assert window(values, "tool_call_ratio", end) > window(values, "tool_call_ratio", start) + 0.15
    hard = "train/hard/accuracy"
    assert window(values, hard, end) > window(values, hard, start) + 0.1
