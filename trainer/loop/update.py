"""The GRPO update: a step's kept groups made into padded mini-batches with their advantages and old
log-probs, then `ppo_epochs` passes of the clipped policy loss (trainer.grpo), one optimizer step per
mini-batch of `optim.mini_batch_prompts` groups, with gradient clipping and the learning-rate schedule.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from trainer.config import GRPOConfig, OptimConfig, RunConfig
from trainer.grpo import group_advantages, policy_loss, response_logprobs
from trainer.loop.collect import Group
from trainer.loop.micro_batches import split
from trainer.rollout.multi_turn import Trajectory


def without_dropout(model: torch.nn.Module) -> bool:
    """Whether the model's training forward pass computes what its evaluation pass does: no dropout
    module and no dropout rate in its config."""
    config = getattr(model, "config", None)
    rates = (getattr(config, name, 0.0) or 0.0 for name in DROPOUT_RATES)
    modules = (m for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd))
    return all(rate == 0 for rate in rates) and all(m.p == 0 for m in modules)


# HF config fields of dropout rates applied in the forward pass (Llama/Qwen's attention_dropout,
# GPT-2's *_pdrop, others' plain names).
DROPOUT_RATES = ("attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "attn_pdrop", "embd_pdrop")


def lr_scheduler(
    optimizer: torch.optim.Optimizer, optim: OptimConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    warmup, kind = optim.warmup_steps, optim.lr_schedule

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


class GRPOUpdate:
    """The policy's optimizer, learning-rate schedule and KL reference, and the update they make.

    The reference model exists only when the KL term does (k3 estimator in trainer.grpo)."""

    def __init__(self, model: torch.nn.Module, *, pad_id: int | None, config: RunConfig) -> None:
        self.model = model
        self.pad_id = pad_id if pad_id is not None else 0
        self.grpo: GRPOConfig = config.grpo
        self.optim: OptimConfig = config.optim
        self.temperature = config.rollout.temperature
        self.ref_model = copy.deepcopy(model).eval() if config.grpo.kl_coef > 0 else None
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.optim.learning_rate)
        self.scheduler = lr_scheduler(self.optimizer, config.optim, config.schedule.max_steps)

    def batch(self, items: list[tuple[Trajectory, float]]) -> dict[str, Any]:
        """The distinct prompts, left-padded, and the responses, right-padded, each with the row of
        its prompt (trainer.grpo.response_logprobs): a group's responses share one prompt row."""
        pad = self.pad_id
        rows: dict[tuple[int, ...], int] = {}
        prompt_of = [rows.setdefault(tuple(t.prompt_ids), len(rows)) for t, _ in items]
        prompts = list(rows)
        prompt_width = max(len(p) for p in prompts)
        width = max(len(t.response_ids) for t, _ in items)
        fills = [(t, width - len(t.response_ids)) for t, _ in items]
        return {
            "prompt_ids": torch.tensor([[pad] * (prompt_width - len(p)) + list(p) for p in prompts]),
            "prompt_mask": torch.tensor([[0] * (prompt_width - len(p)) + [1] * len(p) for p in prompts]),
            "prompt_of": torch.tensor(prompt_of),
            "response_ids": torch.tensor([t.response_ids + [pad] * fill for t, fill in fills]),
            "response_mask": torch.tensor([[1] * len(t.response_ids) + [0] * fill for t, fill in fills]),
            "mask": torch.tensor([list(t.loss_mask) + [0] * fill for t, fill in fills], dtype=torch.float32),
            "advantages": torch.tensor([advantage for _, advantage in items], dtype=torch.float32),
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
        grpo = self.grpo
        advantages = group_advantages([[r.total for r in g.rewards] for g in groups], scale_by_std=grpo.scale_by_std)
        # A mini-batch is whole groups, as verl's ppo_mini_batch_size counts prompts times rollout.n
        # (ToRL verl/workers/fsdp_workers.py:119 @cb78cf1); a short step (filtering kept fewer groups)
        # is split as it is, the last mini-batch taking what is left (verl's split, dp_actor.py:245).
        per_mini_batch = self.optim.mini_batch_prompts or len(groups)
        mini_batches = []
        for first in range(0, len(groups), per_mini_batch):
            items = [
                (trajectory, float(advantage))
                for group, group_adv in zip(
                    groups[first : first + per_mini_batch], advantages[first : first + per_mini_batch], strict=True
                )
                for trajectory, advantage in zip(group.trajectories, group_adv.tolist(), strict=True)
            ]
            micro = split(items, lambda item: item[0].prompt_ids, lambda item: item[0].response_ids)
            mini_batches.append([self.batch(batch) for batch in micro])
        device = next(self.model.parameters()).device
        if device.type != "cpu":
            # The policy lives on the GPU, the batches are built on the CPU.
            for batch in (b for mini_batch in mini_batches for b in mini_batch):
                batch.update({k: v.to(device) for k, v in batch.items() if isinstance(v, torch.Tensor)})
        with torch.no_grad():
            for batch in (b for mini_batch in mini_batches[1 if first_from_update else 0 :] for b in mini_batch):
                batch["old_logprobs"], _ = self.logprobs(behaviour, batch)
        return mini_batches

    def logprobs(self, model: torch.nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        return response_logprobs(
            model,
            batch["prompt_ids"],
            batch["prompt_mask"],
            batch["prompt_of"],
            batch["response_ids"],
            batch["response_mask"],
            temperature=max(self.temperature, 1e-6),
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
        grpo = self.grpo
        if mini_batches is None:
            # On-policy, the first mini-batch's first forward pass runs on the weights that sampled it
            # (no optimizer step has been taken yet), so its old log-probs are that pass's, detached:
            # the same numbers as a forward pass of their own, which would cost a tenth of a
            # function-calling mini's step (py-spy). Exact where the training forward is the
            # evaluation one, i.e. without dropout.
            mini_batches = self.prepare(groups, self.model, first_from_update=without_dropout(self.model))
        if self.ref_model is not None:
            with torch.no_grad():
                for batch in (b for mini_batch in mini_batches for b in mini_batch):
                    batch["ref_logprobs"], _ = self.logprobs(self.ref_model, batch)
        stats: dict[str, list[float]] = {}
        grad_norms = []
        self.model.train()
        for _ in range(self.optim.ppo_epochs):
            for mini_batch in mini_batches:
                tokens = sum(float(b["mask"].sum()) for b in mini_batch)
                sequences = sum(float((b["mask"].sum(-1) > 0).sum()) for b in mini_batch)
                step_stats: dict[str, float] = {}
                self.optimizer.zero_grad(set_to_none=True)
                for batch in mini_batch:
                    logprobs, entropy = self.logprobs(self.model, batch)
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
                    self.model.parameters(), self.optim.grad_clip or float("inf")
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
