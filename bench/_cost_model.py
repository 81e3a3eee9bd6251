"""An Engine whose wall-clock time follows a GPU-like cost model, with a scripted tool-using policy.

On a GPU, one decode step costs about the same for the whole batch while the batch fits (the step
is bound by reading the weights, not by the rows), so a batched call takes
`prefill + steps x step_s`, where steps is the longest sequence's new tokens. `CostModelEngine`
really waits that long, step by step, and reports each sequence through `on_finish` at the step
its own tokens end, as the hf engine does: the rollout loop under test sees the same timing a
GPU engine would give it, while the CPU stays free for the loop itself and the sandbox.

What it "generates" is scripted by `ScriptedPolicy`: a deterministic (seeded) tool-using answer,
a few words of reasoning, then a ```python block that sleeps for a long-tailed duration (most
calls tens of milliseconds, a few seconds, like real model code: a quick print against a slow
sympy solve or a brute-force loop) and prints a number; after the tool output, another call
(1 to 3 per trajectory) or the final answer in \\boxed{}. Text is character-level
(`CharTokenizer`), so ids and text round-trip exactly and the rollout's token bookkeeping is
exercised as with a real model.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import random
import re
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from trainer.engines.base import FinishReason, GenerationOutput, GenerationRequest
from trainer.models import CharTokenizer
from trainer.protocols.python_markdown import OUTPUT_MARKER
from trainer.rollout import RolloutResult, RolloutSettings, _Clock, _trajectory

# The scripted reasoning is made of these words; what matters is its length in tokens.
_WORDS = ("so", "the", "product", "is", "then", "we", "add", "check", "carry", "digits", "sum", "first", "next")
_LAST_OUTPUT = re.compile(r"```output\n(.*?)\n```", re.DOTALL)
_continuous_ids = itertools.count()


@dataclass(frozen=True)
class CostModel:
    """Seconds a batched call costs: `prefill_s + prefill_token_s x context tokens encoded`, then
    `step_s` per decode step for every `max_batch` rows still decoding (one step while they fit)."""

    step_s: float = 0.020
    prefill_s: float = 0.005
    prefill_token_s: float = 2e-6
    max_batch: int = 256

    def step_cost(self, live_rows: int) -> float:
        return self.step_s * max(1, math.ceil(live_rows / self.max_batch))


@dataclass(frozen=True)
class ScriptedPolicy:
    """The scripted answer's shape: reasoning length per turn, tool calls and their durations.

    Each tool call sleeps `fast_median_s` x lognormal(0, fast_sigma) (capped at 1 s), or, with
    probability `slow_fraction`, uniform(slow_min_s, slow_max_s). The first turn always calls the
    tool; each later one calls again with probability `more_calls_p`, up to `max_calls`.
    """

    # Characters (= tokens) of reasoning before each call or answer; with probability
    # `long_think_fraction` a turn reasons at length instead (`long_think_min`..`long_think_max`).
    think_min: int = 20
    think_max: int = 120
    long_think_fraction: float = 0.0
    long_think_min: int = 300
    long_think_max: int = 600
    fast_median_s: float = 0.05
    fast_sigma: float = 0.5
    slow_fraction: float = 0.05
    slow_min_s: float = 1.0
    slow_max_s: float = 3.0
    more_calls_p: float = 0.5
    max_calls: int = 3

    def tool_sleep_s(self, rng: random.Random) -> float:
        if rng.random() < self.slow_fraction:
            return rng.uniform(self.slow_min_s, self.slow_max_s)
        return min(1.0, self.fast_median_s * math.exp(rng.gauss(0.0, self.fast_sigma)))

    def text(self, context: str, stop_strings: Sequence[str], rng: random.Random) -> str:
        """The next turn's text for this context: a call ending at the stop marker, or the answer
        (which the engine ends with EOS)."""
        calls_made = context.count(OUTPUT_MARKER + "\n")
        if rng.random() < self.long_think_fraction:
            length = rng.randint(self.long_think_min, self.long_think_max)
        else:
            length = rng.randint(self.think_min, self.think_max)
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < length:
            words.append(rng.choice(_WORDS))
        thinking = " ".join(words)[:length]
        may_call = OUTPUT_MARKER in stop_strings and calls_made < self.max_calls
        if may_call and (calls_made == 0 or rng.random() < self.more_calls_p):
            code = f"import time\ntime.sleep({self.tool_sleep_s(rng):.3f})\nprint({rng.randint(2, 9999)})"
            return f"{thinking}\n```python\n{code}\n```\n{OUTPUT_MARKER}"
        outputs = _LAST_OUTPUT.findall(context)
        answer = outputs[-1].strip() if outputs else str(rng.randint(2, 9999))
        return f"{thinking} The answer is \\boxed{{{answer}}}."


def _rng(request: GenerationRequest) -> random.Random:
    if request.seed is not None:
        return random.Random(request.seed)
    digest = hashlib.sha256(",".join(map(str, request.token_ids)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class CostModelEngine:
    """Batched "generation" that takes the cost model's time and reports each row when it ends."""

    def __init__(
        self,
        cost: CostModel | None = None,
        policy: ScriptedPolicy | None = None,
        tokenizer: CharTokenizer | None = None,
        logprob: float = -0.5,
    ) -> None:
        self.cost = cost or CostModel()
        self.policy = policy or ScriptedPolicy()
        self.tokenizer = tokenizer or CharTokenizer()
        self.logprob = logprob
        # Context tokens already "encoded" per trajectory, as a KV-caching engine keeps them.
        self._kept: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        self.calls = 0
        self.steps = 0

    def release(self, cache_key: Hashable) -> None:
        with self._lock:
            self._kept.pop(cache_key, None)

    def _plan(self, request: GenerationRequest) -> tuple[list[int], FinishReason, str | None]:
        """The new ids this request will produce, why it stops and at which stop string."""
        context = self.tokenizer.decode(request.token_ids, skip_special_tokens=True)
        text = self.policy.text(context, request.stop_strings, _rng(request))
        found = [(text.find(s), s) for s in request.stop_strings if s and s in text]
        reason: FinishReason = "eos"
        stop: str | None = None
        if found:
            at, stop = min(found)
            ids = self.tokenizer.encode(text[: at + len(stop)], add_special_tokens=False)
            reason = "stop"
        else:
            ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        if len(ids) > request.max_new_tokens:
            ids, reason, stop = ids[: request.max_new_tokens], "length", None
        return ids, reason, stop

    def _prefill_tokens(self, request: GenerationRequest) -> int:
        with self._lock:
            kept = self._kept.get(request.cache_key, 0) if request.cache_key is not None else 0
        return len(request.token_ids) - min(kept, len(request.token_ids) - 1)

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_finish: Callable[[int, GenerationOutput], None] | None = None,
    ) -> list[GenerationOutput]:
        if not requests:
            return []
        started = time.perf_counter()
        plans = [self._plan(r) for r in requests]
        prefilled = [self._prefill_tokens(r) for r in requests]
        deadline = started + self.cost.prefill_s + self.cost.prefill_token_s * sum(prefilled)
        outputs: list[GenerationOutput | None] = [None] * len(requests)
        # Rows in order of their length: at step k every row of length k finishes.
        order = sorted(range(len(requests)), key=lambda i: len(plans[i][0]))
        done = 0
        step = 0
        self.calls += 1
        while done < len(order):
            deadline += self.cost.step_cost(len(order) - done)
            step += 1
            _sleep_until(deadline)
            while done < len(order) and len(plans[order[done]][0]) <= step:
                i = order[done]
                ids, reason, stop = plans[i]
                request = requests[i]
                if request.cache_key is not None:
                    with self._lock:
                        # Everything fed so far: the context and all sampled tokens but the last.
                        self._kept[request.cache_key] = len(request.token_ids) + len(ids) - 1
                outputs[i] = GenerationOutput(
                    new_token_ids=ids,
                    text=self.tokenizer.decode(ids, skip_special_tokens=True),
                    logprobs=[self.logprob] * len(ids),
                    finish_reason=reason,
                    stop_string=stop,
                    prefill_tokens=prefilled[i],
                )
                if on_finish is not None:
                    on_finish(i, outputs[i])
                done += 1
        self.steps += step
        return [o for o in outputs if o is not None]


def _sleep_until(deadline: float) -> None:
    """Sleep to an absolute deadline, so oversleeping on a loaded machine does not accumulate."""
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)


@dataclass
class _Row:
    request: GenerationRequest
    ids: list[int]
    reason: FinishReason
    stop: str | None
    prefill_tokens: int
    future: asyncio.Future[GenerationOutput]
    emitted: int = 0


class ContinuousCostModelEngine(CostModelEngine):
    """The same cost model and policy with continuous batching, as vLLM's scheduler does it: a
    request joins the running batch at the next decode step (its prefill added to that step)
    instead of waiting for the call in progress to finish.

    The Engine protocol's `generate` cannot do this (a call's batch is fixed), so trainer.rollout's
    batcher cannot use it; `continuous_rollout` drives it with trainer.rollout's own per-trajectory
    code, to measure what continuous admission would add to the asynchronous loop.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rows: list[_Row] = []
        self._joining: list[_Row] = []
        self._stepper: asyncio.Task[None] | None = None
        self.busy_s = 0.0
        self.batch_sizes: list[int] = []

    async def agenerate(self, request: GenerationRequest) -> GenerationOutput:
        ids, reason, stop = self._plan(request)
        future: asyncio.Future[GenerationOutput] = asyncio.get_running_loop().create_future()
        self._joining.append(_Row(request, ids, reason, stop, self._prefill_tokens(request), future))
        if self._stepper is None or self._stepper.done():
            self._stepper = asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        started = deadline = time.perf_counter()
        while self._rows or self._joining:
            # One pass of the event loop lets every trajectory that is ready now join this step.
            await asyncio.sleep(0)
            if self._joining:
                joining, self._joining = self._joining, []
                deadline += self.cost.prefill_s + self.cost.prefill_token_s * sum(r.prefill_tokens for r in joining)
                self._rows += joining
                self.batch_sizes.append(len(self._rows))
            deadline += self.cost.step_cost(len(self._rows))
            self.steps += 1
            await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
            alive = []
            for row in self._rows:
                row.emitted += 1
                if row.emitted < len(row.ids):
                    alive.append(row)
                    continue
                if row.request.cache_key is not None:
                    with self._lock:
                        self._kept[row.request.cache_key] = len(row.request.token_ids) + len(row.ids) - 1
                row.future.set_result(
                    GenerationOutput(
                        new_token_ids=row.ids,
                        text=self.tokenizer.decode(row.ids, skip_special_tokens=True),
                        logprobs=[self.logprob] * len(row.ids),
                        finish_reason=row.reason,
                        stop_string=row.stop,
                        prefill_tokens=row.prefill_tokens,
                    )
                )
            self._rows = alive
        self.busy_s += time.perf_counter() - started


class _Admit:
    """What trainer.rollout's `_trajectory` needs of a batcher: `await generate(request)`."""

    def __init__(self, engine: ContinuousCostModelEngine) -> None:
        self.engine = engine

    async def generate(self, request: GenerationRequest) -> GenerationOutput:
        return await self.engine.agenerate(request)


async def continuous_rollout(
    engine: ContinuousCostModelEngine,
    prompts: Sequence[Sequence[int]],
    settings: RolloutSettings,
    *,
    seed: int | None = None,
) -> RolloutResult:
    """trainer.rollout's asynchronous loop (its `_trajectory` per prompt, same seeds) with each
    request admitted into the running batch instead of queued for the engine's next call."""
    rollout_id = next(_continuous_ids)
    clock = _Clock()
    busy_before, batches_before = engine.busy_s, len(engine.batch_sizes)
    admit = _Admit(engine)
    tasks = [
        asyncio.create_task(
            _trajectory(i, list(p), engine, admit, clock, settings, seed, ("continuous", rollout_id, i))  # type: ignore[arg-type]
        )
        for i, p in enumerate(prompts)
    ]
    try:
        trajectories = await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    return RolloutResult(
        trajectories=list(trajectories),
        wall_s=clock.now(),
        gen_s=engine.busy_s - busy_before,
        tool_s=clock.tool_s,
        batch_sizes=engine.batch_sizes[batches_before:],
    )
