"""SkyRL-v0's software-engineering setting: the paper's recipe for a GPU (skyrl-v0) and swe-mini on CPU."""

from trainer.config import TINY_SWE_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import QUICKSTART

# SkyRL-v0 at CPU scale: one-file repositories with one injected bug and hidden tests (trainer.data.swe_mini), the
# three tools in their compact spelling (codeact_mini, docs/fidelity.md), SkyRL-v0's binary resolved reward. The
# model is 'tirlab/tiny-char-swe' (trainer.models.tiny.swe): the cold start fine-tuned on 'swe-mini-sft' traces that
# pick among plausible fixes without reading the function's name and are undecided about running the issue's
# reproducer and about finishing (editing again is their likeliest next call). Five turns, as the traces' longer
# fixes run past them. Prompts run to ~150 characters and five edits to ~540, inside the tiny model's 1,024
# positions: 576 response tokens let the cold start's five edits end at the turn limit rather than the context.
register_preset(
    "swe-mini",
    merge_overrides(
        QUICKSTART,
        {
            "model": {"name_or_path": TINY_SWE_MODEL},
            "data": {
                "train_dataset": "swe-mini",
                "val_dataset": "swe-mini",
                "max_prompt_tokens": 200,
                "max_response_tokens": 576,
            },
            "tools": {"protocol": "codeact_mini", "environment": "swe", "max_tool_calls": 5},
            # Pay a fix only when the trajectory finished (docs/fidelity.md, "Preset swe-mini"): with SkyRL-v0's
            # reward alone (measured, 8 steps) the tiny model learned to write until its context was full after an
            # edit -- which keeps whatever fix it made -- and finish fell from 0.36 to 0.04, context-full rose to 0.75.
            "reward": {"name": "swe", "params": {"require_finish": True}},
            # SkyRL-v0 samples at 0.5-0.6; at the quickstart's 1.0 the tiny model's later turns often lose the
            # format (measured: a third of trajectories ran into the turn limit with a garbled call).
            "rollout": {"temperature": 0.6},
            # Twelve steps, where the effect is; the held-out repositories evaluated before the first and after the
            # last, so the run itself shows it (tests/trainer/test_swe_mini_learns.py).
            "schedule": {"max_steps": 12, "eval_every": 12, "eval_before_train": True},
        },
    ),
    description="SkyRL-v0 on CPU: edit a one-file repository with bash/editor/finish; resolved = hidden tests pass.",
    with_async=True,
)

# SkyRL-v0's SkyRL-Agent-8B-v0 (Qwen3-8B, no thinking), from its script, NovaSky-AI/SkyRL @a0d50c4
# examples/sky/run_skyrl_agent_qwen8b_nt.sh ("sh:<line>"); what the script leaves to its verl fork keeps verl's
# default, cited as such. SkyRL-v0 trains on NovaSky-AI/SkyRL-v0-293-data (examples/sky/README.md), SWE-Gym rows whose
# repositories live in their container images: tirlab loads and checks them, and refuses to run them on a machine
# without a container runtime (docs/swe.md). Not expressible here: top_k=20 and repetition_penalty=1.5 (sh:65-66).
register_preset(
    "skyrl-v0",
    {
        "model": {"name_or_path": "Qwen/Qwen3-8B", "dtype": "bfloat16"},  # sh:4; verl trains in bf16
        "engine": "vllm",
        "data": {
            "train_dataset": "data/skyrl_v0/train.parquet",  # DATA_PATH/train.parquet, sh:3,34
            "max_prompt_tokens": 31232,  # sh:37
            "max_response_tokens": 1536,  # sh:38
        },
        "tools": {"protocol": "codeact", "environment": "swe", "max_tool_calls": 25},  # MAX_NUM_ITERS, sh:9,68
        "reward": {"name": "swe", "params": {}},  # reward_model.reward_manager="swebench", sh:75
        "rollout": {
            "prompts_per_step": 32,  # BATCH_SIZE, sh:8,36
            "group_size": 8,  # NUM_TRAJ, sh:10,60
            "temperature": 0.6,  # sh:27,61-62
            "top_p": 0.95,  # sh:28,63-64
            "async_rollouts": False,  # verl's main_ppo (sh:32): sample, then train
        },
        "optim": {
            "learning_rate": 1e-6,  # sh:41
            "lr_schedule": "constant",  # verl's default warmup_style
            "warmup_steps": 0,  # verl's default lr_warmup_steps_ratio 0
            "grad_clip": 1.0,  # verl's default
            "ppo_epochs": 1,  # verl's default
            "mini_batch_prompts": 32,  # ppo_mini_batch_size=$BATCH_SIZE, sh:43: one optimizer step per step
        },
        "grpo": {
            "clip_low": 0.2,  # sh:18,53
            "clip_high": 0.2,  # sh:19,54
            "kl_coef": 1e-3,  # low_var_kl loss, sh:14-16,46-48 (use_kl_in_reward False, sh:76)
            "loss_agg": "token-mean",  # verl's default
            "scale_by_std": True,  # verl's GRPO default
            "entropy_coef": 0.0,  # sh:17,49
        },
        "schedule": {
            # total_epochs=100 (sh:90) over 293 rows in batches of 32 (9 full batches an epoch).
            "max_steps": 900,
            "checkpoint_every": 1,  # SAVE_FREQ, sh:12,86
        },
    },
    description="SkyRL-v0's 8B recipe: CodeAct agent on SWE-Gym, resolved reward, 25 turns, 32x8 (GPU, containers).",
)
