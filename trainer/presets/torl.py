"""ToRL (Li, Zou, Liu 2025): its released script, every value cited."""

from typing import Any

from trainer.presets.base import register_preset
from trainer.presets.common import PAPER_STEPS

# ToRL (Li, Zou, Liu 2025), from GAIR-NLP/ToRL @cb78cf1: scripts/torl_1.5b.sh and, where it is silent,
# the defaults of the verl it vendors (0.2.0.dev), verl/trainer/config/ppo_trainer.yaml ("yaml" below).
# The OTC presets reuse it. Values equal to tirlab's defaults are spelled out too, so that a change of
# default cannot change what a paper preset means.
TORL: dict[str, Any] = {
    "model": {
        "name_or_path": "Qwen/Qwen2.5-Math-1.5B",  # scripts/torl_1.5b.sh:1
        # Deliberate: verl keeps fp32 master weights and computes in bf16 (verl/workers/fsdp_workers.py:168-170,
        # 232); tirlab has one dtype, and bf16 is the one a 7B fits a single GPU with.
        "dtype": "bfloat16",
    },
    "engine": "vllm",  # scripts/torl_1.5b.sh:40
    "data": {
        # ToRL's own data/torl_data/train.parquet (scripts/torl_1.5b.sh:13,20). The repository has no licence,
        # so tirlab does not ship it: download it to this path (data/torl/README.md says the same of the test set).
        "train_dataset": "data/torl/train.parquet",
        "val_dataset": "torl-test",  # data/torl_data/test.parquet, scripts/torl_1.5b.sh:21
        "max_prompt_tokens": 400,  # scripts/torl_1.5b.sh:24
        "max_response_tokens": 3072,  # scripts/torl_1.5b.sh:11,25
        # The raw-text tir_base_0309 prompt, no chat template (scripts/torl_1.5b.sh:26;
        # verl/utils/dataset/rl_dataset.py:33-34,169-178).
        "prompt_template": "torl",
        # Rows longer than max_prompt_tokens - 10 are dropped, not cut (rl_dataset.py:148-149).
        "overlong_prompts": "drop",
    },
    "tools": {
        "protocol": "python_markdown",
        # numcall=1 (scripts/torl_1.5b.sh:12,41): one round stopped at ```output, then one that is not
        # (verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:269-272).
        "max_tool_calls": 1,
        "output_max_chars": 256,  # vllm_rollout_spmd.py:322-323 (first and last 128 characters)
        "sandbox_timeout_s": 10.0,  # the sandbox request's timeout, vllm_rollout_spmd.py:110
        "train_on_tool_output": False,  # tool output is masked out of the loss, verl/workers/actor/dp_actor.py:277
        "feedback": "torl",  # ToRL's text for each sandbox result, vllm_rollout_spmd.py:227-325
    },
    # The torl reward's defaults are ToRL's (execution_error_penalty off, yaml:17).
    "reward": {"name": "torl", "params": {}},
    "rollout": {
        "prompts_per_step": 128,  # scripts/torl_1.5b.sh:2,22
        "group_size": 16,  # scripts/torl_1.5b.sh:3,45
        "temperature": 1.0,  # scripts/torl_1.5b.sh:5,42
        "top_p": 1.0,  # scripts/torl_1.5b.sh:43
        # verl samples a step, then trains on it (verl/trainer/ppo/ray_trainer.py:956,1045).
        "async_rollouts": False,
    },
    "optim": {
        "learning_rate": 1e-6,  # scripts/torl_1.5b.sh:7,28
        "lr_schedule": "constant",  # warmup_style, yaml:47
        "warmup_steps": 0,  # lr_warmup_steps_ratio, yaml:45
        "grad_clip": 1.0,  # yaml:34
        "ppo_epochs": 1,  # yaml:40
        # ppo_mini_batch_size=1024 (scripts/torl_1.5b.sh:6,30) exceeds the 128 prompts of a step, so verl
        # takes the whole batch in one optimizer step.
        "mini_batch_prompts": 128,
    },
    "grpo": {
        # verl's one symmetric clip_ratio (yaml:35): no clip-higher.
        "clip_low": 0.2,
        "clip_high": 0.2,
        # use_kl_loss with kl_loss_coef 0, and kl_ctrl 0 (scripts/torl_1.5b.sh:8-9,32-33,50).
        "kl_coef": 0.0,
        "loss_agg": "token-mean",  # masked mean over tokens, verl/trainer/ppo/core_algos.py:301
        "scale_by_std": True,  # (r - mean) / (std + 1e-6), core_algos.py:146-151
        "entropy_coef": 0.0,  # scripts/torl_1.5b.sh:10,35
        "clip_ratio_c": None,  # the vendored verl has no dual clip (core_algos.py compute_policy_loss)
    },
    "schedule": {
        # total_epochs=300 (scripts/torl_1.5b.sh:4,61) over a train file we cannot count: our step count.
        "max_steps": PAPER_STEPS,
        "eval_every": 4,  # test_freq, scripts/torl_1.5b.sh:57; greedy, as ray_trainer.py:648 validates
        "checkpoint_every": 20,  # save_freq, scripts/torl_1.5b.sh:56
    },
}

# ToRL: every value and its source is in TORL above.
register_preset(
    "torl",
    TORL,
    description="ToRL's script: Qwen2.5-Math-1.5B, ```python tool calls, +1/-1 reward, 128x16, clip 0.2, no KL (GPU).",
)
