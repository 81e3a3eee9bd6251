"""The GRPO loss, term by term, for checking against the equations.

For a group of G responses to one prompt with rewards r_1..r_G:

    A_i = (r_i - mean(r)) / (std(r) + eps)      scale_by_std (GRPO; std with Bessel's correction, as verl)
    A_i =  r_i - mean(r)                        otherwise (Dr. GRPO)

with eps = 1e-6. A group of one response takes mean 0 and std 1, as verl does, so its advantage is
r / (1 + eps) (or r). Every trainable token t of response i gets A_i. With the importance ratio
rho_t = exp(logp_t - old_logp_t) between the policy being trained and the one that sampled:

    P_t = max(-A_t * rho_t, -A_t * clip(rho_t, 1 - clip_low, 1 + clip_high))     (PPO-clip, DAPO clip-higher)
    P_t = min(P_t, -A_t * clip_ratio_c)   where A_t < 0                           (dual clip, when clip_ratio_c is set)
    L_t = P_t + kl_coef * min(exp(d_t) - d_t - 1, 10),  d_t = clip(ref_t - logp_t, -20, 20)   (k3 KL, verl's low_var_kl)
        - entropy_coef * H_t                                                      (entropy bonus)

The KL and entropy terms exist only when their coefficient is > 0. Masked tokens (prompt, tool
output, padding) contribute nothing. The batch loss aggregates L_t over trainable tokens:

    token-mean            sum_{i,t} L / (number of trainable tokens in the batch)
    seq-mean-token-mean   mean_i ( sum_t L_{i,t} / (trainable tokens of i) )
    seq-mean-token-sum    mean_i ( sum_t L_{i,t} )

where the sequence means run over sequences with at least one trainable token.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

LOSS_AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
# exp() of a larger log-ratio overflows float32; verl clamps the policy ratio's log and the k3 KL's at
# the same bound (verl v0.6.1 verl/trainer/ppo/core_algos.py:940 and :1464 @d62da49).
_MAX_LOG_RATIO = 20.0
# verl's low_var_kl clamps the k3 estimate to [-10, 10] (GAIR-NLP/ToRL verl/trainer/ppo/core_algos.py:377
# @cb78cf1; qiancheng0/ToolRL verl/trainer/ppo/core_algos.py:268 @8cee13e; NVlabs/Tool-N1
# verl/verl/trainer/ppo/core_algos.py:377 @f9b4849; verl v0.6.1 core_algos.py:1467 @d62da49). k3 >= 0, so
# only the upper bound can bind: beyond it the KL term is constant and gives no gradient.
_MAX_K3 = 10.0


def _group_advantage(rewards: torch.Tensor, scale_by_std: bool, eps: float) -> torch.Tensor:
    rewards = rewards.float()
    if rewards.numel() < 2:
        # verl's compute_grpo_outcome_advantage gives a group of one mean 0 and std 1, so its
        # advantage is the raw reward / (1 + eps) (GAIR-NLP/ToRL verl/trainer/ppo/core_algos.py:142-144
        # @cb78cf1; verl v0.6.1 core_algos.py:312-314, 322-325 @d62da49).
        return rewards / (1.0 + eps) if scale_by_std else rewards.clone()
    centred = rewards - rewards.mean()
    # torch.std is Bessel-corrected, as verl's (ToRL core_algos.py:147 @cb78cf1).
    return centred / (rewards.std() + eps) if scale_by_std else centred


def group_advantages(
    rewards: torch.Tensor | Sequence[Sequence[float] | torch.Tensor],
    *,
    scale_by_std: bool,
    eps: float = 1e-6,  # verl's epsilon (ToRL verl/trainer/ppo/core_algos.py:114 @cb78cf1)
) -> torch.Tensor | list[torch.Tensor]:
    """Group-relative advantages: a 1-D tensor is one group, a 2-D tensor one group per row, and a
    list holds groups of any sizes (dynamic filtering can leave groups of different G)."""
    if isinstance(rewards, torch.Tensor):
        if rewards.dim() == 1:
            return _group_advantage(rewards, scale_by_std, eps)
        if rewards.dim() == 2:
            return torch.stack([_group_advantage(row, scale_by_std, eps) for row in rewards])
        raise ValueError(f"rewards must be 1-D or 2-D, got shape {tuple(rewards.shape)}")
    return [_group_advantage(torch.as_tensor(group, dtype=torch.float32), scale_by_std, eps) for group in rewards]


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference), as verl's `low_var_kl`:
    exp(d) - d - 1 with d = ref - logp clamped to [-20, 20], the result clamped to at most 10."""
    delta = (ref_logprobs - logprobs).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    return (torch.exp(delta) - delta - 1).clamp(max=_MAX_K3)


def aggregate(values: torch.Tensor, mask: torch.Tensor, loss_agg: str) -> torch.Tensor:
    """Reduce per-token `values` [B, T] over the tokens where `mask` is 1, as `loss_agg` says."""
    mask = mask.to(values.dtype)
    per_sequence_tokens = mask.sum(dim=-1)
    per_sequence_sum = (values * mask).sum(dim=-1)
    if loss_agg == "token-mean":
        return per_sequence_sum.sum() / per_sequence_tokens.sum().clamp(min=1.0)
    has_tokens = per_sequence_tokens > 0
    sequences = has_tokens.sum().clamp(min=1)
    if loss_agg == "seq-mean-token-mean":
        per_sequence = per_sequence_sum / per_sequence_tokens.clamp(min=1.0)
    elif loss_agg == "seq-mean-token-sum":
        per_sequence = per_sequence_sum
    else:
        raise ValueError(f"loss_agg must be one of {', '.join(LOSS_AGGREGATIONS)}, got {loss_agg!r}")
    return (per_sequence * has_tokens).sum() / sequences


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float,
    clip_high: float,
    loss_agg: str,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
    clip_ratio_c: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO loss of the module docstring over [B, T] token tensors.

    `advantages` is per sequence [B] or per token [B, T]; `mask` is 1 on trainable tokens.
    `clip_ratio_c` (> 1) turns on dual clip: a negative-advantage token's loss is at most -A * c.
    Stats (token means over the mask): `clip_ratio/low` (negative-advantage tokens whose ratio fell
    below 1 - clip_low, so they give no gradient), `clip_ratio/high` (positive-advantage tokens above
    1 + clip_high), `clip_ratio/dual` (negative-advantage tokens held at -A * c, when clip_ratio_c is
    set), `approx_kl` (k3 between the sampling policy and the current one), `kl` (k3 to the
    reference, when kl_coef > 0), `entropy` (when given), and `pg_loss`.
    """
    if clip_ratio_c is not None and clip_ratio_c <= 1.0:
        # verl asserts the same (v0.6.1 verl/trainer/ppo/core_algos.py:933-936 @d62da49).
        raise ValueError(f"clip_ratio_c must be > 1, got {clip_ratio_c}")
    mask = mask.to(logprobs.dtype)
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1)
    advantages = advantages.to(logprobs.dtype).expand_as(logprobs)
    log_ratio = (logprobs - old_logprobs).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    pg = torch.maximum(unclipped, clipped)
    if clip_ratio_c is not None:
        # Dual clip as verl computes it: min(-A * c, pg) where A < 0 (verl v0.6.1
        # verl/trainer/ppo/core_algos.py:957-963 @d62da49; absent from the verl that ToRL, ToolRL and
        # Tool-N1 vendor, whose compute_policy_loss is plain PPO-clip: ToRL core_algos.py:272-303 @cb78cf1).
        dual_bound = -advantages * clip_ratio_c
        dual_clipped = (advantages < 0) & (pg > dual_bound)
        pg = torch.where(advantages < 0, torch.minimum(pg, dual_bound), pg)
    per_token = pg
    if kl_coef > 0:
        if ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs")
        kl = k3_kl(logprobs, ref_logprobs)
        per_token = per_token + kl_coef * kl
    if entropy_coef > 0:
        if entropy is None:
            raise ValueError("entropy_coef > 0 needs entropy")
        per_token = per_token - entropy_coef * entropy
    loss = aggregate(per_token, mask, loss_agg)

    with torch.no_grad():
        tokens = mask.sum().clamp(min=1.0)

        def token_mean(values: torch.Tensor) -> float:
            return float((values.to(mask.dtype) * mask).sum() / tokens)

        stats = {
            "clip_ratio/low": token_mean((advantages < 0) & (ratio < 1.0 - clip_low)),
            "clip_ratio/high": token_mean((advantages > 0) & (ratio > 1.0 + clip_high)),
            "approx_kl": token_mean(k3_kl(logprobs, old_logprobs)),
            "pg_loss": float(aggregate(pg, mask, loss_agg)),
        }
        if clip_ratio_c is not None:
            stats["clip_ratio/dual"] = token_mean(dual_clipped)
        if kl_coef > 0:
            stats["kl"] = token_mean(kl)
        if entropy is not None:
            stats["entropy"] = token_mean(entropy)
    return loss, stats


def response_logprobs(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    prompt_of: torch.Tensor,
    response_ids: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each response token under `model` given its prompt and the response before
    it, and the entropy of the distribution it was drawn from, both [B, R] like `response_ids`.

    `prompt_ids` [P, L] are the distinct prompts, left-padded (`prompt_mask` 0 on the padding);
    response i (right-padded, `response_mask` 0 there) continues prompt `prompt_of[i]`. Each prompt
    is encoded once and its keys and values are shared by the responses that continue it, as a GRPO
    group's G responses continue one prompt: the numbers are those of scoring each [prompt | response]
    row whole, for 1/G of the prompt's compute (most of a function-calling mini's, whose prompts are
    three times its responses). Gradients flow into the prompt's pass through its keys and values.

    Logits are divided by the sampling temperature, so the ratio compares the distributions the
    tokens were really sampled from. Position ids follow the attention mask, as in `generate`, so
    padded batches score exactly like the rollout that produced them. The output layer runs on the
    response positions only: over a large vocabulary (49,152 for SmolLM2) it is a large share of a
    small model's forward and backward pass, and prompt tokens are never trained.
    """
    prompt_positions = (prompt_mask.long().cumsum(dim=-1) - 1).clamp(min=0)
    prompt = model(
        input_ids=prompt_ids,
        attention_mask=prompt_mask,
        position_ids=prompt_positions,
        use_cache=True,
        logits_to_keep=1,  # the prompt's last position scores the response's first token
    )
    cache = prompt.past_key_values
    cache.batch_select_indices(prompt_of)
    lengths = prompt_mask.long().sum(dim=-1)[prompt_of]
    positions = lengths[:, None] + torch.arange(response_ids.shape[1], device=response_ids.device)
    response = model(
        input_ids=response_ids,
        attention_mask=torch.cat([prompt_mask[prompt_of], response_mask], dim=1),
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
    )
    logits = torch.cat([prompt.logits[prompt_of], response.logits[:, :-1]], dim=1).float() / temperature
    log_norm = torch.logsumexp(logits, dim=-1)
    chosen = logits.gather(-1, response_ids.unsqueeze(-1)).squeeze(-1) - log_norm
    entropy = log_norm - (torch.softmax(logits, dim=-1) * logits).sum(dim=-1)
    return chosen, entropy
