"""The baseline of bench/rollout.py: the synchronous batch loop of ToRL and verl's multi-turn rollout.

Each turn generates for ALL active trajectories as one engine call and waits for the whole batch
(the longest sequence sets the pace), then executes ALL their tool calls — concurrently, as
ToRL's loop does with its executor pool, but waiting for the last one (the slowest call sets the
pace) — appends the outputs, and starts the next turn with the trajectories that called a tool.

Everything per trajectory is the asynchronous loop's own code (trainer.rollout.multi_turn: the sandbox call,
appending the wrapped output, the token and mask bookkeeping, the per-trajectory-and-turn seeds),
so both loops produce the same `Trajectory` objects for the same samples and the benchmark
compares only the scheduling.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from trainer.engines.base import Engine, GenerationOutput, GenerationRequest
from trainer.envs.python import execute_code
from trainer.protocols import Protocol, get_protocol
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings, Span, Trajectory, _append_tool_output, _State
from trainer.trajectory import Completion, ToolExecution

_rollout_ids = itertools.count()


@dataclass
class _Active:
    """One trajectory of the synchronous loop, between turns."""

    index: int
    prompt_ids: list[int]
    cache_key: tuple[str, int, int]
    state: _State = field(default_factory=_State)
    executions: list[ToolExecution] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    truncated: bool = False

    def request(self, protocol: Protocol, settings: RolloutSettings, seed: int | None, turn: int) -> GenerationRequest:
        return GenerationRequest(
            token_ids=self.prompt_ids + self.state.response_ids,
            max_new_tokens=settings.max_response_tokens - len(self.state.response_ids),
            stop_strings=protocol.stop_strings(len(self.executions), settings.max_tool_calls),
            temperature=settings.temperature,
            top_p=settings.top_p,
            # The asynchronous loop's seed for this trajectory and turn: the same samples in both loops.
            seed=None if seed is None else (seed * 1_000_003 + self.index) * 1009 + turn,
            cache_key=self.cache_key,
        )

    def trajectory(self, protocol: Protocol) -> Trajectory:
        completion = Completion(
            text=self.state.text,
            protocol=protocol.name,
            executions=tuple(self.executions),
            truncated=self.truncated,
            response_tokens=self.state.model_tokens,
        )
        return Trajectory(
            completion=completion,
            prompt_ids=self.prompt_ids,
            response_ids=self.state.response_ids,
            loss_mask=self.state.loss_mask,
            tool_mask=self.state.tool_mask,
            logprobs=self.state.logprobs,
            spans=tuple(self.spans),
        )


async def _timed_execute(code: str | None, settings: RolloutSettings) -> tuple[ToolExecution, float, float]:
    started = time.perf_counter()
    execution = await execute_code(code, get_protocol(settings.protocol), settings.call_context(None, None))
    return execution, started, time.perf_counter()


async def sync_rollout(
    engine: Engine, prompts: Sequence[Sequence[int]], settings: RolloutSettings, *, seed: int | None = None
) -> RolloutResult:
    """Roll out one response per prompt, turn by turn for the whole batch.

    gen_s and tool_s do not overlap here: wall_s is their sum plus the loop's own bookkeeping.
    """
    rollout_id = next(_rollout_ids)
    protocol = get_protocol(settings.protocol)
    trajectories = [_Active(i, list(p), ("sync", rollout_id, i)) for i, p in enumerate(prompts)]
    active = list(trajectories)
    origin = time.perf_counter()
    gen_s = tool_s = 0.0
    batch_sizes: list[int] = []
    try:
        for turn in itertools.count():
            if not active:
                break
            requests = [t.request(protocol, settings, seed, turn) for t in active]
            started = time.perf_counter()
            batch_sizes.append(len(requests))
            outputs: list[GenerationOutput] = await asyncio.to_thread(engine.generate, requests)
            ended = time.perf_counter()
            gen_s += ended - started
            calling: list[tuple[_Active, str, str, list[int]]] = []
            for t, output in zip(active, outputs, strict=True):
                t.spans.append(Span("gen", started - origin, ended - origin))
                before = t.state.text
                t.state.add_generated(output.new_token_ids, output.logprobs, output.text)
                if output.finish_reason == "length":
                    t.truncated = True
                    continue
                if output.finish_reason != "stop" or output.stop_string != protocol.stop_marker:
                    continue
                marker = output.stop_string
                stopped = before + output.text[: output.text.find(marker) + len(marker)]
                calling.append((t, before, stopped, list(output.new_token_ids)))
            calling_ids = {id(c[0]) for c in calling}
            for t in active:
                if id(t) not in calling_ids:
                    engine.release(t.cache_key)
            started = time.perf_counter()
            timed = await asyncio.gather(*(_timed_execute(protocol.extract_call(c[2]), settings) for c in calling))
            tool_s += time.perf_counter() - started
            active = []
            for (t, before, stopped, turn_ids), (execution, call_start, call_end) in zip(calling, timed, strict=True):
                t.spans.append(Span("tool", call_start - origin, call_end - origin))
                t.executions.append(execution)
                turn = (before, stopped, turn_ids)
                if _append_tool_output(engine.tokenizer, protocol, t.state, turn, execution, settings):
                    active.append(t)
                else:
                    t.truncated = True
                    engine.release(t.cache_key)
    finally:
        for t in active:
            engine.release(t.cache_key)
    return RolloutResult(
        trajectories=[t.trajectory(protocol) for t in trajectories],
        wall_s=time.perf_counter() - origin,
        gen_s=gen_s,
        tool_s=tool_s,
        batch_sizes=batch_sizes,
    )
