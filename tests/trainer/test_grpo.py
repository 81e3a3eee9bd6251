import math

import pytest
import torch

from trainer.grpo import group_advantages, k3_kl, policy_loss, token_logprobs
from trainer.models import build_tiny_model

CLIP = {"clip_low": 0.2, "clip_high": 0.28}


def _loss(logprobs, old, advantages, mask, loss_agg="token-mean", **kwargs):
    return policy_loss(
        torch.tensor(logprobs),
        torch.tensor(old),
        torch.tensor(advantages),
        torch.tensor(mask),
        loss_agg=loss_agg,
        **{**CLIP, **kwargs},
    )


# --- advantages ---


def test_advantages_scaled_by_the_groups_sample_std() -> None:
    # mean 0.5; sample std sqrt(4 * 0.25 / 3) = 0.57735 -> +-0.5 / 0.57735 = +-0.866025
    advantages = group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), scale_by_std=True)
    assert advantages.tolist() == pytest.approx([0.866025, -0.866025, -0.866025, 0.866025], abs=1e-5)


def test_dr_grpo_advantages_are_only_centred() -> None:
    advantages = group_advantages(torch.tensor([1.0, -1.0, -1.0, -1.0]), scale_by_std=False)
    assert advantages.tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5])


@pytest.mark.parametrize("scale_by_std", [True, False])
def test_a_group_with_equal_rewards_has_zero_advantage(scale_by_std: bool) -> None:
    # A group of one is not zero: verl keeps its raw reward (tests/trainer/test_fidelity_grpo.py).
    assert group_advantages(torch.tensor([0.7, 0.7, 0.7]), scale_by_std=scale_by_std).tolist() == [0.0] * 3


def test_advantages_per_row_and_for_ragged_groups() -> None:
    rows = group_advantages(torch.tensor([[1.0, 0.0], [2.0, 2.0]]), scale_by_std=False)
    assert rows.tolist() == [[0.5, -0.5], [0.0, 0.0]]
    ragged = group_advantages([[3.0, 1.0, 2.0], [5.0, 1.0]], scale_by_std=False)
    assert [group.tolist() for group in ragged] == [[1.0, -1.0, 0.0], [2.0, -2.0]]


# --- PPO clip (DAPO clip-higher) ---


def test_clipping_on_both_sides_for_positive_and_negative_advantages() -> None:
    # ratios 1.5, 0.5, 0.5, 1.5 against advantages +1, +1, -1, -1:
    #   A=+1, r=1.5: max(-1.5, -1.28) = -1.28   (clipped high: no incentive past 1 + 0.28)
    #   A=+1, r=0.5: max(-0.5, -0.8)  = -0.5    (unclipped: pushing a good token back up)
    #   A=-1, r=0.5: max(0.5, 0.8)    =  0.8    (clipped low: no incentive below 1 - 0.2)
    #   A=-1, r=1.5: max(1.5, 1.28)   =  1.5    (unclipped: pushing a bad token back down)
    old = [[0.0, 0.0, 0.0, 0.0]]
    logprobs = torch.tensor([[math.log(1.5), math.log(0.5), math.log(0.5), math.log(1.5)]], requires_grad=True)
    loss, stats = policy_loss(
        logprobs,
        torch.tensor(old),
        torch.tensor([[1.0, 1.0, -1.0, -1.0]]),
        torch.ones(1, 4),
        loss_agg="token-mean",
        **CLIP,
    )
    assert loss.item() == pytest.approx((-1.28 - 0.5 + 0.8 + 1.5) / 4)
    assert stats["clip_ratio/high"] == pytest.approx(0.25)
    assert stats["clip_ratio/low"] == pytest.approx(0.25)
    loss.backward()
    # Clipped tokens give no gradient; unclipped ones give -A * ratio / 4.
    assert logprobs.grad[0].tolist() == pytest.approx([0.0, -0.5 / 4, 0.0, 1.5 / 4])


def test_ratio_inside_the_clip_range_is_plain_policy_gradient() -> None:
    loss, stats = _loss([[math.log(1.1)]], [[0.0]], [[2.0]], [[1.0]])
    assert loss.item() == pytest.approx(-2.2)
    assert stats["clip_ratio/low"] == stats["clip_ratio/high"] == 0.0
    assert stats["approx_kl"] == pytest.approx(1 / 1.1 + math.log(1.1) - 1)


# --- masking and aggregation ---


def test_masked_tokens_contribute_nothing() -> None:
    # The middle token is tool output: any log-prob or advantage there must not move the loss.
    mask = [[1.0, 0.0, 1.0]]
    base, _ = _loss([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]], [[1.0, 1.0, 3.0]], mask)
    wild, _ = _loss([[0.0, 5.0, 0.0]], [[0.0, -7.0, 0.0]], [[1.0, -100.0, 3.0]], mask)
    assert base.item() == wild.item() == pytest.approx(-2.0)
    logprobs = torch.zeros(1, 3, requires_grad=True)
    loss, _ = policy_loss(
        logprobs, torch.zeros(1, 3), torch.tensor([2.0]), torch.tensor(mask), loss_agg="token-mean", **CLIP
    )
    loss.backward()
    assert logprobs.grad[0, 1].item() == 0.0


@pytest.mark.parametrize(
    ("loss_agg", "expected"),
    [
        ("token-mean", (1 + 2 + 4) / 3),
        ("seq-mean-token-mean", ((1 + 2) / 2 + 4) / 2),
        ("seq-mean-token-sum", ((1 + 2) + 4) / 2),
    ],
)
def test_each_aggregation(loss_agg: str, expected: float) -> None:
    # With logprobs == old the ratio is 1 and each token's loss is -A: per-token losses
    # [1, 2, (3 masked)], [4, (0), (0)], and a third sequence with no trainable token at all.
    advantages = [[-1.0, -2.0, -3.0], [-4.0, 0.0, 0.0], [-9.0, -9.0, -9.0]]
    mask = [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    zeros = [[0.0] * 3] * 3
    loss, _ = _loss(zeros, zeros, advantages, mask, loss_agg=loss_agg)
    assert loss.item() == pytest.approx(expected)


def test_unknown_aggregation_is_refused() -> None:
    with pytest.raises(ValueError, match="loss_agg"):
        _loss([[0.0]], [[0.0]], [1.0], [[1.0]], loss_agg="sum")


# --- KL and entropy ---


def test_k3_value_and_kl_penalty() -> None:
    # p = 0.5, p_ref = 0.25: ref - logp = log 0.5, k3 = 0.5 - log 0.5 - 1 = 0.193147
    logp, ref = math.log(0.5), math.log(0.25)
    assert k3_kl(torch.tensor(logp), torch.tensor(ref)).item() == pytest.approx(0.193147, abs=1e-6)
    loss, stats = _loss([[logp]], [[logp]], [0.0], [[1.0]], ref_logprobs=torch.tensor([[ref]]), kl_coef=0.1)
    assert loss.item() == pytest.approx(0.0193147, abs=1e-7)
    assert stats["kl"] == pytest.approx(0.193147, abs=1e-6)
    assert k3_kl(torch.tensor(ref), torch.tensor(ref)).item() == 0.0


def test_kl_is_off_without_a_coefficient_and_needs_a_reference_with_one() -> None:
    loss, stats = _loss([[0.0]], [[0.0]], [1.0], [[1.0]])
    assert loss.item() == -1.0 and "kl" not in stats
    with pytest.raises(ValueError, match="ref_logprobs"):
        _loss([[0.0]], [[0.0]], [1.0], [[1.0]], kl_coef=0.1)


def test_entropy_bonus_and_stat() -> None:
    entropy = torch.tensor([[2.0, 9.0]])
    loss, stats = _loss([[0.0, 0.0]], [[0.0, 0.0]], [0.0], [[1.0, 0.0]], entropy=entropy, entropy_coef=0.01)
    assert loss.item() == pytest.approx(-0.02)
    assert stats["entropy"] == pytest.approx(2.0)


# --- token log-probs ---


def test_token_logprobs_match_log_softmax_and_ignore_left_padding() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    ids = tokenizer.encode("1 + 2 = 3")
    input_ids = torch.tensor([ids])
    logprobs, entropy = token_logprobs(model, input_ids, torch.ones_like(input_ids))
    with torch.no_grad():
        expected = torch.log_softmax(model(input_ids).logits[0, :-1], dim=-1).gather(-1, input_ids[0, 1:, None])
    assert logprobs.shape == entropy.shape == input_ids.shape
    assert logprobs[0, 0].item() == 0.0
    torch.testing.assert_close(logprobs[0, 1:], expected[:, 0], rtol=1e-4, atol=1e-5)
    assert (entropy[0, 1:] > 0).all() and (entropy[0, 1:] <= math.log(tokenizer.vocab_size) + 1e-4).all()

    padded = torch.tensor([[tokenizer.pad_token_id] * 3 + ids])
    attention = torch.tensor([[0] * 3 + [1] * len(ids)])
    padded_logprobs, _ = token_logprobs(model, padded, attention)
    torch.testing.assert_close(padded_logprobs[0, 4:], logprobs[0, 1:], rtol=1e-4, atol=1e-5)

    hot, _ = token_logprobs(model, input_ids, torch.ones_like(input_ids), temperature=2.0)
    assert not torch.allclose(hot, logprobs)


def test_token_logprobs_scored_from_a_column_equal_the_full_scoring_there_and_zero_before() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    ids = tokenizer.encode("What is 7 * 8? \\boxed{56}")
    input_ids = torch.tensor([ids, ids[::-1]])
    attention = torch.ones_like(input_ids)
    full, full_entropy = token_logprobs(model, input_ids, attention)
    part, part_entropy = token_logprobs(model, input_ids, attention, scored_from=10)
    assert part.shape == full.shape
    assert (part[:, :10] == 0).all() and (part_entropy[:, :10] == 0).all()
    torch.testing.assert_close(part[:, 10:], full[:, 10:], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(part_entropy[:, 10:], full_entropy[:, 10:], rtol=1e-4, atol=1e-5)
