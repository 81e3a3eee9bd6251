"""A real pretrained model on CPU: SmolLM2-135M-Instruct on GSM8K with ToRL's recipe."""

from trainer.presets.base import register_preset
from trainer.presets.common import SMOLLM2_MODEL

# A real pretrained model on CPU: SmolLM2-135M-Instruct (trainer.models.smollm2) on GSM8K with
# ToRL's protocol, reward, learning rate (1e-6) and no KL (as the torl preset below). The batch
# is ours, sized for two CPU cores: 4 prompts x 4 samples, 256 response tokens (ToRL's 2048 would
# mostly be spent on truncated rambling at this size). Prompts get 512 tokens because ToRL's system
# prompt plus a GSM8K question runs to about 200 and truncation keeps only the end.
register_preset(
    "smollm2-gsm8k-cpu",
    {
        "model": {"name_or_path": SMOLLM2_MODEL},
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 512, "max_response_tokens": 256},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1},
        "reward": {"name": "torl", "params": {}},
        "rollout": {"prompts_per_step": 4, "group_size": 4, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"kl_coef": 0.0},
        "schedule": {"max_steps": 20},
    },
    description="SmolLM2-135M-Instruct on GSM8K with ToRL's prompt and reward, 4x4 rollouts on CPU.",
)
