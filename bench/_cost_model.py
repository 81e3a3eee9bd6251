"""An Engine whose wall-clock time follows a GPU-like cost model, with a scripted tool-using policy.

On a GPU, one decode step costs about the same for the whole batch while the batch fits (the step
is bound by reading the weights, not by the rows), so a batched call takes
`prefill + steps x step_s`, where steps is the longest sequence's new tokens. `CostModelEngine`
really waits that long, step by step, and reports each sequence through `on_finish` at the step
its own tokens end, as the hf engine does; with `admit`, requests join the running batch at the
next step (continuous batching). The rollout loop under test sees the same timing a GPU engine
would give it, while the CPU stays free for the loop itself and the sandbox.

What it "generates" is scripted by `ScriptedPolicy`: a deterministic (seeded) tool-using answer,
a few words of reasoning, then a ```python block that sleeps for a long-tailed duration (most
calls tens of milliseconds, a few seconds, like real model code: a quick print against a slow
sympy solve or a brute-force loop) and prints a number; after the tool output, another call
(1 to 3 per trajectory) or the final answer in \\boxed{}. Text is character-level
(`CharTokenizer`), so ids and text round-trip exactly and the rollout's token bookkeeping is
exercised as with a real model.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from trainer.engines.base import FinishReason, GenerationOutput, GenerationRequest
from trainer.models import CharTokenizer
from trainer.protocols.python_markdown import OUTPUT_MARKER

# The scripted reasoning is made of these words; what matters is its length in tokens.
_WORDS = ("so", "the", "product", "is", "then", "we", "add", "check", "carry", "digits", "sum", "first", "next")
_LAST_OUTPUT = re.compile(r"```output\n(.*?)\n```", re.DOTALL)


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
        self.admitted = 0  # requests that joined a running call

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
        admit: Callable[[], Sequence[GenerationRequest]] | None = None,
    ) -> list[GenerationOutput]:
        """One batched call; with `admit`, requests join the running batch at the next decode step
        (their prefill added to that step), as vLLM's scheduler admits them."""
        if not requests:
            return []
        deadline = time.perf_counter()
        rows: list[_Row] = []
        outputs: list[GenerationOutput | None] = []
        self.calls += 1

        def join(new: Sequence[GenerationRequest]) -> None:
            nonlocal deadline
            prefilled = [self._prefill_tokens(r) for r in new]
            deadline += self.cost.prefill_s + self.cost.prefill_token_s * sum(prefilled)
            for request, tokens in zip(new, prefilled, strict=True):
                rows.append(_Row(len(outputs), request, *self._plan(request), tokens))
                outputs.append(None)

        join(requests)
        while rows:
            joining = list(admit()) if admit is not None else []
            if joining:
                join(joining)
                self.admitted += len(joining)
            deadline += self.cost.step_cost(len(rows))
            self.steps += 1
            _sleep_until(deadline)
            alive = []
            for row in rows:
                row.emitted += 1
                if row.emitted < len(row.ids):
                    alive.append(row)
                    continue
                if row.request.cache_key is not None:
                    with self._lock:
                        # Everything fed so far: the context and all sampled tokens but the last.
                        self._kept[row.request.cache_key] = len(row.request.token_ids) + len(row.ids) - 1
                output = GenerationOutput(
                    new_token_ids=row.ids,
                    text=self.tokenizer.decode(row.ids, skip_special_tokens=True),
                    logprobs=[self.logprob] * len(row.ids),
                    finish_reason=row.reason,
                    stop_string=row.stop,
                    prefill_tokens=row.prefill_tokens,
                )
                outputs[row.index] = output
                if on_finish is not None:
                    on_finish(row.index, output)
            rows = alive
        return [o for o in outputs if o is not None]


def _sleep_until(deadline: float) -> None:
    """Sleep to an absolute deadline, so oversleeping on a loaded machine does not accumulate."""
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)


@dataclass
class _Row:
    """A request in the running batch: what it will emit and how much of it has been emitted."""

    index: int
    request: GenerationRequest
    ids: list[int]
    reason: FinishReason
    stop: str | None
    prefill_tokens: int
    emitted: int = 0
