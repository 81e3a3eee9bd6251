"""Nemotron-Tool-N1: its binary format-and-exact-match reward, at CPU scale (tool-n1-mini) and as its script."""

from trainer.config import TINY_TOOL_N1_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import FC_MINI, PAPER_STEPS

# Nemotron-Tool-N1 at CPU scale: its binary reward (1 when the format holds and the calls match the ground
# truth as a multiset, else 0) and sampling temperature 0.7 (qwen_rl.sh:35) on toolrl-mini's tasks, from
# 'tirlab/tiny-char-tool-n1': toolrl-mini's start in Tool-N1's layout (one JSON list of {"name",
# "arguments"}, which its reward reads).
register_preset(
    "tool-n1-mini",
    merge_overrides(
        FC_MINI,
        {
            "model": {"name_or_path": TINY_TOOL_N1_MODEL},
            "reward": {"name": "tool_n1", "params": {}},
            "rollout": {"temperature": 0.7},
        },
    ),
    description="Tool-N1's binary reward on CPU: the exact-match rate of JSON calls rises from the cold start.",
    with_async=True,
)

# Nemotron-Research-Tool-N1 (arXiv 2505.00024), from NVlabs/Tool-N1 @f9b4849: qwen_rl.sh, which runs
# verl/examples/agent/qwen.sh ("qwen.sh"), and where they are silent the defaults of the verl it vendors,
# verl/verl/trainer/config/ppo_trainer.yaml ("yaml" below).
register_preset(
    "tool-n1",
    {
        "model": {
            "name_or_path": "Qwen/Qwen2.5-7B-Instruct",  # qwen_rl.sh:20
            "dtype": "bfloat16",  # deliberate, as in TORL: verl's actor keeps fp32 master weights
        },
        "engine": "vllm",  # yaml:81
        "data": {
            # Tool-N1's verl/verl/data/train.parquet and test.parquet (qwen_rl.sh:21, qwen.sh:37-38; xLAM and
            # ToolACE rows, in Git LFS) are not shipped: download them to these paths.
            "train_dataset": "data/tool_n1/train.parquet",
            "val_dataset": "data/tool_n1/test.parquet",
            "max_prompt_tokens": 4096,  # MAX_PROMPT_LEN, qwen_rl.sh:27; qwen.sh:41
            "max_response_tokens": 8192,  # MAX_RES, qwen_rl.sh:34; qwen.sh:42
            "overlong_prompts": "drop",  # verl/verl/utils/dataset/rl_dataset.py:135-137 (no -10 margin)
        },
        # Calls are scored, never executed, as in ToolRL.
        "tools": {"protocol": "tool_call_json", "max_tool_calls": 1},
        "reward": {"name": "tool_n1", "params": {}},
        "rollout": {
            "prompts_per_step": 1024,  # BA_SIZE, qwen_rl.sh:26; qwen.sh:39
            "group_size": 5,  # qwen.sh:34
            "temperature": 0.7,  # qwen_rl.sh:35; qwen.sh:33
            "top_p": 1.0,  # yaml:84
            "async_rollouts": False,  # verl/verl/trainer/ppo/ray_trainer.py:916,1005: sample, then train
        },
        "optim": {
            "learning_rate": 1e-6,  # qwen_rl.sh:32; qwen.sh:24
            "lr_schedule": "constant",  # warmup_style, yaml:60
            "warmup_steps": 0,  # lr_warmup_steps_ratio, yaml:58
            "grad_clip": 1.0,  # yaml:47
            "ppo_epochs": 1,  # yaml:53
            "mini_batch_prompts": 256,  # ppo_mini_batch_size, yaml:42: four optimizer steps per step
        },
        "grpo": {
            # verl's one symmetric clip_ratio (yaml:48); the scripts set none.
            "clip_low": 0.2,
            "clip_high": 0.2,
            # k3 ("low_var_kl") KL loss, 1e-3: qwen_rl.sh:37; qwen.sh:20-21,23.
            "kl_coef": 1e-3,
            "loss_agg": "token-mean",  # verl/verl/trainer/ppo/core_algos.py:301
            "scale_by_std": True,  # core_algos.py:147,151
            "entropy_coef": 0.0,  # ENTROPY, qwen_rl.sh:33; qwen.sh:22
            "clip_ratio_c": None,  # the vendored verl has no dual clip
        },
        "schedule": {
            # total_epochs=7 (qwen_rl.sh:36) over a file we cannot count: our step count.
            "max_steps": PAPER_STEPS,
            "eval_every": 10,  # test_freq, qwen.sh:52; greedy, as ray_trainer.py:645 validates
            "checkpoint_every": 10,  # save_freq, qwen.sh:51
        },
    },
    description="Nemotron-Tool-N1's script: binary format-and-exact-match reward, 1024x5, temperature 0.7 (GPU).",
)
