"""What several presets share: the quickstart's recipe that the CPU minis start from, the function-calling
minis' part, the tiny model's cold start as an SFT phase, and the paper presets' step count. Registers no preset."""

from typing import Any

from trainer.config import TINY_MODEL, merge_overrides

# trainer.models.SMOLLM2_MODEL, spelled out: importing trainer.models loads torch and transformers,
# which the dashboard, reading these presets, does not need (tests/trainer/test_presets.py keeps them equal).
SMOLLM2_MODEL = "smollm2-135m-instruct"

# The tiny model's cold start, as a run's SFT phase: 'tirlab/tiny-char-init' fine-tuned on the 'tiny-cold-start'
# traces with trainer.models.tiny.cold_start.TINY_SFT's budget (1 epoch at lr 3e-3, 32 traces a step) and seed: the
# recipe of the model tirlab ships as 'tirlab/tiny-char' (tests/trainer/test_presets.py keeps them equal). The shipped
# build ran on two torch threads, a run's SFT of the tiny model on one, so their floating point may round apart.
TINY_SFT = {"enabled": True, "dataset": "tiny-cold-start", "epochs": 1, "learning_rate": 3e-3, "batch_size": 32}

# Steps of the paper presets where a script's length cannot be turned into steps: its epochs run over a
# file we cannot count (or, for ZeroTIR, practically forever), so the count is ours; 200 is long enough
# to see the curves the papers show start to bend.
PAPER_STEPS = 200

# ToRL reward from the shipped SFT cold start ('tirlab/tiny-char'), 128 trajectories per step. The
# issue's prototype used lr 3e-5; from one of our earlier cold starts that moved tool use only from
# 0.55 to 0.67 in 20 steps, lr 2e-4 to 0.98. The curve it gives is in docs/presets.md ("quickstart",
# from bench/quickstart.py).
QUICKSTART: dict[str, Any] = {
    "model": {"name_or_path": TINY_MODEL},
    "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
    "tools": {
        "protocol": "python_markdown",
        "max_tool_calls": 1,
        # The shipped cold start learned tirlab's feedback text (trainer.sft.train); ToRL's would be new to it.
        "feedback": "tirlab",
    },
    "reward": {"name": "torl", "params": {}},
    "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0},
    "optim": {"learning_rate": 2e-4},
    "grpo": {"scale_by_std": True},
    "schedule": {"max_steps": 20},
}

# The function-calling minis' shared part: the generated function-calling tasks, their tools listed one
# signature a line (the tiny models' 'tool-signatures' template), calls scored and never executed, as ToolRL
# and Tool-N1 train; 10 steps, which is where the effect is (docs/presets.md, "toolrl-mini and tool-n1-mini": past
# them Tool-N1's binary reward leaves most groups all 0 or all 1 and its exact-match rate falls back).
FC_MINI: dict[str, Any] = merge_overrides(
    QUICKSTART,
    {
        "schedule": {"max_steps": 10},
        "data": {
            "train_dataset": "function-calling",
            "val_dataset": "function-calling",
            "prompt_template": "tool-signatures",
            "max_prompt_tokens": 512,
            "max_response_tokens": 256,
        },
        "tools": {"protocol": "tool_call_json", "max_tool_calls": 1},
    },
)
