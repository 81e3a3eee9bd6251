"""The asynchronous multi-turn rollout: every trajectory advances on its own.

Each trajectory is a coroutine: generate until the protocol's stop marker, run the call in the
sandbox (`sandbox.arun`, or the caller's `run_code`: trainer.rollout.ray's sandbox actors), append
the wrapped output, generate again, until EOS, the response limit, or a generation that ends
without a call. A batcher hands the engine every request that is ready when it becomes free; the
engine runs on a worker thread and reports each sequence the moment it stops, so that
trajectory's tool call runs on the event loop while the rest of the batch keeps generating; when
the call comes back, its next request joins the running call at the next decode step (continuous
batching, see `_Batcher`).

One trajectory's turns are `run_trajectory`, which takes any async `generate` and a tokenizer: the
batcher here, or verl's server client in tirlab's agent loop for verl (trainer.verl.agent_loop), so
both trainers run the same protocol, environment, budget and length accounting.

What is appended after a call is the protocol's wrapper around the text of the run's feedback
style (`tools.feedback`, trainer.protocols.feedback). Every stop at the tool marker uses up a call
of the budget; under the papers' styles a stop without a complete call runs nothing and appends
nothing (the marker is dropped, as ToRL's loop does), under tirlab's it gets an error output.

Length accounting (ToRL's): `max_response_tokens` bounds everything after the prompt, generated
and tool-output tokens alike, because all of it occupies the context. A response that reaches
the limit — in the middle of a generation or of an appended tool output, which is then cut — is
marked truncated. `Completion.response_tokens` counts the model-generated tokens only.

Tokens: the response's token ids are exactly the context the engine saw, so the trainer scores
the same sequence that was sampled. Generated tokens carry their sampling log-probs and mask 1;
tool-output tokens (encoded by the tokenizer) carry log-prob 0 and mask 0, or 1 with
`train_on_tool_output`. The stop marker is the model's text (see trainer.protocols); where a
protocol rewrites the end of the generated text when appending (python_markdown puts its marker
on a new line), the generated tokens past the common prefix are dropped and the rewritten text is
appended as tool text, so text and tokens never disagree.
"""

import asyncio
import inspect
import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainer.config import DEFAULT_SEARCH_TOPK, RunConfig
from trainer.engines.base import Engine, GenerationOutput, GenerationRequest, Tokenizer
from trainer.envs import CallContext, CodeRunner, Environment, get_environment
from trainer.protocols import Feedback, FeedbackStyle, Protocol, default_environment, get_protocol
from trainer.trajectory import Completion, ToolExecution

if TYPE_CHECKING:
    from trainer.envs.search.retriever import Retriever

# How often a rollout with a `stop` event looks at it while every trajectory waits on a tool call.
STOP_POLL_S = 0.05

_rollout_ids = itertools.count()


class RolloutStopped(Exception):
    """The caller set the rollout's `stop` event: it ended early, its trajectories dropped."""


@dataclass(frozen=True)
class RolloutSettings:
    """What the rollout takes from a RunConfig."""

    protocol: str = "python_markdown"
    # What a call does (trainer.envs); None: the protocol's default.
    environment: str | None = None
    max_tool_calls: int = 1
    feedback: FeedbackStyle = "torl"
    output_max_chars: int = 256
    sandbox_timeout_s: float = 10.0
    sandbox_memory_mb: int = 1024
    train_on_tool_output: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    max_response_tokens: int = 256
    # Requests join running engine calls (see _Batcher); off only to measure what that is worth.
    continuous_batching: bool = True
    # The search environment's retrieval: a corpus searched in-process, or a /retrieve URL; passages per search.
    search_corpus: str | None = None
    search_url: str | None = None
    search_topk: int = DEFAULT_SEARCH_TOPK

    @classmethod
    def from_config(cls, config: RunConfig) -> "RolloutSettings":
        return cls(
            protocol=config.tools.protocol,
            environment=config.tools.run_environment,
            max_tool_calls=config.tools.max_tool_calls,
            feedback=config.tools.feedback,
            output_max_chars=config.tools.output_max_chars,
            sandbox_timeout_s=config.tools.sandbox_timeout_s,
            sandbox_memory_mb=config.tools.sandbox_memory_mb,
            train_on_tool_output=config.tools.train_on_tool_output,
            temperature=config.rollout.temperature,
            top_p=config.rollout.top_p,
            max_response_tokens=config.data.max_response_tokens,
            search_corpus=config.tools.search_corpus,
            search_url=config.tools.search_url,
            search_topk=config.tools.search_topk,
        )

    def env(self) -> Environment:
        return get_environment(self.environment or default_environment(self.protocol))

    def call_context(
        self, tools: list[dict] | None, run_code: CodeRunner | None, task: dict | None = None
    ) -> CallContext:
        """A trajectory's context for its calls: the example's tools and task, the sandbox limits, fresh state."""
        return CallContext(
            tools=tools,
            timeout_s=self.sandbox_timeout_s,
            memory_mb=self.sandbox_memory_mb,
            run_code=run_code,
            task=task,
            max_calls=self.max_tool_calls,
            retriever=self.retriever(),
        )

    def retriever(self) -> "Retriever | None":
        """What the search environment asks, one per process for the same corpus or URL; None without either."""
        if self.search_corpus is None and self.search_url is None:
            return None
        # Here, not at the top: the retrieval package's index needs bm25s, which only a search run loads.
        from trainer.envs.search.retriever import retriever_for

        return retriever_for(corpus=self.search_corpus, url=self.search_url, topk=self.search_topk)


@dataclass(frozen=True)
class Span:
    """One phase of a trajectory on the rollout's clock (seconds since the rollout started):
    "gen" from the request's submission to its result (queueing included), "tool" around one
    sandbox call."""

    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class Trajectory:
    """One finished response, as text for the rewards and as tokens for the loss.

    response_ids, loss_mask, tool_mask and logprobs are aligned: loss_mask is 1 where the loss
    applies, tool_mask 1 on tool-output tokens, logprobs the sampling log-prob (0.0 on tool tokens).
    """

    completion: Completion
    prompt_ids: list[int]
    response_ids: list[int]
    loss_mask: list[int]
    tool_mask: list[int]
    logprobs: list[float]
    spans: tuple[Span, ...] = ()


@dataclass
class RolloutResult:
    """All trajectories, in prompt order, with the timing of the whole rollout.

    gen_s is the time the engine spent generating (its calls never overlap); tool_s the time at
    least one tool call was running. The two overlap, so together they can exceed wall_s.
    """

    trajectories: list[Trajectory]
    wall_s: float
    gen_s: float
    tool_s: float
    batch_sizes: list[int] = field(default_factory=list)


class _Batcher:
    """Collects the requests of ready trajectories for the engine, one engine call at a time.

    With continuous batching (`RolloutSettings.continuous_batching`, on by default, used when the
    engine's `generate` takes `admit`), a request that becomes ready while a call runs — a
    trajectory whose tool output just came back — joins that call at its next decode step. Without
    it, the request waits for the call to end and then for all of the next one, which takes every
    request pending by then: each turn then costs a whole batch-length call, however short its own
    generation (bench/rollout.py measures the difference).
    """

    def __init__(self, engine: Engine, *, continuous: bool = True, stop: threading.Event | None = None) -> None:
        self.engine = engine
        # Once set, the engine call running ends at its next decode step (its `admit` raises).
        self.stop = stop
        self.pending: list[tuple[GenerationRequest, asyncio.Future[GenerationOutput]]] = []
        # `pending` is filled on the event loop and drained by `admit` on the engine's worker thread.
        self.lock = threading.Lock()
        self.ready = asyncio.Event()
        self.gen_s = 0.0
        self.batch_sizes: list[int] = []
        self.admitted = 0
        self.continuous = continuous and "admit" in inspect.signature(engine.generate).parameters

    async def generate(self, request: GenerationRequest) -> GenerationOutput:
        future: asyncio.Future[GenerationOutput] = asyncio.get_running_loop().create_future()
        with self.lock:
            self.pending.append((request, future))
        self.ready.set()
        return await future

    def _take(self) -> list[tuple[GenerationRequest, asyncio.Future[GenerationOutput]]]:
        with self.lock:
            taken, self.pending = self.pending, []
        return taken

    def _admitter(self, futures: list[asyncio.Future[GenerationOutput]]) -> Callable[[], list[GenerationRequest]]:
        """The engine's `admit` for one call: on its worker thread, between decode steps, it hands
        over what is pending; the joiners' futures take the call's next indices."""

        def admit() -> list[GenerationRequest]:
            if self.stop is not None and self.stop.is_set():
                raise RolloutStopped("the rollout was stopped")
            joining = self._take()
            futures.extend(future for _, future in joining)
            self.admitted += len(joining)
            return [request for request, _ in joining]

        return admit

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.ready.wait()
            # One more pass of the event loop lets every trajectory that is ready now join the batch.
            await asyncio.sleep(0)
            self.ready.clear()
            batch = self._take()
            if not batch:
                continue  # admitted into the previous call
            futures = [future for _, future in batch]
            self.batch_sizes.append(len(batch))
            started = time.perf_counter()
            try:
                requests = [request for request, _ in batch]
                extra = {"admit": self._admitter(futures)} if self.continuous else {}
                await asyncio.to_thread(self.engine.generate, requests, _resolver(loop, futures), **extra)
            except Exception as exc:  # noqa: BLE001 - handed to every trajectory waiting on this batch
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
            finally:
                self.gen_s += time.perf_counter() - started


def _resolver(
    loop: asyncio.AbstractEventLoop, futures: list[asyncio.Future[GenerationOutput]]
) -> Callable[[int, GenerationOutput], None]:
    """The engine's on_finish: called on its worker thread, it resolves the future on the loop."""

    def resolve(index: int, output: GenerationOutput) -> None:
        future = futures[index]
        loop.call_soon_threadsafe(lambda: future.done() or future.set_result(output))

    return resolve


class _Clock:
    def __init__(self) -> None:
        self.origin = time.perf_counter()
        self.tool_running = 0
        self.tool_since = 0.0
        self.tool_s = 0.0

    def now(self) -> float:
        return time.perf_counter() - self.origin

    def tool_started(self) -> None:
        if self.tool_running == 0:
            self.tool_since = time.perf_counter()
        self.tool_running += 1

    def tool_ended(self) -> None:
        self.tool_running -= 1
        if self.tool_running == 0:
            self.tool_s += time.perf_counter() - self.tool_since


@dataclass
class _State:
    """A trajectory in progress: its text and the aligned token lists."""

    text: str = ""
    response_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    tool_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    model_tokens: int = 0

    def add_generated(self, ids: Sequence[int], logprobs: Sequence[float], text: str) -> None:
        self.response_ids += ids
        self.loss_mask += [1] * len(ids)
        self.tool_mask += [0] * len(ids)
        self.logprobs += logprobs
        self.model_tokens += len(ids)
        self.text += text

    def add_tool(self, ids: Sequence[int], text: str, *, trained: bool) -> None:
        self.response_ids += ids
        self.loss_mask += [int(trained)] * len(ids)
        self.tool_mask += [1] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.text += text

    def drop_generated(self, count: int) -> None:
        if count:
            del self.response_ids[-count:], self.loss_mask[-count:], self.tool_mask[-count:], self.logprobs[-count:]
            self.model_tokens -= count


def _feedback(tokenizer: Tokenizer, settings: RolloutSettings) -> Feedback:
    """The run's feedback style; ZeroTIR's counts tokens with the policy's tokenizer, as its loop does."""
    return Feedback(
        settings.feedback,
        settings.output_max_chars,
        count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False)),
    )


def _append_tool_output(
    tokenizer: Tokenizer,
    protocol: Protocol,
    state: _State,
    turn: tuple[str, str, list[int]],
    execution: ToolExecution | None,
    settings: RolloutSettings,
) -> bool:
    """Append the fed-back result after this turn's generation; False when the response limit cut it.

    `turn` is the text before this turn, the text up to the end of the stop string (a token may run
    past it) and the turn's generated ids. What follows is the environment's (`settings.env()`): the
    protocol's wrapper around the output in the run's feedback style for `python`. Generated tokens
    beyond what it kept of the text are dropped (see the module docstring). With no execution (a stop
    without a complete call, under a feedback style that reports nothing) the marker is dropped and
    nothing is added.
    """
    before, stopped, turn_ids = turn
    new_text = settings.env().append_output(protocol, stopped, execution, _feedback(tokenizer, settings))
    if not new_text.startswith(before):
        raise RuntimeError(f"protocol {protocol.name!r} rewrote text before the current turn")
    keep = len(turn_ids)
    kept_text = state.text[len(before) :]
    while keep and not new_text.startswith(before + kept_text):
        keep -= 1
        kept_text = tokenizer.decode(turn_ids[:keep], skip_special_tokens=True)
    state.drop_generated(len(turn_ids) - keep)
    state.text = before + kept_text
    tool_text = new_text[len(state.text) :]
    tool_ids = tokenizer.encode(tool_text, add_special_tokens=False)
    room = settings.max_response_tokens - len(state.response_ids)
    if len(tool_ids) > room:
        tool_ids = tool_ids[:room]
        cut_text = tokenizer.decode(tool_ids, skip_special_tokens=True)
        state.add_tool(tool_ids, cut_text, trained=settings.train_on_tool_output)
        return False
    state.add_tool(tool_ids, tool_text, trained=settings.train_on_tool_output)
    return len(state.response_ids) < settings.max_response_tokens


def _append_tool_text(tokenizer: Tokenizer, state: _State, text: str, settings: RolloutSettings) -> bool:
    """Append `text` as tool text after a turn that ended without a call; False when the response limit cut it."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    room = settings.max_response_tokens - len(state.response_ids)
    if len(ids) > room:
        ids = ids[:room]
        state.add_tool(ids, tokenizer.decode(ids, skip_special_tokens=True), trained=settings.train_on_tool_output)
        return False
    state.add_tool(ids, text, trained=settings.train_on_tool_output)
    return len(state.response_ids) < settings.max_response_tokens


async def _trajectory(
    index: int,
    prompt_ids: list[int],
    engine: Engine,
    batcher: _Batcher,
    clock: _Clock,
    settings: RolloutSettings,
    seed: int | None,
    cache_key: tuple[int, int],
    run_code: CodeRunner | None = None,
    tools: list[dict] | None = None,
    task: dict | None = None,
) -> Trajectory:
    try:
        return await run_trajectory(
            prompt_ids,
            batcher.generate,
            engine.tokenizer,
            settings,
            seed=seed,
            index=index,
            cache_key=cache_key,
            clock=clock,
            run_code=run_code,
            tools=tools,
            task=task,
        )
    finally:
        engine.release(cache_key)


async def run_trajectory(
    prompt_ids: list[int],
    generate: Callable[[GenerationRequest], Awaitable[GenerationOutput]],
    tokenizer: Tokenizer,
    settings: RolloutSettings,
    *,
    seed: int | None = None,
    index: int = 0,
    cache_key: Hashable | None = None,
    clock: _Clock | None = None,
    run_code: CodeRunner | None = None,
    tools: list[dict] | None = None,
    task: dict | None = None,
) -> Trajectory:
    """One trajectory: generate until the protocol's stop marker, run the call in the run's environment,
    append the fed-back output, and again, until the budget, EOS or the response limit (see the module
    docstring). `generate` serves one request at a time; `index` and `seed` make the request seeds,
    `cache_key` names the trajectory to the engine, `clock` (default: a fresh one) times its spans. A
    multi-turn environment may answer a turn without a call (`on_no_call`), end the trajectory after a call
    (`finished`) and give its result at the end (`outcome`, kept on the Completion)."""
    clock = clock if clock is not None else _Clock()
    protocol = get_protocol(settings.protocol)
    env = settings.env()
    context = settings.call_context(tools, run_code, task)
    feedback = Feedback(settings.feedback)
    state = _State()
    executions: list[ToolExecution] = []
    replies: list[int] = []  # places of the replies to turns without a call among the tool texts
    # Stops at the tool marker: each uses up a call of the budget, whether it ran code or not.
    calls_made = 0
    spans: list[Span] = []
    truncated = False
    for turn in itertools.count():
        stops = env.stop_strings(protocol, calls_made, settings.max_tool_calls)
        request = GenerationRequest(
            token_ids=prompt_ids + state.response_ids,
            max_new_tokens=settings.max_response_tokens - len(state.response_ids),
            stop_strings=stops,
            temperature=settings.temperature,
            top_p=settings.top_p,
            # Distinct per trajectory and turn, so a group's G samples of one prompt differ.
            seed=None if seed is None else (seed * 1_000_003 + index) * 1009 + turn,
            cache_key=cache_key,
        )
        start = clock.now()
        output = await generate(request)
        spans.append(Span("gen", start, clock.now()))
        before = state.text
        state.add_generated(output.new_token_ids, output.logprobs, output.text)
        if output.finish_reason == "length":
            truncated = True
            break
        stopped = None
        if output.finish_reason == "stop" and output.stop_string in stops:
            marker = output.stop_string
            stopped = before + output.text[: output.text.find(marker) + len(marker)]
        if stopped is None or not env.is_call(protocol, stopped):
            # The model ended its turn (its end-of-sequence token, a stop string that calls nothing, or a stop the
            # environment does not take for a call).
            follow = env.on_no_call(protocol, context) if output.finish_reason in ("stop", "eos") else None
            if follow is None:
                break
            replies.append(len(executions) + len(replies))
            if not _append_tool_text(tokenizer, state, follow, settings):
                truncated = True
                break
            continue
        calls_made += 1
        start = clock.now()
        clock.tool_started()
        try:
            execution = await env.run_call(protocol, stopped, feedback, context)
        finally:
            clock.tool_ended()
        if execution is not None:
            spans.append(Span("tool", start, clock.now()))
            executions.append(execution)
        turn_data = (before, stopped, list(output.new_token_ids))
        if not _append_tool_output(tokenizer, protocol, state, turn_data, execution, settings):
            truncated = True
            break
        if env.finished(context):
            break
    start = clock.now()
    outcome = await env.outcome(protocol, context, truncated=truncated)
    if outcome is not None:
        spans.append(Span("tool", start, clock.now()))
    completion = Completion(
        text=state.text,
        protocol=protocol.name,
        executions=tuple(executions),
        truncated=truncated,
        response_tokens=state.model_tokens,
        outcome=outcome,
        replies=tuple(replies),
    )
    return Trajectory(
        completion=completion,
        prompt_ids=prompt_ids,
        response_ids=state.response_ids,
        loss_mask=state.loss_mask,
        tool_mask=state.tool_mask,
        logprobs=state.logprobs,
        spans=tuple(spans),
    )


async def arollout(
    engine: Engine,
    prompts: Sequence[Sequence[int]],
    settings: RolloutSettings,
    *,
    seed: int | None = None,
    run_code: CodeRunner | None = None,
    first_index: int = 0,
    stop: threading.Event | None = None,
    tools: Sequence[list[dict] | None] | None = None,
    tasks: Sequence[dict | None] | None = None,
) -> RolloutResult:
    """Roll out one response per prompt (repeat a prompt G times for a GRPO group).

    `tools`, one entry per prompt, are the tools each prompt's example offers: what the
    `function_calling` environment runs calls against; `tasks`, one per prompt, what an environment needs
    beyond them (trainer.envs.environment_task: the swe environment's instance).

    `seed` makes sampling reproducible (per trajectory and turn, independent of batching);
    None draws from torch's generator inside the engine. `run_code` executes tool calls
    (default `sandbox.arun`). `first_index` is the place of `prompts[0]` in a larger rollout split
    over several calls (trainer.rollout.ray's replicas): each trajectory's seed follows its place
    there, so the split samples exactly what one call would. `stop`, set from another thread (a
    closing trainer.rollout.off_policy pipeline), ends the rollout with RolloutStopped: the trajectories
    are cancelled and a continuously batched engine call ends at its next decode step.
    """
    rollout_id = next(_rollout_ids)
    batcher = _Batcher(engine, continuous=settings.continuous_batching, stop=stop)
    clock = _Clock()
    batch_task = asyncio.create_task(batcher.run())
    if tools is not None and len(tools) != len(prompts):
        raise ValueError(f"{len(tools)} tool lists for {len(prompts)} prompts")
    if tasks is not None and len(tasks) != len(prompts):
        raise ValueError(f"{len(tasks)} tasks for {len(prompts)} prompts")
    tasks = [
        asyncio.create_task(
            _trajectory(
                i,
                list(p),
                engine,
                batcher,
                clock,
                settings,
                seed,
                (rollout_id, i),
                run_code,
                tools[i - first_index] if tools is not None else None,
                tasks[i - first_index] if tasks is not None else None,
            )  # fmt: skip
        )
        for i, p in enumerate(prompts, start=first_index)
    ]
    watcher = asyncio.create_task(_cancel_on(stop, tasks)) if stop is not None else None
    try:
        trajectories = await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        if stop is not None and stop.is_set():
            raise RolloutStopped("the rollout was stopped") from None
        raise
    finally:
        # After a failure the other trajectories would wait forever on a batcher that is gone.
        for task in tasks:
            task.cancel()
        for task in (batch_task, watcher):
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
    return RolloutResult(
        trajectories=list(trajectories),
        wall_s=clock.now(),
        gen_s=batcher.gen_s,
        tool_s=clock.tool_s,
        batch_sizes=batcher.batch_sizes,
    )


async def _cancel_on(stop: threading.Event, tasks: list[asyncio.Task[Trajectory]]) -> None:
    """Cancel the rollout's trajectories once `stop` is set (looked at every STOP_POLL_S)."""
    while not stop.is_set():
        await asyncio.sleep(STOP_POLL_S)
    for task in tasks:
        task.cancel()


def rollout(
    engine: Engine,
    prompts: Sequence[Sequence[int]],
    settings: RolloutSettings,
    *,
    seed: int | None = None,
    stop: threading.Event | None = None,
    tools: Sequence[list[dict] | None] | None = None,
    tasks: Sequence[dict | None] | None = None,
) -> RolloutResult:
    """`arollout` on a fresh event loop, for synchronous callers such as the training loop."""
    return asyncio.run(arollout(engine, prompts, settings, seed=seed, stop=stop, tools=tools, tasks=tasks))
