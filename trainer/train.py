"""The GRPO training loop: sample prompts, roll out groups with real tool calls, score them, update.

One step:
  1. take `prompts_per_step` examples (a seeded draw per step, so a resumed run sees the same data),
  2. roll out G responses each with the async multi-turn loop (the sandbox runs the model's code),
     in this process or, with rollout.backend 'ray', on Ray actors (trainer.ray_rollout),
  3. score each group with the run's reward, drop groups the filter rejects and refill up to a limit,
  4. compute group-relative advantages and take `ppo_epochs` passes of the clipped policy loss
     (trainer.grpo) over the trainable tokens, one optimizer step per mini-batch of
     `mini_batch_prompts` groups, with gradient clipping,
  5. report the step's metrics and whole groups of trajectories; checkpoint and evaluate on schedule.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from trainer.checkpoint import load_checkpoint, save_checkpoint
from trainer.config import TINY_MODEL, RunConfig
from trainer.contract import ChatMessage, TrajectoryIn, TurnIn
from trainer.data import load_dataset
from trainer.engines.hf import HFEngine
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


def subset_label(example: Example, key: str = METRIC_SUBSET_KEY) -> str | None:
    """The subset an example's metrics are also reported under: its extra_info[key], if any."""
    value = (example.extra_info or {}).get(key)
    return None if value is None else str(value)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


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
    if config.model.name_or_path == TINY_MODEL:
        raise ValueError(
            f"engine 'vllm' cannot load {TINY_MODEL}: vLLM does not know its character tokenizer; use engine 'hf'"
        )
    if config.rollout.backend != "local":
        raise ValueError("engine 'vllm' runs in the trainer's process; use rollout.backend 'local'")


def run_prompt_template(config: RunConfig) -> str | None:
    """The prompt template a run applies: the config's; else the tiny model's own (the one its cold
    start was trained on); else None, the protocol's default."""
    return config.data.prompt_template or (TINY_PROMPT_TEMPLATE if config.model.name_or_path == TINY_MODEL else None)


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
        if vllm_engine is not None:
            self.model.to("cuda")
        # The reference model exists only when the KL term does (k3 estimator in trainer.grpo).
        self.ref_model = copy.deepcopy(self.model).eval() if config.grpo.kl_coef > 0 else None
        # One intra-op thread: the tiny model's small matmuls run slower with two on two cores.
        threads = 1 if config.model.name_or_path == TINY_MODEL else None
        self.engine = vllm_engine or HFEngine(self.model, self.tokenizer, num_threads=threads)
        self.settings = RolloutSettings.from_config(config)
        self.protocol = get_protocol(config.tools.protocol)
        self.template = run_prompt_template(config)
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

    def roll(self, examples: Sequence[tuple[int, Example]], *, group_size: int, seed: int, greedy: bool = False):
        settings = dataclasses.replace(self.settings, temperature=0.0) if greedy else self.settings
        prompts = [self.prompt_ids(example) for _, example in examples for _ in range(group_size)]
        if self.ray_rollout is not None:
            result = self.ray_rollout.rollout(prompts, settings, seed=seed, group_size=group_size)
        else:
            result = rollout(self.engine, prompts, settings, seed=seed)
            self.engine.clear_cache()
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

    def keep(self, group: Group) -> bool:
        """Dynamic filtering: groups without a GRPO signal, or outside the accuracy band, are dropped."""
        rules = self.config.filtering
        totals = [r.total for r in group.rewards]
        if rules.drop_all_same_reward and max(totals) - min(totals) < 1e-9:
            return False
        accuracy = sum(r.correct for r in group.rewards) / len(group.rewards)
        if rules.accuracy_min is not None and accuracy < rules.accuracy_min:
            return False
        return not (rules.accuracy_max is not None and accuracy > rules.accuracy_max)

    def collect(self, step: int) -> tuple[list[Group], dict[str, float]]:
        """Roll out and score a step's groups, refilling filtered-out groups up to the resample limit."""
        wanted, group_size = self.config.rollout.prompts_per_step, self.config.rollout.group_size
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
            )
            timing["timing_s/gen"] += result.gen_s
            timing["timing_s/tool"] += result.tool_s
            timing["timing_s/rollout"] += result.wall_s
            started = time.perf_counter()
            self.score(groups, step)
            timing["reward_s"] += time.perf_counter() - started
            seen += groups
            kept += [g for g in groups if self.keep(g)][:need]
        # Metrics describe everything sampled; the update uses only the kept groups.
        metrics = step_metrics([g.scored for g in seen])
        metrics.update(
            subset_metrics([g.scored for g in seen], [subset_label(g.example) for g in seen], prefix="train/")
        )
        metrics["groups/kept"] = float(len(kept))
        metrics["groups/sampled"] = float(len(seen))
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

    def update(self, groups: list[Group]) -> dict[str, float]:
        """PPO-clip epochs over the kept groups, one optimizer step per mini-batch; returns the loss statistics.

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
        grpo, temperature = self.config.grpo, max(self.config.rollout.temperature, 1e-6)
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
            # Engine 'vllm': the policy lives on the GPU, the batches are built on the CPU.
            for batch in (b for mini_batch in mini_batches for b in mini_batch):
                batch.update({k: v.to(device) for k, v in batch.items() if isinstance(v, torch.Tensor)})

        def logprobs_of(model: torch.nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
            return token_logprobs(
                model,
                batch["input_ids"],
                batch["attention_mask"],
                temperature=temperature,
                scored_from=batch["scored_from"],
            )

        # The sampling policy's log-probs, recomputed with the training forward pass so the ratio
        # starts at exactly 1 (the engine's top-p truncation is not part of the trained distribution).
        with torch.no_grad():
            for batch in (b for mini_batch in mini_batches for b in mini_batch):
                batch["old_logprobs"], _ = logprobs_of(self.model, batch)
                if self.ref_model is not None:
                    batch["ref_logprobs"], _ = logprobs_of(self.ref_model, batch)
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
                    logprobs, entropy = logprobs_of(self.model, batch)
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

    def train_step(self) -> StepResult:
        step = self.step
        started = time.perf_counter()
        groups, metrics = self.collect(step)
        train_started = time.perf_counter()
        if groups:
            metrics.update(self.update(groups))
            if self.ray_rollout is not None or self.config.engine == "vllm":
                sync_started = time.perf_counter()
                self.sync_weights()
                metrics["timing_s/weight_sync"] = time.perf_counter() - sync_started
        metrics["timing_s/train"] = time.perf_counter() - train_started
        metrics["timing_s/step"] = time.perf_counter() - started
        generated = sum(t.completion.response_tokens or 0 for g in groups for t in g.trajectories)
        metrics["perf/tokens_per_s"] = generated / max(metrics["timing_s/gen"], 1e-9)
        self.step += 1
        return StepResult(step=step, metrics=metrics, groups=groups)

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
        k = self.config.schedule.eval_pass_k
        if k > 1:
            sampled, _ = self.roll(examples, group_size=k, seed=step)
            self.score(sampled, step, VAL_SPLIT)
            pass_k = validation_metrics([g.scored for g in sampled], k=k)
            metrics[f"val/pass@{k}"] = pass_k[f"val/pass@{k}"]
        return metrics

    def checkpoint(self) -> Path:
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
        state = load_checkpoint(path, model=self.model, optimizer=self.optimizer, scheduler=self.scheduler)
        self.step = state["step"]
        self.reward_state = RewardState.from_dict(state["reward_state"])
        self.sync_weights()

    def sync_weights(self) -> None:
        """Hand the policy's current weights to the Ray rollout replicas or the vLLM engine (the
        local hf engine shares them)."""
        if self.ray_rollout is not None:
            self.ray_rollout.load_weights(self.model.state_dict())
        if self.config.engine == "vllm":
            self.engine.load_weights(self.model.state_dict().items())

    def close(self) -> None:
        """Stop the Ray actors, and the local Ray instance if the run started one."""
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
    trainer = Trainer(config, reporter=reporter, out_dir=out_dir, model_cache=model_cache, log=log)
    last = max_steps if max_steps is not None else config.schedule.max_steps
    schedule = config.schedule
    try:
        if resume is not None:
            trainer.resume(resume)
            reporter.log(f"resumed from {resume} at step {trainer.step}")
        if on_ready is not None:
            on_ready()  # set up: from here a stop request waits for the step in progress
        started = time.perf_counter()
        while trainer.step < last:
            result = trainer.train_step()
            metrics = dict(result.metrics)
            if schedule.eval_every and trainer.step % schedule.eval_every == 0:
                metrics.update(trainer.evaluate(result.step))
            reporter.log_metrics(result.step, metrics)
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
