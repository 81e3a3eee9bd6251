"""The GRPO training loop: sample prompts, roll out groups with real tool calls, score them, update.

Before the first step, with `sft.enabled`, the loaded policy is fine-tuned on SFT traces
(trainer.sft.phase). One step:
  1. take `prompts_per_step` examples (a seeded draw per step, so a resumed run sees the same data),
  2. roll out G responses each with the async multi-turn loop (the sandbox runs the model's code),
     in this process or, with rollout.backend 'ray', on Ray actors (trainer.rollout.ray),
  3. score each group with the run's reward, drop groups the filter rejects and refill up to a limit,
     and mask the samples the filters leave out of the loss (trainer.loop.collect, trainer.loop.filters),
  4. compute group-relative advantages and take `ppo_epochs` passes of the clipped policy loss
     (trainer.grpo) over the trainable tokens, one optimizer step per mini-batch of
     `mini_batch_prompts` groups, with gradient clipping (trainer.loop.update),
  5. report the step's metrics and whole groups of trajectories; checkpoint and evaluate on schedule.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from trainer.config import RunConfig
from trainer.contract import LOADING, RL, TrajectoryIn
from trainer.engines.hf import HFEngine
from trainer.loop import setup
from trainer.loop.checkpoint import load_checkpoint, save_checkpoint
from trainer.loop.collect import Collected, Group, collect_step, draw_rows, evaluate_step, score_groups
from trainer.loop.sampling import as_groups, pass_settings, prompt_ids, rollout_inputs
from trainer.loop.update import GRPOUpdate
from trainer.models import load_policy
from trainer.protocols import get_protocol
from trainer.protocols.prompts import Prompt, build_prompt
from trainer.report.trajectories import groups_report
from trainer.rewards import TRAIN_SPLIT, RewardState
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings, rollout
from trainer.rollout.off_policy import Behaviour, RolloutPipeline, cpu_split, torch_threads
from trainer.sft.phase import run_sft
from trainer.trajectory import Example


class Reporter(Protocol):
    """Where a run's results go: the dashboard's ingest endpoint, or files in the output folder."""

    stopped_by_dashboard: bool

    def log_metrics(self, step: int, values: dict[str, float]) -> None: ...
    def log_trajectories(self, trajectories: Iterable[TrajectoryIn]) -> None: ...
    def log_checkpoint(self, step: int, path: str | Path) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def set_phase(self, name: str, done: int, total: int, eta_s: float | None = None, detail: str = "") -> None: ...


@dataclass
class StepResult:
    step: int
    metrics: dict[str, float]
    groups: list[Group]


class Trainer:
    """One run: its policy and the engine that samples it (trainer.loop.setup), its data and reward
    state, the update (trainer.loop.update), and the step that ties them (collect, update, report)."""

    def __init__(
        self,
        config: RunConfig,
        *,
        reporter: Reporter,
        out_dir: Path,
        model_cache: Path,
        log: Callable[[str], None] = print,
        sft: bool = True,
    ) -> None:
        if config.engine == "verl":
            raise ValueError(setup.VERL_ENGINE_ELSEWHERE)
        if config.engine == "vllm":
            setup.check_vllm_available(config)
        self.config, self.reporter, self.out_dir, self.log = config, reporter, out_dir, log
        setup.seed_everything(config.seed)
        self.model, self.tokenizer = load_policy(
            config.model.name_or_path, dtype=config.model.dtype, cache_dir=model_cache, log=log
        )
        # Engine 'vllm' takes its share of the GPU first; the policy (and its reference copy) then
        # train on the same GPU, and every update is pushed into the engine (sync_weights).
        vllm_engine = None
        if config.engine == "vllm":
            vllm_engine = setup.vllm_engine(config, self.model, self.tokenizer, out_dir)
        self.model.to("cuda" if vllm_engine is not None else setup.policy_device(config))
        self.template = setup.run_prompt_template(config)
        # The data first: a dataset that cannot be read fails the run before minutes of SFT.
        self.settings = RolloutSettings.from_config(config)
        self.protocol = get_protocol(config.tools.protocol)
        self.train_data, self.val_data = setup.run_data(
            config, template=self.template, tokenizer=self.tokenizer, log=log
        )
        threads = self.threads = setup.tiny_threads(config)
        # The SFT cold start (sft.*), skipped on resume: the checkpoint holds what came of it. RL starts
        # from its result, which is also the KL reference.
        self.sft_summary = None
        if config.sft.enabled and sft:
            with torch_threads(threads) if threads else contextlib.nullcontext():
                self.sft_summary = run_sft(
                    self.model,
                    self.tokenizer,
                    config,
                    template=self.template,
                    reporter=reporter,
                    out_dir=out_dir,
                    log=log,
                )
            if vllm_engine is not None:
                vllm_engine.load_weights(self.model.state_dict().items())
        self.learner = GRPOUpdate(self.model, pad_id=self.tokenizer.pad_token_id, config=config)
        self.engine = vllm_engine or HFEngine(self.model, self.tokenizer, num_threads=threads)
        # rollout.async_rollouts: the next step is rolled out by a behaviour copy of the weights while
        # this one trains (trainer.rollout.off_policy). Versions count the policy's updates.
        self.policy_version = 0
        self.behaviour: Behaviour | None = None
        self.pipeline: RolloutPipeline[Collected] | None = None
        self.cpu_split = None
        if config.rollout.async_rollouts:
            self.cpu_split = cpu_split(next(self.model.parameters()).device, threads)
            rollout_threads = self.cpu_split.rollout if self.cpu_split else None
            self.behaviour = Behaviour(
                self.model,
                self.tokenizer,
                sampler=vllm_engine is None and config.rollout.backend == "local",
                threads=rollout_threads or threads,
            )
            self.pipeline = RolloutPipeline(self._collect_behind, threads=rollout_threads)
        self.reward_state = RewardState()
        self.step = 0
        # Last, so that nothing after it can fail and leave actors behind; closed by close().
        self.ray_rollout = None
        if config.rollout.backend == "ray":
            # Imported only here: Ray is heavy, and only this backend needs it.
            from trainer.rollout.ray import RayRollout

            self.ray_rollout = RayRollout(
                self.model,
                self.tokenizer,
                replicas=config.rollout.replicas,
                sandbox_actors=config.rollout.sandbox_actors,
                num_threads=threads,
                log=log,
            )

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.learner.optimizer

    @property
    def scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        return self.learner.scheduler

    @property
    def ref_model(self) -> torch.nn.Module | None:
        return self.learner.ref_model

    # -- data -----------------------------------------------------------------------------------

    def prompt(self, example: Example) -> Prompt:
        """What the policy is conditioned on for ``example``: the template applied."""
        return build_prompt(example, self.config.tools.protocol, self.template)

    def prompt_ids(self, example: Example) -> list[int]:
        return prompt_ids(example, config=self.config, template=self.template, tokenizer=self.tokenizer)

    def draw(self, step: int, attempt: int, count: int) -> list[tuple[int, Example]]:
        """A seeded draw of training rows per (step, attempt) (trainer.loop.collect.draw_rows)."""
        return draw_rows(self.train_data, seed=self.config.seed, step=step, attempt=attempt, count=count)

    # -- rollout and reward -----------------------------------------------------------------------

    def roll(
        self,
        examples: Sequence[tuple[int, Example]],
        *,
        group_size: int,
        seed: int,
        greedy: bool = False,
        temperature: float | None = None,
        behaviour: bool = False,
    ) -> tuple[list[Group], RolloutResult]:
        """Roll out `group_size` responses per example with the policy's current weights or, with
        `behaviour` (async_rollouts' training rollouts), the behaviour copy's, stopped when the
        pipeline closes; greedily, or at `temperature` (None: the run's)."""
        settings = pass_settings(self.settings, greedy=greedy, temperature=temperature)
        prompts, tools, tasks = rollout_inputs(examples, group_size, self.prompt_ids)
        shared = self.behaviour is not None and self.behaviour.engine is None
        if not behaviour and shared and self.behaviour.version != self.policy_version:
            # vLLM or the Ray replicas sample the behaviour weights, maybe the next step right now:
            # let that rollout finish, then give them the policy's.
            self.pipeline.wait()
            self.sync_weights()
        if self.ray_rollout is not None:
            result = self.ray_rollout.rollout(
                prompts, settings, seed=seed, group_size=group_size, tools=tools, tasks=tasks
            )
        else:
            engine = self.behaviour.engine if behaviour and self.behaviour.engine is not None else self.engine
            stop = self.pipeline.stop if behaviour else None
            result = rollout(engine, prompts, settings, seed=seed, stop=stop, tools=tools, tasks=tasks)
            engine.clear_cache()
        return as_groups(examples, result, group_size), result

    def score(self, groups: list[Group], step: int, split: str = TRAIN_SPLIT) -> None:
        score_groups(groups, self.config.reward, step=step, state=self.reward_state, split=split)

    def collect(self, step: int, *, behaviour: bool = False) -> tuple[list[Group], dict[str, float]]:
        """Roll out and score a step's groups (trainer.loop.collect.collect_step). `behaviour`: sampled
        by the behaviour copy (async_rollouts)."""

        def roll(examples: Sequence[tuple[int, Example]], **how: Any) -> tuple[list[Group], RolloutResult]:
            return self.roll(examples, behaviour=behaviour, **how)

        return collect_step(self.config, step, roll=roll, draw=self.draw, score=self.score)

    def evaluate(self, step: int) -> dict[str, float]:
        """Greedy accuracy, and pass@k from k samples per prompt, on the validation data, overall and per
        benchmark (trainer.loop.collect.evaluate_step)."""
        return evaluate_step(self.config, self.val_data, step, roll=self.roll, score=self.score).metrics

    # -- update ---------------------------------------------------------------------------------

    def update(self, groups: list[Group], mini_batches: list[list[dict[str, Any]]] | None = None) -> dict[str, float]:
        """The GRPO update of the kept groups (trainer.loop.update.GRPOUpdate.update)."""
        return self.learner.update(groups, mini_batches)

    # -- the loop -------------------------------------------------------------------------------

    def train_step(self, *, last: bool = False) -> StepResult:
        """One step. With async_rollouts its rollout was started in the background during the previous
        step (or is collected now, on-policy, if none was), and unless this is the `last` step the next
        one's starts before the update (trainer.rollout.off_policy gives the timeline)."""
        step = self.step
        started = time.perf_counter()
        if self.pipeline is None:
            groups, metrics = self.collect(step)
            mini_batches, sampled_by = None, self.policy_version
            metrics["timing_s/wait_rollout"] = time.perf_counter() - started
        else:
            with self._threads():
                collected, waited = self.pipeline.take(step)
                groups, metrics, mini_batches, sampled_by = (
                    collected.groups, collected.metrics, collected.mini_batches, collected.version
                )  # fmt: skip
                metrics["timing_s/wait_rollout"] = waited
                if self.behaviour.version != self.policy_version:
                    sync_started = time.perf_counter()
                    self.sync_weights()
                    metrics["timing_s/weight_sync"] = time.perf_counter() - sync_started
            if not last:
                self.pipeline.start(step + 1)
        metrics["async/staleness"] = float(self.policy_version - sampled_by)
        train_started = time.perf_counter()
        if groups:
            with self._threads():
                metrics.update(self.update(groups, mini_batches))
            self.policy_version += 1
            if self.pipeline is None and (self.ray_rollout is not None or self.config.engine == "vllm"):
                sync_started = time.perf_counter()
                self.sync_weights()
                metrics["timing_s/weight_sync"] = time.perf_counter() - sync_started
        metrics["timing_s/train"] = time.perf_counter() - train_started
        metrics["timing_s/step"] = time.perf_counter() - started
        generated = sum(t.completion.response_tokens or 0 for g in groups for t in g.trajectories)
        metrics["perf/tokens_per_s"] = generated / max(metrics["timing_s/gen"], 1e-9)
        self.step += 1
        return StepResult(step=step, metrics=metrics, groups=groups)

    def checkpoint(self) -> Path:
        if self.pipeline is not None:
            # The rollout in flight scores into reward_state: let it finish rather than save it half-written.
            self.pipeline.wait()
        return save_checkpoint(
            self.out_dir / "checkpoints" / f"step-{self.step}",
            model=self.model,
            tokenizer=self.tokenizer,
            optimizer=self.learner.optimizer,
            scheduler=self.learner.scheduler,
            step=self.step,
            reward_state=self.reward_state.to_dict(),
            config=self.config.model_dump(mode="json"),
        )

    def resume(self, path: Path) -> None:
        """Continue from a checkpoint; no rollout is in flight after it, so the next step is on-policy."""
        if self.pipeline is not None:
            self.pipeline.drop()
        learner = self.learner
        state = load_checkpoint(path, model=self.model, optimizer=learner.optimizer, scheduler=learner.scheduler)
        self.step = state["step"]
        self.reward_state = RewardState.from_dict(state["reward_state"])
        self.sync_weights()

    def sync_weights(self) -> None:
        """Hand the policy's current weights to what samples from a copy of its own: the Ray rollout
        replicas, the vLLM engine, the behaviour copy (async_rollouts; then only between rollouts).
        The local hf engine shares the policy's."""
        if self.ray_rollout is not None:
            self.ray_rollout.load_weights(self.model.state_dict())
        if self.config.engine == "vllm":
            self.engine.load_weights(self.model.state_dict().items())
        if self.behaviour is not None:
            self.behaviour.load(self.model, self.policy_version)

    def _collect_behind(self, step: int) -> Collected:
        """The pipeline's job (async_rollouts): `step` rolled out by the behaviour copy, then prepared
        for the update with the copy's old log-probs while it still holds the weights that sampled."""
        groups, metrics = self.collect(step, behaviour=True)
        mini_batches = self.learner.prepare(groups, self.behaviour.model) if groups else []
        return Collected(groups, metrics, mini_batches, self.behaviour.version)

    def _threads(self) -> contextlib.AbstractContextManager[None]:
        """The update's intra-op threads: with async_rollouts on CPU, this thread's share of the cores
        (trainer.rollout.off_policy.cpu_split); else the tiny models' one thread, as they generate and
        fine-tune with (torch's two spin-waited on a busy 2-core machine: an update took 15.8 s
        against 1.25 s on one thread)."""
        if self.cpu_split is not None:
            return torch_threads(self.cpu_split.update)
        return torch_threads(self.threads) if self.threads else contextlib.nullcontext()

    def close(self) -> None:
        """Stop the background rollout (async_rollouts), then the Ray actors, and the local Ray
        instance if the run started one."""
        if self.pipeline is not None:
            self.pipeline.close()
        if self.ray_rollout is not None:
            self.ray_rollout.close()
            self.ray_rollout = None


def run_training(
    config: RunConfig,
    *,
    reporter: Reporter,
    out_dir: Path,
    model_cache: Path,
    max_steps: int | None = None,
    resume: Path | None = None,
    progress: Callable[[StepResult, float], None] | None = None,
    log: Callable[[str], None] = print,
    stop_requested: Callable[[], bool] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> Trainer:
    """Train until max_steps (or the config's), reporting every step; returns the trainer.

    Stops early, after the step in progress, when the dashboard stops the run or `stop_requested()`
    says so (SIGTERM, as Ray sends when a job is stopped). `on_ready()` is called once the model is
    loaded (cold start included) and the run resumed, just before the first step."""
    reporter.set_phase(LOADING, 0, 1, detail=config.model.name_or_path)
    trainer = Trainer(config, reporter=reporter, out_dir=out_dir, model_cache=model_cache, log=log, sft=resume is None)
    last = max_steps if max_steps is not None else config.schedule.max_steps
    schedule = config.schedule
    try:
        if resume is not None:
            trainer.resume(resume)
            reporter.log(f"resumed from {resume} at step {trainer.step}")
        if on_ready is not None:
            on_ready()  # set up: from here a stop request waits for the step in progress
        started, first = time.perf_counter(), trainer.step
        reporter.set_phase(RL, min(first, last), max(last, 1))
        # The starting policy on the validation data, reported with step 0 (verl's val_before_train).
        before = trainer.evaluate(0) if schedule.eval_before_train and first == 0 else {}
        while trainer.step < last:
            result = trainer.train_step(last=trainer.step + 1 >= last)
            metrics = {**dict(result.metrics), **before}
            before = {}
            if schedule.eval_every and trainer.step % schedule.eval_every == 0:
                metrics.update(trainer.evaluate(result.step))
            reporter.log_metrics(result.step, metrics)
            per_step_s = (time.perf_counter() - started) / (trainer.step - first)
            reporter.set_phase(RL, trainer.step, last, eta_s=per_step_s * (last - trainer.step))
            reported = result.groups[: config.rollout.trajectories_to_report]
            reporter.log_trajectories(
                groups_report(reported, step=result.step, protocol=trainer.protocol, prompt=trainer.prompt)
            )
            if schedule.checkpoint_every and trainer.step % schedule.checkpoint_every == 0:
                saved = trainer.checkpoint()
                reporter.log_checkpoint(trainer.step, saved)
                reporter.log(f"checkpoint saved to {saved}")
            if progress is not None:
                progress(result, time.perf_counter() - started)
            if getattr(reporter, "stopped_by_dashboard", False):
                reporter.log("the dashboard stopped this run")
                break
            if stop_requested is not None and stop_requested():
                reporter.log(f"stop requested: stopping after step {result.step}")
                break
    finally:
        # However the run ends (done, stopped by SIGTERM, failed), its Ray actors end with it.
        trainer.close()
    return trainer
