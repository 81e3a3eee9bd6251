"""The GRPO training loop: sample prompts, roll out groups with real tool calls, score them, update.

Before the first step, with `sft.enabled`, the loaded policy is fine-tuned on SFT traces
(trainer.cold_start). One step:
  1. take `prompts_per_step` examples (a seeded draw per step, so a resumed run sees the same data),
  2. roll out G responses each with the async multi-turn loop (the sandbox runs the model's code),
     in this process or, with rollout.backend 'ray', on Ray actors (trainer.ray_rollout),
  3. score each group with the run's reward, drop groups the filter rejects and refill up to a limit,
     and mask the samples the filters leave out of the loss (trainer.filters),
  4. compute group-relative advantages and take `ppo_epochs` passes of the clipped policy loss
     (trainer.grpo) over the trainable tokens, one optimizer step per mini-batch of
     `mini_batch_prompts` groups, with gradient clipping,
  5. report the step's metrics and whole groups of trajectories; checkpoint and evaluate on schedule.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from trainer.async_rollout import Behaviour, RolloutPipeline, cpu_split, torch_threads
from trainer.call_metrics import call_metrics
from trainer.checkpoint import load_checkpoint, save_checkpoint
from trainer.cold_start import run_sft
from trainer.config import TINY_MODELS, RunConfig
from trainer.contract import JSON_CALL_PROTOCOLS, LOADING, RL, ChatMessage, TrajectoryIn, TurnIn
from trainer.data import load_dataset
from trainer.engines.hf import HFEngine
from trainer.filters import StepFilter
from trainer.grpo import group_advantages, policy_loss, token_logprobs
from trainer.metrics import ScoredCompletion, step_metrics, subset_metrics, validation_metrics
from trainer.models import SMOLLM2_MODEL, TINY_PROMPT_TEMPLATE, CharTokenizer, load_policy
from trainer.prompts import Prompt, build_prompt
from trainer.protocols import get_protocol
from trainer.report import jsonable
from trainer.rewards import TRAIN_SPLIT, VAL_SPLIT, RewardState, score_group
from trainer.rollout import RolloutSettings, Trajectory, rollout
from trainer.trajectory import Example, RewardResult

# Sequences scored per forward/backward pass; gradients accumulate across them.
MICRO_BATCH = 16
# The extra_info key whose value splits step and validation metrics into subsets
# (trainer.metrics.subset_metrics): the arithmetic set labels every problem easy or hard.
METRIC_SUBSET_KEY = "difficulty"


class Reporter(Protocol):
    """Where a run's results go: the dashboard's ingest endpoint, or files in the output folder."""

    stopped_by_dashboard: bool

    def log_metrics(self, step: int, values: dict[str, float]) -> None: ...
    def log_trajectories(self, trajectories: list[TrajectoryIn]) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def set_phase(self, name: str, done: int, total: int, eta_s: float | None = None, detail: str = "") -> None: ...


@dataclass
class Group:
    """The G rollouts of one prompt and their rewards."""

    index: int
    example: Example
    trajectories: list[Trajectory]
    rewards: list[Any] = field(default_factory=list)

    @property
    def scored(self) -> list[ScoredCompletion]:
        return [ScoredCompletion(t.completion, r) for t, r in zip(self.trajectories, self.rewards, strict=True)]


@dataclass
class StepResult:
    step: int
    metrics: dict[str, float]
    groups: list[Group]


@dataclass
class Collected:
    """A step's kept groups and metrics, made into the update's mini-batches with the old log-probs
    of the behaviour copy, which held policy version `version` (async_rollouts)."""

    groups: list[Group]
    metrics: dict[str, float]
    mini_batches: list[list[dict[str, Any]]]
    version: int


def subset_label(example: Example, key: str = METRIC_SUBSET_KEY) -> str | None:
    """The subset an example's metrics are also reported under: its extra_info[key], if any."""
    value = (example.extra_info or {}).get(key)
    return None if value is None else str(value)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def _without_dropout(model: torch.nn.Module) -> bool:
    """Whether the model's training forward pass computes what its evaluation pass does: no dropout
    module and no dropout rate in its config."""
    config = getattr(model, "config", None)
    rates = (getattr(config, name, 0.0) or 0.0 for name in _DROPOUT_RATES)
    modules = (m for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd))
    return all(rate == 0 for rate in rates) and all(m.p == 0 for m in modules)


# HF config fields of dropout rates applied in the forward pass (Llama/Qwen's attention_dropout,
# GPT-2's *_pdrop, others' plain names).
_DROPOUT_RATES = ("attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "attn_pdrop", "embd_pdrop")


def _scheduler(
    optimizer: torch.optim.Optimizer, config: RunConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    warmup, kind = config.optim.warmup_steps, config.optim.lr_schedule

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total_steps - warmup)
        if kind == "linear":
            return max(0.0, 1.0 - progress)
        if kind == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
        return 1.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def check_vllm_available(config: RunConfig) -> None:
    """Engine 'vllm' needs the vllm package (requirements-gpu.txt) and a CUDA GPU; say which is missing."""
    missing = []
    if importlib.util.find_spec("vllm") is None:
        missing.append("the vllm package is not installed (make gpu-deps)")
    if not torch.cuda.is_available():
        missing.append("no CUDA GPU is visible")
    if missing:
        raise ValueError(
            "engine 'vllm' is not available here: the vLLM engine needs a GPU machine and requirements-gpu.txt, and "
            + " and ".join(missing)
            + "; use engine 'hf'"
        )
    if config.model.name_or_path in TINY_MODELS:
        raise ValueError(
            f"engine 'vllm' cannot load {config.model.name_or_path}: vLLM does not know its character "
            "tokenizer; use engine 'hf'"
        )
    if config.rollout.backend != "local":
        raise ValueError("engine 'vllm' runs in the trainer's process; use rollout.backend 'local'")


def policy_device(config: RunConfig) -> str:
    """Where the policy lives with engine 'hf': `model.device`, 'auto' being the GPU when one is visible."""
    wanted = config.model.device
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted == "cuda" and not torch.cuda.is_available():
        raise ValueError("model.device 'cuda': no CUDA GPU is visible to the trainer; use 'auto' or 'cpu'")
    return wanted


def run_prompt_template(config: RunConfig) -> str | None:
    """The prompt template a run applies: the config's; else the tiny model's own (the one its cold
    start was trained on); else None, the protocol's default."""
    return config.data.prompt_template or (TINY_PROMPT_TEMPLATE if config.model.name_or_path in TINY_MODELS else None)


class Trainer:
    """Holds the policy, optimizer, data and reward state of one run."""

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
        if config.engine == "vllm":
            check_vllm_available(config)
        self.config, self.reporter, self.out_dir, self.log = config, reporter, out_dir, log
        _seed_everything(config.seed)
        self.model, self.tokenizer = load_policy(
            config.model.name_or_path, dtype=config.model.dtype, cache_dir=model_cache, log=log
        )
        # Engine 'vllm' takes its share of the GPU first; the policy (and its reference copy) then
        # train on the same GPU, and every update is pushed into the engine (sync_weights).
        vllm_engine = self._vllm_engine(out_dir) if config.engine == "vllm" else None
        self.model.to("cuda" if vllm_engine is not None else policy_device(config))
        self.template = run_prompt_template(config)
        # The data first: a dataset that cannot be read fails the run before minutes of SFT.
        self.settings = RolloutSettings.from_config(config)
        self.protocol = get_protocol(config.tools.protocol)
        self.train_data = self._fitting(
            load_dataset(config.data.train_dataset, split="train", seed=config.seed), "train_dataset"
        )
        if not self.train_data:
            raise ValueError(f"dataset {config.data.train_dataset!r} has no examples")
        self.val_data = (
            self._fitting(load_dataset(config.data.val_dataset, split="test", seed=config.seed), "val_dataset")
            if config.data.val_dataset
            else []
        )
        # The SFT cold start (sft.*), skipped on resume: the checkpoint holds what came of it. RL starts
        # from its result, which is also the KL reference below.
        self.sft_summary = None
        # One intra-op thread: the tiny model's small matmuls run slower with two on two cores (on a
        # busy machine an SFT step of it took 4 s with two threads, 0.6 s with one).
        threads = self.threads = 1 if config.model.name_or_path in TINY_MODELS else None
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
        # The reference model exists only when the KL term does (k3 estimator in trainer.grpo).
        self.ref_model = copy.deepcopy(self.model).eval() if config.grpo.kl_coef > 0 else None
        self.engine = vllm_engine or HFEngine(self.model, self.tokenizer, num_threads=threads)
        # rollout.async_rollouts: the next step is rolled out by a behaviour copy of the weights while
        # this one trains (trainer.async_rollout). Versions count the policy's updates.
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
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.optim.learning_rate)
        self.scheduler = _scheduler(self.optimizer, config, config.schedule.max_steps)
        self.reward_state = RewardState()
        self.step = 0
        # Last, so that nothing after it can fail and leave actors behind; closed by close().
        self.ray_rollout = None
        if config.rollout.backend == "ray":
            from trainer.ray_rollout import RayRollout

            self.ray_rollout = RayRollout(
                self.model,
                self.tokenizer,
                replicas=config.rollout.replicas,
                sandbox_actors=config.rollout.sandbox_actors,
                num_threads=threads,
                log=log,
            )

    def _vllm_engine(self, out_dir: Path):
        """The colocated vLLM engine, loaded from the policy's own files and then given its weights."""
        from trainer.engines.vllm import VLLMEngine

        config = self.config
        if isinstance(self.tokenizer, CharTokenizer):
            raise ValueError("engine 'vllm' cannot use a CharTokenizer model: vLLM does not know it; use engine 'hf'")
        source = config.model.name_or_path
        if source == SMOLLM2_MODEL:
            # vLLM reads a transformers directory: the policy as loaded (from its GGUF) is saved as one.
            path = out_dir / "vllm-model"
            self.model.save_pretrained(path)
            self.tokenizer.save_pretrained(path)
            source = str(path)
        engine = VLLMEngine(
            source,
            self.tokenizer,
            dtype=config.model.dtype,
            max_model_len=config.data.max_prompt_tokens + config.data.max_response_tokens,
            seed=config.seed,
        )
        engine.load_weights(self.model.state_dict().items())
        return engine

    # -- data -----------------------------------------------------------------------------------

    def prompt(self, example: Example) -> Prompt:
        """What the policy is conditioned on for ``example``: the template applied."""
        return build_prompt(example, self.config.tools.protocol, self.template)

    def prompt_ids(self, example: Example) -> list[int]:
        text = build_prompt(example, self.config.tools.protocol, self.template).render(self.tokenizer)
        # No special tokens added, raw prompts included: ToRL's rollout gets its prompt ids so
        # (verl/utils/dataset/rl_dataset.py:226 @cb78cf1).
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        limit = self.config.data.max_prompt_tokens
        # Keep the end: it holds the question and the assistant turn the model continues from.
        return ids[-limit:]

    def _fitting(self, examples: list[Example], field: str) -> list[Example]:
        """With data.overlong_prompts 'drop', the examples whose prompt ToRL's length filter keeps."""
        data = self.config.data
        if data.overlong_prompts != "drop" or not examples:
            return examples
        protocol = self.config.tools.protocol
        kept = [
            example
            for example in examples
            if build_prompt(example, protocol, self.template).fits(self.tokenizer, data.max_prompt_tokens)
        ]
        dropped = len(examples) - len(kept)
        self.log(
            f"data.overlong_prompts 'drop': dropped {dropped} of {len(examples)} rows of {getattr(data, field)!r} "
            f"whose prompt is longer than data.max_prompt_tokens ({data.max_prompt_tokens}) allows"
        )
        if not kept:
            raise ValueError(
                f"data.overlong_prompts 'drop' dropped every row of data.{field} {getattr(data, field)!r}: "
                f"no prompt fits in data.max_prompt_tokens = {data.max_prompt_tokens} "
                "(raw templates need 10 tokens to spare); raise it or use 'truncate'"
            )
        return kept

    def draw(self, step: int, attempt: int, count: int) -> list[tuple[int, Example]]:
        """A seeded draw per (step, attempt): the same on a resumed run as on an uninterrupted one."""
        rng = random.Random(f"{self.config.seed}:{step}:{attempt}")
        indices = rng.sample(range(len(self.train_data)), min(count, len(self.train_data)))
        return [(i, self.train_data[i]) for i in indices]

    # -- rollout and reward -----------------------------------------------------------------------

    def roll(
        self,
        examples: Sequence[tuple[int, Example]],
        *,
        group_size: int,
        seed: int,
        greedy: bool = False,
        behaviour: bool = False,
    ):
        """Roll out `group_size` responses per example with the policy's current weights or, with
        `behaviour` (async_rollouts' training rollouts), the behaviour copy's, stopped when the
        pipeline closes."""
        settings = dataclasses.replace(self.settings, temperature=0.0) if greedy else self.settings
        prompts = [self.prompt_ids(example) for _, example in examples for _ in range(group_size)]
        # The tools each prompt offers, which the function_calling environment runs calls against.
        tools = [example.tools for _, example in examples for _ in range(group_size)]
        shared = self.behaviour is not None and self.behaviour.engine is None
        if not behaviour and shared and self.behaviour.version != self.policy_version:
            # vLLM or the Ray replicas sample the behaviour weights, maybe the next step right now:
            # let that rollout finish, then give them the policy's.
            self.pipeline.wait()
            self.sync_weights()
        if self.ray_rollout is not None:
            result = self.ray_rollout.rollout(prompts, settings, seed=seed, group_size=group_size, tools=tools)
        else:
            engine = self.behaviour.engine if behaviour and self.behaviour.engine is not None else self.engine
            stop = self.pipeline.stop if behaviour else None
            result = rollout(engine, prompts, settings, seed=seed, stop=stop, tools=tools)
            engine.clear_cache()
        groups = []
        for g, (index, example) in enumerate(examples):
            trajectories = result.trajectories[g * group_size : (g + 1) * group_size]
            groups.append(Group(index=index, example=example, trajectories=trajectories))
        return groups, result

    def score(self, groups: list[Group], step: int, split: str = TRAIN_SPLIT) -> None:
        """Score each group; `split` keeps evaluation's reward state (OTC-GRPO's minimum) apart
        from training's, since validation prompt ids are row numbers like training ones."""
        reward = self.config.reward
        for group in groups:
            group.rewards = score_group(
                reward.name,
                [t.completion for t in group.trajectories],
                group.example.ground_truth,
                params=reward.params,
                step=step,
                prompt_id=group.example.id,
                state=self.reward_state,
                split=split,
            )

    def collect(self, step: int, *, behaviour: bool = False) -> tuple[list[Group], dict[str, float]]:
        """Roll out and score a step's groups, refilling filtered-out groups up to the resample limit;
        the kept groups' dropped samples are masked from the loss (trainer.filters). `behaviour`:
        sampled by the behaviour copy (async_rollouts)."""
        wanted, group_size = self.config.rollout.prompts_per_step, self.config.rollout.group_size
        step_filter = StepFilter(self.config.filtering)
        kept: list[Group] = []
        timing = {"timing_s/gen": 0.0, "timing_s/tool": 0.0, "timing_s/rollout": 0.0, "reward_s": 0.0}
        seen: list[Group] = []
        for attempt in range(self.config.filtering.max_resample_batches + 1):
            need = wanted - len(kept)
            if need <= 0:
                break
            groups, result = self.roll(
                self.draw(step, attempt, need if attempt else wanted),
                group_size=group_size,
                seed=self.config.seed * 1_000_003 + step * 101 + attempt,
                behaviour=behaviour,
            )
            timing["timing_s/gen"] += result.gen_s
            timing["timing_s/tool"] += result.tool_s
            timing["timing_s/rollout"] += result.wall_s
            started = time.perf_counter()
            self.score(groups, step)
            timing["reward_s"] += time.perf_counter() - started
            seen += groups
            kept += [g for g in groups if step_filter.keep(g.rewards)][:need]
        for group in kept:
            group.trajectories = step_filter.train_on(group.trajectories, group.rewards)
        # Metrics describe everything sampled; the update uses only the kept groups.
        metrics = step_metrics([g.scored for g in seen])
        metrics.update(
            subset_metrics([g.scored for g in seen], [subset_label(g.example) for g in seen], prefix="train/")
        )
        metrics.update(self.call_metrics(seen))
        metrics["groups/kept"] = float(len(kept))
        metrics["groups/sampled"] = float(len(seen))
        metrics.update(step_filter.metrics())
        metrics["timing_s/reward"] = timing.pop("reward_s")
        metrics.update(timing)
        return kept, metrics

    # -- update ---------------------------------------------------------------------------------

    def _batch(self, items: list[tuple[Trajectory, float]]) -> dict[str, Any]:
        """Rows [left pad | prompt | response | right pad]: every response starts at the same
        column, `scored_from`, so the output layer runs on the response columns only."""
        prompt_width = max(len(t.prompt_ids) for t, _ in items)
        width = prompt_width + max(len(t.response_ids) for t, _ in items)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids, attention, mask, advantages = [], [], [], []
        for trajectory, advantage in items:
            lead = prompt_width - len(trajectory.prompt_ids)
            fill = width - prompt_width - len(trajectory.response_ids)
            ids.append([pad] * lead + trajectory.prompt_ids + trajectory.response_ids + [pad] * fill)
            real = len(trajectory.prompt_ids) + len(trajectory.response_ids)
            attention.append([0] * lead + [1] * real + [0] * fill)
            mask.append([0] * prompt_width + list(trajectory.loss_mask) + [0] * fill)
            advantages.append(advantage)
        return {
            "input_ids": torch.tensor(ids),
            "attention_mask": torch.tensor(attention),
            "mask": torch.tensor(mask, dtype=torch.float32),
            "advantages": torch.tensor(advantages, dtype=torch.float32),
            "scored_from": prompt_width,
        }

    def prepare(
        self, groups: list[Group], behaviour: torch.nn.Module, *, first_from_update: bool = False
    ) -> list[list[dict[str, Any]]]:
        """The update's mini-batches (lists of micro-batches) of the kept groups, with their advantages
        and the old log-probs of `behaviour`, the weights that sampled them, recomputed with the training
        forward pass so that on-policy the ratio starts at exactly 1 (the engine's top-p truncation is
        not part of the trained distribution).

        `first_from_update`: the first mini-batch is left without them; `update` takes them from its
        own first forward pass over it (see there)."""
        grpo = self.config.grpo
        advantages = group_advantages([[r.total for r in g.rewards] for g in groups], scale_by_std=grpo.scale_by_std)
        # A mini-batch is whole groups, as verl's ppo_mini_batch_size counts prompts times rollout.n
        # (ToRL verl/workers/fsdp_workers.py:119 @cb78cf1); a short step (filtering kept fewer groups)
        # is split as it is, the last mini-batch taking what is left (verl's split, dp_actor.py:245).
        per_mini_batch = self.config.optim.mini_batch_prompts or len(groups)
        mini_batches = []
        for first in range(0, len(groups), per_mini_batch):
            items = [
                (trajectory, float(advantage))
                for group, group_adv in zip(
                    groups[first : first + per_mini_batch], advantages[first : first + per_mini_batch], strict=True
                )
                for trajectory, advantage in zip(group.trajectories, group_adv.tolist(), strict=True)
            ]
            mini_batches.append([self._batch(items[i : i + MICRO_BATCH]) for i in range(0, len(items), MICRO_BATCH)])
        device = next(self.model.parameters()).device
        if device.type != "cpu":
            # The policy lives on the GPU, the batches are built on the CPU.
            for batch in (b for mini_batch in mini_batches for b in mini_batch):
                batch.update({k: v.to(device) for k, v in batch.items() if isinstance(v, torch.Tensor)})
        with torch.no_grad():
            for batch in (b for mini_batch in mini_batches[1 if first_from_update else 0 :] for b in mini_batch):
                batch["old_logprobs"], _ = self._logprobs(behaviour, batch)
        return mini_batches

    def _logprobs(self, model: torch.nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        return token_logprobs(
            model,
            batch["input_ids"],
            batch["attention_mask"],
            temperature=max(self.config.rollout.temperature, 1e-6),
            scored_from=batch["scored_from"],
        )

    def update(self, groups: list[Group], mini_batches: list[list[dict[str, Any]]] | None = None) -> dict[str, float]:
        """PPO-clip epochs over the kept groups, one optimizer step per mini-batch; returns the loss statistics.

        `mini_batches` are `prepare`'s, made with the weights that sampled the groups (the behaviour
        copy's, with async_rollouts); without them the policy itself sampled, and they are made here.

        As verl's actor (GAIR-NLP/ToRL verl/workers/actor/dp_actor.py:226-329 @cb78cf1; verl v0.6.1
        verl/workers/actor/dp_actor.py:372-529 @d62da49): the old (and reference) log-probs are computed
        once, before the first optimizer step; each epoch walks the mini-batches in order, without
        shuffling (batch.split, dp_actor.py:245), and takes one optimizer step per mini-batch, so every
        mini-batch after the first is trained off-policy and the clip can bind there. The learning
        rate schedule advances once per call, as verl's lr_scheduler.step() once per update_policy
        (ToRL verl/workers/fsdp_workers.py:435-441 @cb78cf1). Stats are means over the optimizer steps
        of each mini-batch's value, as verl's reduce_metrics averages its per-batch lists
        (ToRL verl/trainer/ppo/ray_trainer.py:205-208 @cb78cf1).
        """
        grpo = self.config.grpo
        if mini_batches is None:
            # On-policy, the first mini-batch's first forward pass runs on the weights that sampled it
            # (no optimizer step has been taken yet), so its old log-probs are that pass's, detached:
            # the same numbers as a forward pass of their own, which would cost a tenth of a
            # function-calling mini's step (py-spy). Exact where the training forward is the
            # evaluation one, i.e. without dropout.
            mini_batches = self.prepare(groups, self.model, first_from_update=_without_dropout(self.model))
        if self.ref_model is not None:
            with torch.no_grad():
                for batch in (b for mini_batch in mini_batches for b in mini_batch):
                    batch["ref_logprobs"], _ = self._logprobs(self.ref_model, batch)
        stats: dict[str, list[float]] = {}
        grad_norms = []
        self.model.train()
        for _ in range(self.config.optim.ppo_epochs):
            for mini_batch in mini_batches:
                tokens = sum(float(b["mask"].sum()) for b in mini_batch)
                sequences = sum(float((b["mask"].sum(-1) > 0).sum()) for b in mini_batch)
                step_stats: dict[str, float] = {}
                self.optimizer.zero_grad(set_to_none=True)
                for batch in mini_batch:
                    logprobs, entropy = self._logprobs(self.model, batch)
                    if "old_logprobs" not in batch:
                        batch["old_logprobs"] = logprobs.detach()
                    loss, batch_stats = policy_loss(
                        logprobs,
                        batch["old_logprobs"],
                        batch["advantages"],
                        batch["mask"],
                        clip_low=grpo.clip_low,
                        clip_high=grpo.clip_high,
                        loss_agg=grpo.loss_agg,
                        ref_logprobs=batch.get("ref_logprobs"),
                        kl_coef=grpo.kl_coef,
                        entropy=entropy,
                        entropy_coef=grpo.entropy_coef,
                        clip_ratio_c=grpo.clip_ratio_c,
                    )
                    # Micro-batch losses are means over their own tokens (or sequences); weighting
                    # by their share makes the accumulated gradient that of the whole mini-batch.
                    share = (
                        float(batch["mask"].sum()) / max(tokens, 1.0)
                        if grpo.loss_agg == "token-mean"
                        else float((batch["mask"].sum(-1) > 0).sum()) / max(sequences, 1.0)
                    )
                    (loss * share).backward()
                    for name, value in batch_stats.items():
                        step_stats[name] = step_stats.get(name, 0.0) + value * share
                norm = torch.nn.utils.clip_grad_norm_(
                    self.model.parameters(), self.config.optim.grad_clip or float("inf")
                )
                grad_norms.append(float(norm))
                self.optimizer.step()
                for name, value in step_stats.items():
                    stats.setdefault(name, []).append(value)
        self.scheduler.step()
        self.model.eval()
        result = {f"actor/{name}": sum(values) / len(values) for name, values in stats.items()}
        result["actor/grad_norm"] = sum(grad_norms) / len(grad_norms)
        result["actor/lr"] = self.optimizer.param_groups[0]["lr"]
        result["actor/trained_tokens"] = sum(float(b["mask"].sum()) for mini_batch in mini_batches for b in mini_batch)
        return result

    # -- the loop -------------------------------------------------------------------------------

    def train_step(self, *, last: bool = False) -> StepResult:
        """One step. With async_rollouts its rollout was started in the background during the previous
        step (or is collected now, on-policy, if none was), and unless this is the `last` step the next
        one's starts before the update (trainer.async_rollout gives the timeline)."""
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

    def call_metrics(self, groups: list[Group], prefix: str = "") -> dict[str, float]:
        """JSON calls against the ground-truth calls (trainer.call_metrics), for runs whose calls are JSON:
        over all `groups` under `prefix`, and per subset as the other subset metrics are named
        (``train/<label>/calls/…``, ``val/<label>/calls/…``)."""
        name = self.config.tools.protocol
        if name not in JSON_CALL_PROTOCOLS:
            return {}
        protocol = self.protocol

        def texts(members: list[Group]) -> Iterator[tuple[Any, list[str]]]:
            return (
                (
                    g.example.ground_truth,
                    [
                        protocol.model_text(s.completion.text, tool_outputs=len(s.completion.executions))
                        for s in g.scored
                    ],
                )
                for g in members
            )

        def call_metrics_of(members: list[Group], prefix: str) -> dict[str, float]:
            return call_metrics(texts(members), prefix=prefix, protocol=name)

        metrics = call_metrics_of(groups, prefix)
        by_label: dict[str, list[Group]] = {}
        for group in groups:
            if (label := subset_label(group.example)) is not None:
                by_label.setdefault(label, []).append(group)
        for label in sorted(by_label):
            metrics.update(call_metrics_of(by_label[label], f"{prefix or 'train/'}{label}/"))
        return metrics

    def evaluate(self, step: int) -> dict[str, float]:
        """Greedy accuracy, and pass@k from k samples per prompt, on the validation split."""
        if not self.val_data:
            return {}
        examples = list(enumerate(self.val_data))
        greedy, _ = self.roll(examples, group_size=1, seed=step, greedy=True)
        self.score(greedy, step, VAL_SPLIT)
        metrics = validation_metrics([g.scored for g in greedy], k=1)
        metrics.update(
            subset_metrics([g.scored for g in greedy], [subset_label(g.example) for g in greedy], prefix="val/")
        )
        metrics.update(self.call_metrics(greedy, prefix="val/"))
        k = self.config.schedule.eval_pass_k
        if k > 1:
            sampled, _ = self.roll(examples, group_size=k, seed=step)
            self.score(sampled, step, VAL_SPLIT)
            pass_k = validation_metrics([g.scored for g in sampled], k=k)
            metrics[f"val/pass@{k}"] = pass_k[f"val/pass@{k}"]
        return metrics

    def checkpoint(self) -> Path:
        if self.pipeline is not None:
            # The rollout in flight scores into reward_state: let it finish rather than save it half-written.
            self.pipeline.wait()
        return save_checkpoint(
            self.out_dir / "checkpoints" / f"step-{self.step}",
            model=self.model,
            tokenizer=self.tokenizer,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            step=self.step,
            reward_state=self.reward_state.to_dict(),
            config=self.config.model_dump(mode="json"),
        )

    def resume(self, path: Path) -> None:
        """Continue from a checkpoint; no rollout is in flight after it, so the next step is on-policy."""
        if self.pipeline is not None:
            self.pipeline.drop()
        state = load_checkpoint(path, model=self.model, optimizer=self.optimizer, scheduler=self.scheduler)
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
        mini_batches = self.prepare(groups, self.behaviour.model) if groups else []
        return Collected(groups, metrics, mini_batches, self.behaviour.version)

    def _threads(self) -> contextlib.AbstractContextManager[None]:
        """The update's intra-op threads: with async_rollouts on CPU, this thread's share of the cores
        (trainer.async_rollout.cpu_split); else the tiny models' one thread, as they generate and
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


def trajectory_report(
    group: Group,
    position: int,
    trajectory: Trajectory,
    reward: RewardResult,
    sample: int,
    step: int,
    protocol,
    prompt: Prompt | None = None,
) -> TrajectoryIn:
    """One trajectory as the dashboard stores it: its turns, with each tool output's status and duration.

    ``prompt`` is what the model was conditioned on (the template applied; a raw template's text is
    sent as text); without it, the dataset row's messages. The final answer is the one the reward
    scored when the reward says which (``details["answer"]``: ToRL's reads the whole response, tool
    output included), else the protocol's reading of the model's own text.

    Built as the contract's model, so a trajectory the dashboard would refuse fails here, where it is made."""
    completion = trajectory.completion
    executions = list(completion.executions)
    turns, calls = [], iter(executions)
    for segment in protocol.segments(completion.text, tool_outputs=len(executions)):
        execution = next(calls, None) if segment.kind == "tool" else None
        if execution is None:
            turns.append(TurnIn(kind=segment.kind, text=segment.text))
        else:
            turns.append(
                TurnIn(
                    kind="tool",
                    text=segment.text,
                    call=execution.call,
                    status=execution.status,
                    duration_ms=float(execution.duration_ms),
                )
            )
    return TrajectoryIn(
        step=step,
        # The group's place in the step (the ingest key), not its dataset row: resampled draws can
        # repeat a row within one step.
        prompt_index=position,
        sample_index=sample,
        prompt=prompt.text
        if prompt is not None and prompt.text is not None
        # Role and content only: a dataset's messages may carry more (names, tool calls).
        else [
            ChatMessage(role=m["role"], content=m["content"])
            for m in (prompt.messages if prompt is not None and prompt.messages is not None else group.example.prompt)
        ],
        turns=turns,
        final_answer=_scored_answer(reward)
        or protocol.final_answer(completion.text, tool_outputs=len(executions))
        or "",
        ground_truth=jsonable(group.example.ground_truth),
        reward=float(reward.total),
        reward_components={key: float(value) for key, value in reward.components.items()},
        correct=bool(reward.correct),
        tool_call_count=len(executions),
        truncated=completion.truncated,
        prompt_tokens=len(trajectory.prompt_ids),
        response_tokens=completion.response_tokens,
    )


def _scored_answer(reward: RewardResult) -> str | None:
    answer = reward.details.get("answer") if isinstance(reward.details, dict) else None
    return answer if isinstance(answer, str) and answer else None


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
        while trainer.step < last:
            result = trainer.train_step(last=trainer.step + 1 >= last)
            metrics = dict(result.metrics)
            if schedule.eval_every and trainer.step % schedule.eval_every == 0:
                metrics.update(trainer.evaluate(result.step))
            reporter.log_metrics(result.step, metrics)
            per_step_s = (time.perf_counter() - started) / (trainer.step - first)
            reporter.set_phase(RL, trainer.step, last, eta_s=per_step_s * (last - trainer.step))
            reported = result.groups[: config.rollout.trajectories_to_report]
            reporter.log_trajectories(
                [
                    trajectory_report(
                        group, position, t, r, sample, result.step, trainer.protocol, trainer.prompt(group.example)
                    )
                    for position, group in enumerate(reported)
                    for sample, (t, r) in enumerate(zip(group.trajectories, group.rewards, strict=True))
                ],
            )
            if schedule.checkpoint_every and trainer.step % schedule.checkpoint_every == 0:
                reporter.log(f"checkpoint saved to {trainer.checkpoint()}")
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
