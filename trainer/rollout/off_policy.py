"""One-step-off-policy training (`rollout.async_rollouts`): step t+1 is rolled out while step t trains.

The policy cannot be sampled while it is being updated, so the next step's rollout samples from a
*behaviour copy* of its weights (`Behaviour`): for engine 'hf' a second model instance with its own
HFEngine; engine 'vllm' and Ray replicas (backend 'ray') already hold their own copy, loaded at the
same moment as the behaviour copy, which then only scores the old log-probs. Versions count the
policy's updates (`Trainer.policy_version`, v0 the policy a run starts from). A step goes:

    synchronous (async_rollouts false, verl's sample-then-train):
        step t: roll out R_t with the policy v_t, update v_t on R_t -> v_t+1          staleness 0
    asynchronous:
        step 0: roll out R_0 with the copy (= v0) in the foreground: nothing to overlap yet
        step t: wait for R_t (sampled by v_t-1; by v0 at step 0)
                load the policy's weights v_t into the copy (and vLLM / the replicas)
                start R_t+1 on the copy, in the background (`RolloutPipeline`)
                update the policy v_t on R_t -> v_t+1                                staleness 1

So from step 1 on, step t trains the policy v_t on rollouts of v_t-1: `async/staleness` = 1, and
never more, since a rollout starts only once the previous one has been taken and the copy reloaded.
A run's first step, and the first step after a resume (the pipeline is not checkpointed), is
on-policy: staleness 0. The last step starts no rollout after it.

The importance ratio's old log-probs are the behaviour copy's: the background job computes them on
the copy right after its rollout, with the training forward pass in the update's own batches
(`Trainer.prepare`), so on-policy the ratio starts at exactly 1. The KL reference is unchanged.
ZeroTIR's --async_train (its preset sets async_rollouts) takes them otherwise: unless
--use_exp_before_queue, its trainer computes them with the actor as it is when it takes the batch
from the queue (yyht/openrlhf_async_pipline @d154c0a, openrlhf/trainer/ppo_trainer_async.py:519-520,
openrlhf/trainer/ppo_utils/experience_maker.py:619), after the update that followed the sampling.

Metrics of every run: `async/staleness` (policy version at the update minus the version that
sampled), `timing_s/wait_rollout` (what the step waited for its rollout: all of it when
synchronous, what was left of it after the previous update when not). An asynchronous step's
`timing_s/gen`, `/tool` and `/rollout` are its background rollout's own, which overlapped the
previous step's update, and `timing_s/weight_sync` is the copy's reload.

On CPU the update and the background rollout share the cores: each gets its own (`cpu_split`),
since torch's OpenMP threads spin-wait and two thread pools over-subscribing two cores run several
times slower than either alone. On a GPU nothing is split.

Stopping: `RolloutPipeline.close` sets the rollout's stop event (trainer.rollout.multi_turn's `stop`: the
engine call in progress ends at its next decode step) and waits for the thread to end; with
backend 'ray' it waits for the replicas' shares to finish.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from trainer.engines.base import Tokenizer
from trainer.engines.hf import HFEngine

T = TypeVar("T")


@dataclass(frozen=True)
class CpuSplit:
    """Intra-op threads of the background rollout (generation and its old log-probs) and of the update."""

    rollout: int
    update: int


def cpu_split(device: torch.device, engine_threads: int | None, cores: int | None = None) -> CpuSplit | None:
    """How an asynchronous run on CPU shares the cores: the rollout keeps the engine's threads (half
    the cores where the engine takes all), the update gets the rest. None on a GPU."""
    if device.type != "cpu":
        return None
    cores = cores or torch.get_num_threads()
    rollout = engine_threads or max(1, cores // 2)
    return CpuSplit(rollout=rollout, update=max(1, cores - rollout))


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """This thread's intra-op thread count for the block (OpenMP's is per thread)."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Behaviour:
    """The behaviour copy: the weights the next step's rollout samples with while the policy trains.

    `model` is a copy of the policy (same device and dtype) whose forward pass gives the old
    log-probs; `engine` samples from it for engine 'hf' with backend 'local' and is None where the
    rollout samples from a copy of its own (vLLM, Ray replicas). `version` is the policy version
    its weights are.
    """

    def __init__(self, policy: torch.nn.Module, tokenizer: Tokenizer, *, sampler: bool, threads: int | None) -> None:
        self.model = copy.deepcopy(policy).eval().requires_grad_(False)
        self.engine = HFEngine(self.model, tokenizer, num_threads=threads) if sampler else None
        self.version = 0

    def load(self, policy: torch.nn.Module, version: int) -> None:
        """Take the policy's current weights; kept KV caches belong to the old ones."""
        self.model.load_state_dict(policy.state_dict())
        if self.engine is not None:
            self.engine.clear_cache()
        self.version = version


class RolloutPipeline(Generic[T]):
    """At most one step's collection in flight on a background thread.

    `job(step)` collects one step (rollout, reward, filtering, old log-probs); its rollouts take
    `stop`, set when the collection in flight is dropped, so that they end early. `threads` is the
    background thread's intra-op thread count.
    """

    def __init__(self, job: Callable[[int], T], *, threads: int | None = None) -> None:
        self._job = job
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self._pending: tuple[int, Future[T]] | None = None
        self.stop = threading.Event()

    @property
    def in_flight(self) -> int | None:
        """The step being collected in the background, if any."""
        return None if self._pending is None else self._pending[0]

    def _set_threads(self) -> None:
        if self._threads is not None:
            torch.set_num_threads(self._threads)  # OpenMP's thread count is per thread: the update keeps its own

    def start(self, step: int) -> None:
        """Collect `step` in the background."""
        if self.stop.is_set():
            raise RuntimeError("the rollout pipeline is closed")
        if self._pending is not None:
            raise RuntimeError(
                f"step {self._pending[0]}'s rollout is still in flight: one step off-policy at most, take it first"
            )
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="tirlab-rollout", initializer=self._set_threads)
        self._pending = (step, self._executor.submit(self._job, step))

    def take(self, step: int) -> tuple[T, float]:
        """`step`'s collection and the seconds spent waiting for it: the background one if it was
        started (its error, if it failed, is raised here), else collected now, in this thread."""
        started = time.perf_counter()
        if self._pending is None:
            return self._job(step), time.perf_counter() - started
        pending_step, future = self._pending
        if pending_step != step:
            raise RuntimeError(f"step {step} asked for, but the rollout in flight is step {pending_step}'s")
        self._pending = None
        return future.result(), time.perf_counter() - started

    def wait(self) -> None:
        """Let the collection in flight finish; `take` still returns it."""
        if self._pending is not None:
            wait_for([self._pending[1]])

    def drop(self) -> None:
        """Stop the collection in flight, if any, and wait for it to end; what it collected is dropped."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        self.stop.set()
        try:
            pending[1].result()
        except Exception:  # noqa: BLE001 - stopped on purpose (RolloutStopped) or failed: dropped either way
            pass
        self.stop.clear()

    def close(self) -> None:
        """Drop the collection in flight and end the thread. Safe to call twice."""
        self.drop()
        self.stop.set()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
