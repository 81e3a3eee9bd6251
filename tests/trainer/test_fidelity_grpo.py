"""The GRPO loss and its optimisation as verl computes them (issue 13, items 10 and 12).

Every expected value here is worked out by hand from verl's code as the papers vendor it:
  ToRL     GAIR-NLP/ToRL @cb78cf1          verl 0.2.0.dev
  ToolRL   qiancheng0/ToolRL @8cee13e      verl 0.1
  Tool-N1  NVlabs/Tool-N1 @f9b4849         verl 0.2.0.dev
  ReTool   verl-project/verl-recipe @48ea0a7, retool/REQUIRED_VERL.txt pins verl v0.6.1 (@d62da49)
"""

import math
from pathlib import Path

import pytest
import torch

import trainer.loop.update as update_module
from tests.model_cache import MODEL_CACHE
from trainer.config import ConfigError, validate_config
from trainer.grpo import group_advantages, k3_kl, policy_loss
from trainer.loop.collect import Group
from trainer.loop.train import Trainer
from trainer.rollout.multi_turn import Trajectory
from trainer.trajectory import Completion, Example, RewardResult

CLIP = {"clip_low": 0.2, "clip_high": 0.28}
EPS = 1e-6  # verl's epsilon: ToRL verl/trainer/ppo/core_algos.py:114 @cb78cf1


# --- item 12: the advantage of a group of one -------------------------------------------------------


@pytest.mark.parametrize(("scale_by_std", "expected"), [(True, 0.5 / (1 + EPS)), (False, 0.5)])
def test_a_group_of_one_keeps_its_raw_reward_as_verl_does(scale_by_std: bool, expected: float) -> None:
    # compute_grpo_outcome_advantage gives a lone response mean 0 and std 1 (ToRL
    # verl/trainer/ppo/core_algos.py:142-144 @cb78cf1), so its advantage is (0.5 - 0) / (1 + 1e-6);
    # verl v0.6.1 without norm_adv_by_std_in_grpo subtracts only the mean 0 (core_algos.py:312-325 @d62da49).
    (advantage,) = group_advantages(torch.tensor([0.5]), scale_by_std=scale_by_std).tolist()
    assert advantage == pytest.approx(expected, rel=1e-7, abs=0)  # float32; 0.5 itself is off by 1e-6


def test_a_group_of_one_beside_a_larger_group() -> None:
    # Ragged groups, as dynamic filtering leaves them. [-1]: -1 / (1 + 1e-6). [1, 0]: mean 0.5, Bessel
    # std sqrt(0.5) (torch.std, ToRL core_algos.py:147 @cb78cf1) -> +-0.5 / (0.707107 + 1e-6).
    lone, pair = group_advantages([[-1.0], [1.0, 0.0]], scale_by_std=True)
    assert lone.tolist() == pytest.approx([-1 / (1 + EPS)], rel=1e-7)
    half = 0.5 / (math.sqrt(0.5) + EPS)
    assert pair.tolist() == pytest.approx([half, -half], rel=1e-6)


# --- item 12: the k3 KL clamps of verl's low_var_kl ------------------------------------------------------


def test_k3_kl_is_clamped_at_10_as_verls_low_var_kl() -> None:
    # low_var_kl: kl = ref - logp; kld = exp(kl) - kl - 1; clamp(kld, -10, 10) (ToRL
    # verl/trainer/ppo/core_algos.py:373-377 @cb78cf1; ToolRL core_algos.py:264-268 @8cee13e).
    #   ref - logp = 2: e^2 - 3 = 4.389056 (under the clamp)
    #   ref - logp = 5: e^5 - 6 = 142.41 -> 10
    #   ref - logp = -30: 30 - 1 = 29 -> 10 (v0.6.1 also clamps kl to [-20, 20] first, core_algos.py:1464)
    logp = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    ref = torch.tensor([2.0, 5.0, -30.0])
    kl = k3_kl(logp, ref)
    assert kl.tolist() == pytest.approx([math.exp(2) - 3, 10.0, 10.0], rel=1e-6)
    kl.sum().backward()
    # d/dlogp (exp(ref - logp) - (ref - logp) - 1) = 1 - exp(ref - logp); zero where the clamp holds.
    assert logp.grad.tolist() == pytest.approx([1 - math.exp(2), 0.0, 0.0], rel=1e-6)


def test_the_kl_penalty_of_a_far_reference_is_bounded_by_the_clamp() -> None:
    # A = 0, ratio 1: the loss is only kl_coef * clamp(e^5 - 6, max=10) = 0.1 * 10.
    loss, stats = policy_loss(
        torch.zeros(1, 1),
        torch.zeros(1, 1),
        torch.zeros(1),
        torch.ones(1, 1),
        loss_agg="token-mean",
        ref_logprobs=torch.full((1, 1), 5.0),
        kl_coef=0.1,
        **CLIP,
    )
    assert loss.item() == pytest.approx(1.0)
    assert stats["kl"] == pytest.approx(10.0)


# --- item 12: dual clip --------------------------------------------------------------------------------


def test_dual_clip_bounds_negative_advantage_tokens_at_minus_a_times_c() -> None:
    # verl v0.6.1 compute_policy_loss_vanilla (core_algos.py:944-963 @d62da49), clip 0.2 / 0.28, c = 3:
    #   clip_pg_losses1 = max(-A r, -A clip(r, 0.8, 1.28)); where A < 0: min(-A c, clip_pg_losses1)
    #   A=-1, r=5:   max(5, 1.28) = 5 -> min(3, 5) = 3     (dual clip binds: no gradient)
    #   A=-1, r=2:   max(2, 1.28) = 2 -> min(3, 2) = 2     (unclipped: gradient -A r = 2)
    #   A=+1, r=5:   max(-5, -1.28) = -1.28                (clipped high; dual clip is for A < 0 only)
    #   A=-2, r=0.5: max(1, 1.6) = 1.6 -> min(6, 1.6) = 1.6 (clipped low)
    # token-mean: (3 + 2 - 1.28 + 1.6) / 4 = 1.33; pg_clipfrac_lower (our clip_ratio/dual) = 1/4.
    logprobs = torch.tensor([[math.log(5), math.log(2), math.log(5), math.log(0.5)]], requires_grad=True)
    loss, stats = policy_loss(
        logprobs,
        torch.zeros(1, 4),
        torch.tensor([[-1.0, -1.0, 1.0, -2.0]]),
        torch.ones(1, 4),
        loss_agg="token-mean",
        clip_ratio_c=3.0,
        **CLIP,
    )
    assert loss.item() == pytest.approx(1.33)
    assert stats["clip_ratio/dual"] == pytest.approx(0.25)
    assert stats["clip_ratio/high"] == stats["clip_ratio/low"] == pytest.approx(0.25)
    assert stats["pg_loss"] == pytest.approx(1.33)
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([0.0, 2 / 4, 0.0, 0.0])


def test_dual_clip_cannot_bind_on_policy() -> None:
    # At ratio 1, -A * c > -A for A < 0 whenever c > 1 (verl asserts c > 1, core_algos.py:933 @d62da49):
    # a single mini-batch, single epoch step is unchanged by dual clip.
    advantages = torch.tensor([[-3.0, 2.0, -0.5]])
    args = (torch.zeros(1, 3), torch.zeros(1, 3), advantages, torch.ones(1, 3))
    with_dual, stats = policy_loss(*args, loss_agg="token-mean", clip_ratio_c=3.0, **CLIP)
    without, _ = policy_loss(*args, loss_agg="token-mean", **CLIP)
    assert with_dual.item() == without.item() == pytest.approx((3 - 2 + 0.5) / 3)
    assert stats["clip_ratio/dual"] == 0.0


def test_dual_clip_off_reports_no_dual_stat() -> None:
    _, stats = policy_loss(
        torch.zeros(1, 1), torch.zeros(1, 1), torch.tensor([-1.0]), torch.ones(1, 1), loss_agg="token-mean", **CLIP
    )
    assert "clip_ratio/dual" not in stats


def test_dual_clip_ratio_must_exceed_one() -> None:
    assert validate_config({}).grpo.clip_ratio_c is None
    assert validate_config({"grpo": {"clip_ratio_c": 10.0}}).grpo.clip_ratio_c == 10.0
    with pytest.raises(ConfigError) as caught:
        validate_config({"grpo": {"clip_ratio_c": 1.0}})
    assert "grpo.clip_ratio_c" in caught.value.errors
    with pytest.raises(ValueError, match="clip_ratio_c"):
        policy_loss(
            torch.zeros(1, 1), torch.zeros(1, 1), torch.tensor([-1.0]), torch.ones(1, 1),
            loss_agg="token-mean", clip_ratio_c=0.5, **CLIP,
        )  # fmt: skip


# --- item 10: PPO mini-batches ---------------------------------------------------------------------------


def test_mini_batch_prompts_is_checked_against_the_step() -> None:
    assert validate_config({}).optim.mini_batch_prompts is None
    config = validate_config({"rollout": {"prompts_per_step": 4}, "optim": {"mini_batch_prompts": 4}})
    assert config.optim.mini_batch_prompts == 4
    # verl refuses ppo_mini_batch_size > train_batch_size (v0.6.1 verl/workers/config/actor.py:153 @d62da49).
    for bad in (0, 5):
        with pytest.raises(ConfigError) as caught:
            validate_config({"rollout": {"prompts_per_step": 4}, "optim": {"mini_batch_prompts": bad}})
        assert "optim.mini_batch_prompts" in caught.value.errors


class _Silent:
    stopped_by_dashboard = False

    def log_metrics(self, step, values):
        pass

    def log_trajectories(self, trajectories):
        pass

    def log(self, message, level="info"):
        pass

    def set_phase(self, name, done, total, eta_s=None, detail=""):
        pass


def _trainer(model: Path, out: Path, grpo: dict | None = None, **optim) -> Trainer:
    config = validate_config(
        {
            "model": {"name_or_path": str(model)},
            "data": {"prompt_template": "plain"},
            "rollout": {"prompts_per_step": 4, "group_size": 2, "async_rollouts": False},
            "optim": {"learning_rate": 0.05, **optim},
            "grpo": grpo or {},
        }
    )
    return Trainer(config, reporter=_Silent(), out_dir=out, model_cache=MODEL_CACHE, log=lambda _: None)


def _group(trainer: Trainer, index: int) -> Group:
    """Two responses to one prompt, rewarded +1 and -1: advantages +-0.707 (Bessel std of [1, -1] is sqrt 2)."""
    encode = trainer.tokenizer.encode
    prompt = encode("1 + 2 = ", add_special_tokens=False)
    trajectories = []
    for text in ("3 \\boxed{3}", "7 \\boxed{7}"):
        response = encode(text, add_special_tokens=False)
        trajectories.append(
            Trajectory(
                completion=Completion(text=text),
                prompt_ids=prompt,
                response_ids=response,
                loss_mask=[1] * len(response),
                tool_mask=[0] * len(response),
                logprobs=[0.0] * len(response),
            )
        )
    example = Example(id=str(index), prompt=[{"role": "user", "content": "1 + 2"}], ground_truth="3", data_source="t")
    return Group(
        index=index, example=example, trajectories=trajectories, rewards=[RewardResult(1.0), RewardResult(-1.0)]
    )


def _record(trainer: Trainer, monkeypatch) -> tuple[list[int], list[dict]]:
    """Note the policy_loss calls before each optimizer step, and each call's largest |log ratio| and stats."""
    steps: list[int] = []
    calls: list[dict] = []
    trainer.optimizer.register_step_post_hook(lambda *_: steps.append(len(calls)))

    def recorded_loss(logprobs, old_logprobs, advantages, mask, **kwargs):
        loss, stats = policy_loss(logprobs, old_logprobs, advantages, mask, **kwargs)
        drift = float(((logprobs.detach() - old_logprobs).abs() * mask).max())
        calls.append({"drift": drift, **stats})
        return loss, stats

    monkeypatch.setattr(update_module, "policy_loss", recorded_loss)
    return steps, calls


def test_each_mini_batch_takes_an_optimizer_step_against_the_old_log_probs(random_tiny, tmp_path, monkeypatch):
    # ToolRL's 512 prompts with ppo_mini_batch_size 128 (ToolRL examples/grpo_trainer/run_grpo.sh:5,12 @8cee13e),
    # in small: 2 identical groups, 1 prompt per mini-batch. verl's update_policy (ToRL
    # verl/workers/actor/dp_actor.py:245-327 @cb78cf1) splits the batch in order and steps the optimizer
    # once per mini-batch, all against the old_log_probs computed once before (ray_trainer.py:988-991):
    #   mini-batch 1: on-policy, ratio exactly 1, nothing clipped;
    #   mini-batch 2: the same responses after one Adam step at lr 0.05 that raised the +1 response and
    #   lowered the -1 one: ratio far from 1, and the clip binds.
    trainer = _trainer(random_tiny, tmp_path, mini_batch_prompts=1)
    steps, calls = _record(trainer, monkeypatch)
    lr_steps = trainer.scheduler.last_epoch
    result = trainer.update([_group(trainer, 0), _group(trainer, 1)])
    assert steps == [1, 2]  # one optimizer step after each mini-batch's single micro-batch
    assert trainer.scheduler.last_epoch == lr_steps + 1  # the schedule advances once per RL step
    first, second = calls
    assert first["drift"] == 0.0 and first["clip_ratio/low"] == first["clip_ratio/high"] == 0.0
    assert second["drift"] > 0.5
    assert second["clip_ratio/low"] > 0 and second["clip_ratio/high"] > 0
    # A step's stats are the mean over its optimizer steps, as verl's reduce_metrics (np.mean of the
    # appended list, ToRL verl/trainer/ppo/ray_trainer.py:205-208 @cb78cf1).
    for name in ("pg_loss", "clip_ratio/low", "clip_ratio/high", "approx_kl"):
        assert result[f"actor/{name}"] == pytest.approx((first[name] + second[name]) / 2)
    assert result["actor/trained_tokens"] == 2 * sum(len(t.response_ids) for t in _group(trainer, 0).trajectories)


def test_without_mini_batches_the_whole_step_is_one_optimizer_step(random_tiny, tmp_path, monkeypatch):
    trainer = _trainer(random_tiny, tmp_path)
    steps, calls = _record(trainer, monkeypatch)
    trainer.update([_group(trainer, 0), _group(trainer, 1)])
    assert steps == [1] and calls[0]["drift"] == 0.0


def test_mini_batches_repeat_each_epoch_and_a_short_step_is_split_as_it_is(random_tiny, tmp_path, monkeypatch):
    # prompts_per_step 4, but filtering kept 3 groups: verl's split takes chunks of 2 groups and a last
    # chunk of 1 (DataProto.split, v0.6.1 verl/protocol.py:921 @d62da49), each epoch (dp_actor.py:248-249
    # @cb78cf1): 2 epochs x 2 mini-batches = 4 optimizer steps; the lr schedule still steps once.
    trainer = _trainer(random_tiny, tmp_path, mini_batch_prompts=2, ppo_epochs=2)
    steps, calls = _record(trainer, monkeypatch)
    lr_steps = trainer.scheduler.last_epoch
    trainer.update([_group(trainer, i) for i in range(3)])
    assert steps == [1, 2, 3, 4]
    assert trainer.scheduler.last_epoch == lr_steps + 1
    assert calls[0]["drift"] == 0.0 and all(call["drift"] > 0 for call in calls[1:])


def test_dual_clip_binds_in_an_off_policy_mini_batch_and_is_reported(random_tiny, tmp_path, monkeypatch):
    # The second mini-batch above has negative-advantage tokens whose ratio the first step raised past
    # 3 (characters both responses share): with clip_ratio_c = 3 their loss is held at -A * 3.
    trainer = _trainer(random_tiny, tmp_path, grpo={"clip_ratio_c": 3.0}, mini_batch_prompts=1)
    _, calls = _record(trainer, monkeypatch)
    result = trainer.update([_group(trainer, 0), _group(trainer, 1)])
    first, second = calls
    assert first["clip_ratio/dual"] == 0.0 and second["clip_ratio/dual"] > 0
    assert result["actor/clip_ratio/dual"] == pytest.approx(second["clip_ratio/dual"] / 2)
