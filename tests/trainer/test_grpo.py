import math

import pytest
import torch

from trainer.grpo import group_advantages, k3_kl, policy_loss, response_logprobs
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


# --- response log-probs ---


def _scored(model, tokenizer, prompt: str, responses: list[str], *, pad_prompt: int = 0, temperature: float = 1.0):
    """response_logprobs of `responses` to one prompt (left-padded by `pad_prompt` columns)."""
    ids = tokenizer.encode(prompt)
    encoded = [tokenizer.encode(r) for r in responses]
    width = max(len(r) for r in encoded)
    return response_logprobs(
        model,
        torch.tensor([[tokenizer.pad_token_id] * pad_prompt + ids]),
        torch.tensor([[0] * pad_prompt + [1] * len(ids)]),
        torch.zeros(len(responses), dtype=torch.long),
        torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in encoded]),
        torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in encoded]),
        temperature=temperature,
    )


def test_response_logprobs_match_log_softmax_of_the_whole_sequence_and_ignore_padding() -> None:
    model, tokenizer = build_tiny_model(seed=0)
    prompt, response = "1 + 2 =", " 3"
    ids = torch.tensor([tokenizer.encode(prompt + response)])
    logprobs, entropy = _scored(model, tokenizer, prompt, [response, response + " and more"])
    with torch.no_grad():
        full = torch.log_softmax(model(ids).logits[0, :-1], dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
    assert logprobs.shape == entropy.shape == (2, len(" 3 and more"))
    torch.testing.assert_close(logprobs[0, :2], full[-2:], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(logprobs[1, :2], full[-2:], rtol=1e-4, atol=1e-5)
    assert (entropy[0, :2] > 0).all() and (entropy[0, :2] <= math.log(tokenizer.vocab_size) + 1e-4).all()

    padded, _ = _scored(model, tokenizer, prompt, [response], pad_prompt=3)
    torch.testing.assert_close(padded, logprobs[:1, :2], rtol=1e-4, atol=1e-5)

    hot, _ = _scored(model, tokenizer, prompt, [response], temperature=2.0)
    assert not torch.allclose(hot, logprobs[:1, :2])


def test_responses_sharing_a_prompt_score_and_train_as_whole_rows_do() -> None:
    """Two groups of two responses, each group's prompt encoded once, against each [prompt | response]
    row scored whole with the model's own causal forward pass: the same log-probs and gradients."""
    model, tokenizer = build_tiny_model(seed=0)
    prompts = [tokenizer.encode("What is 7 * 8?"), tokenizer.encode("12 + 9")]
    responses = [tokenizer.encode(r) for r in (" 56", " \\boxed{56}", " 21!", " 2")]
    prompt_of = [0, 0, 1, 1]
    width, prompt_width = max(len(r) for r in responses), max(len(p) for p in prompts)
    advantages = torch.tensor([1.0, -1.0, 0.5, 2.0])
    logprobs, _ = response_logprobs(
        model,
        torch.tensor([[0] * (prompt_width - len(p)) + p for p in prompts]),
        torch.tensor([[0] * (prompt_width - len(p)) + [1] * len(p) for p in prompts]),
        torch.tensor(prompt_of),
        torch.tensor([r + [0] * (width - len(r)) for r in responses]),
        torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in responses]),
    )
    shared = sum(a * logprobs[i, : len(r)].sum() for i, (a, r) in enumerate(zip(advantages, responses, strict=True)))
    shared.backward()
    shared_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    whole = 0.0
    for i, response in enumerate(responses):
        prompt = prompts[prompt_of[i]]
        ids = torch.tensor([prompt + response])
        row = torch.log_softmax(model(ids).logits[0, len(prompt) - 1 : -1], dim=-1)
        expected = row.gather(-1, ids[0, len(prompt) :, None])[:, 0]
        torch.testing.assert_close(logprobs[i, : len(response)], expected.detach(), rtol=1e-4, atol=1e-5)
        whole = whole + advantages[i] * expected.sum()
    whole.backward()
    for got, want in zip(shared_grads, (p.grad for p in model.parameters()), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-6)
