"""The quickstart: ToRL's protocol and reward on the tiny model from its shipped cold start; the same with its
cold start in the run (quickstart-sft), and one step off-policy as SkyRL runs it (skyrl-async)."""

from trainer.config import TINY_INIT_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import QUICKSTART, TINY_SFT

# The quickstart: ToRL's protocol and reward from the shipped cold start (trainer.presets.common.QUICKSTART).
register_preset(
    "quickstart",
    QUICKSTART,
    description="Tiny char-level model on arithmetic, ToRL reward: learns to call Python on CPU in minutes.",
)

# The same run with its cold start in it: the randomly initialised tiny model is fine-tuned on the
# 'tiny-cold-start' traces first (TINY_SFT: the recipe of the shipped 'tirlab/tiny-char', so the RL part
# is the quickstart's). Minutes of SFT on 2 cores before the first GRPO step; the page shows its progress.
register_preset(
    "quickstart-sft",
    merge_overrides(QUICKSTART, {"model": {"name_or_path": TINY_INIT_MODEL}, "sft": TINY_SFT}),
    description="The quickstart with its cold start in the run: SFT of the tiny model from scratch, then GRPO.",
)

# SkyRL / asynchronous pipeline: what it reproduces is the system, not a recipe. The quickstart, same
# learning rate, with rollout.async_rollouts on: step t+1 is rolled out by a copy of the weights step t
# starts from while step t trains (trainer.rollout.off_policy), one step off-policy; tool execution overlaps
# generation as in every run. bench/async_training.py measures it against the quickstart side by side.
register_preset(
    "skyrl-async",
    merge_overrides(QUICKSTART, {"rollout": {"async_rollouts": True}}),
    description="The quickstart one step off-policy: the next step's rollouts run while this step trains (CPU).",
)
