"""ZeroTIR: RL from a base model with no tool-use SFT, at CPU scale (zerotir-mini) and as its README's command."""

from trainer.config import TINY_BASE_MODEL
from trainer.presets.base import register_preset
from trainer.presets.common import PAPER_STEPS

# ZeroTIR at CPU scale: RL straight from a base model, no tool-use SFT. 'tirlab/tiny-char-base'
# (trainer.models.tiny.base) learned arithmetic text and Python notebooks (code, its printed output, the
# result restated) from trainer.models.tiny.base_corpus; asked "What is ...?" it answers in ZeroTIR's
# <think>/<answer>
# format and writes code in about 3% of answers (corpus code_share 0.03: with 0, it never does, and 30
# steps of this preset left its code-call ratio at 0.000 on every step, hard accuracy at most 0.013).
# Everything but the model, data, batch, rate and length is the zerotir preset's: python_markdown with
# 2 code runs and ZeroTIR's output text, its format-gated reward, clip 0.22/0.28 with dual clip 3, no KL,
# no std scaling, the group-accuracy filter 0.05-0.8 and its three sample filters. Ours, for 2 cores:
# 16 x 8 rollouts, lr 2e-4, no resampling of filtered groups, 20 steps (every group is past 0.8 by step
# ~10, so the filter leaves nothing to train on). Measured (bench/quickstart.py --preset zerotir-mini --window 5):
# see the README's ZeroTIR-mini table; with max_tool_calls 0 the same run's hard accuracy stays 0
# (tests/trainer/test_zerotir_mini_learns.py runs both).
register_preset(
    "zerotir-mini",
    {
        "model": {"name_or_path": TINY_BASE_MODEL},
        "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 2, "feedback": "zerotir"},
        "reward": {"name": "zerotir", "params": {}},
        "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0},
        "optim": {"learning_rate": 2e-4},
        "grpo": {"clip_low": 0.22, "clip_high": 0.28, "kl_coef": 0.0, "scale_by_std": False, "clip_ratio_c": 3.0},
        "filtering": {
            "accuracy_min": 0.05,
            "accuracy_max": 0.8,
            "max_resample_batches": 0,
            "drop_truncated_unsolved": True,
            "repeatness_max": 0.2,
            "trigram_repetition_max": 0.6,
            "drop_shortcut": True,
        },
        "schedule": {"max_steps": 20},
    },
    description="ZeroTIR on CPU: RL from a base model, no tool-use SFT; code calls rise from 3% to ~all unaided.",
    with_async=True,
)

# ZeroTIR (arXiv 2505.07773), from yyht/openrlhf_async_pipline @d154c0a: the training command of README.md
# (lines 86-202, the one with these clip and filter values) and, where it is silent, the defaults of
# openrlhf/cli/train_ppo_ray.py ("cli" below). Answer reward gated by the <answer>\boxed{}</answer> format.
register_preset(
    "zerotir",
    {
        "model": {
            # PRETRAIN is a placeholder (README.md:113); the released model is a 7B (README.md:41) and the
            # repository's own run script trains Qwen2.5-7B base (examples/scripts/run_ray_rl.sh:69).
            "name_or_path": "Qwen/Qwen2.5-7B",
            "dtype": "bfloat16",  # --bf16, README.md:172
        },
        "engine": "vllm",  # README.md:144
        "data": {
            # Our default: ZeroTIR trains on ORZ and DAPO-Math problems in its own JSONL (a JSON label per row,
            # examples/scripts/run_ray_rl.sh:71; README.md:214-224), not a format tirlab reads.
            "train_dataset": "gsm8k",
            "max_prompt_tokens": 1024,  # README.md:168
            # README.md:170; tool outputs count against it (env/math/math_tir_process_single_request.py:150).
            "max_response_tokens": 8192,
        },
        "tools": {
            "protocol": "python_markdown",
            # ENV_ITER_NUM=2 (README.md:92): 2 x 2 generation stages, one code run per pair
            # (env/math/math_tir_process_single_request.py:112,144-149,206-233).
            "max_tool_calls": 2,
            # The output as printed, stderr cleaned, replaced by a message past 256 tokens
            # (env/math/math_tir_process_single_request.py:302-313).
            "feedback": "zerotir",
        },
        "reward": {"name": "zerotir", "params": {}},
        "rollout": {
            "prompts_per_step": 128,  # README.md:164
            "group_size": 16,  # N_ROLLOUT, README.md:98,165
            "temperature": 1.0,  # cli:336
            "top_p": 1.0,  # cli:335
            # --async_train with a queue of one batch (README.md:97,150): rollouts run a step ahead of training.
            "async_rollouts": True,
        },
        "optim": {
            "learning_rate": 1e-6,  # README.md:94,175
            # cosine_with_min_lr (openrlhf/trainer/ray/ppo_actor.py:522-528) over 1e8 episodes (README.md:167,
            # openrlhf/trainer/ppo_trainer.py:370-376) never noticeably decays: constant in effect.
            "lr_schedule": "constant",
            "warmup_steps": 0,  # WARMUP=0.0, README.md:93,174
            "grad_clip": 1.0,  # --max_norm, cli:324
            "ppo_epochs": 1,  # README.md:166
            "mini_batch_prompts": 128,  # --train_batch_size 2048 samples / 16 per prompt, README.md:162,165
        },
        "grpo": {
            "clip_low": 0.22,  # --eps_clip_low_high, README.md:153
            "clip_high": 0.28,
            "kl_coef": 0.0,  # KL=0.0, README.md:95,173
            "loss_agg": "token-mean",  # --use_global_token_level_loss, README.md:182
            # reinforce_baseline subtracts the group mean and does not divide by the group's std
            # (openrlhf/trainer/ppo_utils/experience_maker.py:823-827). Deliberate: the script then whitens the
            # advantages over the whole batch's tokens (openrlhf/trainer/ppo_trainer_async.py:571-573), tirlab does not.
            "scale_by_std": False,
            "entropy_coef": 0.0,  # cli:365
            "clip_ratio_c": 3.0,  # --use_dual_policy_loss, README.md:183; its c = 3, openrlhf/models/loss.py:182
        },
        "filtering": {
            # --dynamic_filtering_reward_range (README.md:151-152): a group is kept when its mean answer reward
            # (format-gated correctness, ppo_trainer_async.py:356) is strictly inside (openrlhf/trainer/
            # ppo_trainer_async.py:376-377); with 16 samples no accuracy lands on either bound, so tirlab's
            # inclusive bounds keep the same groups.
            "accuracy_min": 0.05,
            "accuracy_max": 0.8,
            # Our default: the script samples until 128 groups pass (ppo_trainer_async.py:388-390); tirlab bounds it.
            "max_resample_batches": 2,
            # --use_filter_sample (README.md:184) applies exp_filter_fn of env/math/math_tir_filter_fn_utils.py
            # (ppo_trainer_async.py:534-541,578-584) to each sample of the kept groups:
            # truncated and not correct (overlong_filter, :12-16,22),
            "drop_truncated_unsolved": True,
            # no accepted answer and repeatness > 0.2 or repetition_penalty > 0.6 (void_filter, :25),
            "repeatness_max": 0.2,
            "trigram_repetition_max": 0.6,
            # correct, but code blocks, output blocks and executions differ in number (shorcut_filter, :24,26).
            "drop_shortcut": True,
        },
        "schedule": {
            "max_steps": PAPER_STEPS,  # num_episodes 1e8, README.md:167: our step count
            "checkpoint_every": 50,  # --save_steps, README.md:200
        },
    },
    description=(
        "ZeroTIR: Qwen2.5-7B, 2 code runs, format-gated reward, accuracy filter 0.05-0.8, clip 0.22/0.28 (GPU)."
    ),
)
