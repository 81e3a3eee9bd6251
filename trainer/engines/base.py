"""The generation-engine interface the rollout loop drives.

An engine samples continuations for a batch of token sequences. It is synchronous and batched on
purpose: generation is compute-bound, so the rollout loop calls it from a worker thread with every
trajectory that is ready at that moment, while tool calls of the other trajectories keep running on
the event loop. `on_finish` lets a trajectory leave the batch as soon as its own sequence stops, so
its tool call starts before the slowest sequence of the batch has finished.

Token ids, not text, are the interface: the trainer needs the exact sampled ids and their
log-probabilities (PPO's old log-probs), and re-tokenising decoded text does not round-trip.
"""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

FinishReason = Literal["stop", "length", "eos"]


@dataclass(frozen=True)
class GenerationRequest:
    """One sequence to continue.

    token_ids: the whole context (prompt plus everything appended so far).
    stop_strings: generation stops once the decoded new text contains one of them.
    temperature: 0 samples greedily.
    seed: makes this sequence's samples reproducible regardless of its batch companions.
    cache_key: identifies a trajectory across calls, so an engine that keeps its KV cache can
        re-encode only the tokens appended since the last call (see `Engine.release`).
    """

    token_ids: Sequence[int]
    max_new_tokens: int
    stop_strings: Sequence[str] = ()
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    cache_key: Hashable | None = None


@dataclass(frozen=True)
class GenerationOutput:
    """What one request produced.

    new_token_ids: every sampled token, including the one that completed a stop string (its text
        may run past the stop string) or the EOS token.
    text: the decoded new tokens.
    logprobs: log-probability of each sampled token under the sampling distribution (after
        temperature and top-p), aligned with new_token_ids.
    finish_reason: "stop" (a stop string appeared), "eos" or "length" (max_new_tokens reached).
    stop_string: the stop string that ended generation, when finish_reason is "stop".
    """

    new_token_ids: list[int]
    text: str
    logprobs: list[float]
    finish_reason: FinishReason
    stop_string: str | None = None
    # Context tokens this call encoded before sampling: all of them without a kept cache, only
    # those appended since the previous call with one.
    prefill_tokens: int = 0


def check_requests(requests: Sequence[GenerationRequest]) -> None:
    """Refuse requests no engine can serve: an empty context, or no token to sample."""
    for r in requests:
        if not r.token_ids:
            raise ValueError("a generation request needs at least one context token")
        if r.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {r.max_new_tokens}")


class Tokenizer(Protocol):
    """The part of a Hugging Face tokenizer the engines and the rollout use."""

    eos_token_id: int | None
    pad_token_id: int | None

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = ...) -> str: ...


class Engine(Protocol):
    """A batched sampler over one tokenizer."""

    tokenizer: Tokenizer

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_finish: Callable[[int, GenerationOutput], None] | None = None,
        admit: Callable[[], Sequence[GenerationRequest]] | None = None,
    ) -> list[GenerationOutput]:
        """Sample a continuation for each request, in order. `on_finish(index, output)` is called
        (from the calling thread) as soon as request `index` stops, before the others finish.

        `admit`, when given, is called between decode steps while the call runs; the requests it
        returns join the running batch (continuous batching, as vLLM's scheduler does) and take the
        next indices, after `requests` and whatever joined before them. Without it a trajectory
        whose tool call returns mid-call waits for the whole call to end, then for all of the next.
        """
        ...

    def release(self, cache_key: Hashable) -> None:
        """Forget whatever is kept for `cache_key`; the trajectory will not be continued."""
        ...
