"""SkyRL-v0's software-engineering setting: the paper's recipe for a GPU (skyrl-v0) and swe-mini on CPU."""

from trainer.config import TINY_SWE_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import QUICKSTART

# SkyRL-v0 at CPU scale: one-file repositories with one injected bug and hidden tests (trainer.data.swe_mini), the
# three tools in their compact spelling (codeact_mini, docs/fidelity.md), SkyRL-v0's binary resolved reward. The
# model is 'tirlab/tiny-char-swe' (trainer.models.tiny.swe): the cold start fine-tuned on 'swe-mini-sft' traces that
# pick among plausible fixes without reading the function's name and are undecided about running the issue's
# example and about finishing. Five turns, as the traces' longer fixes run past them. Prompts run to ~180
# characters and five turns to ~450, inside the tiny model's 1,024 positions.
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
                "max_response_tokens": 640,
            },
            "tools": {"protocol": "codeact_mini", "environment": "swe", "max_tool_calls": 5},
            "reward": {"name": "swe", "params": {}},
        },
    ),
    description="SkyRL-v0 on CPU: edit a one-file repository with bash/editor/finish; resolved = hidden tests pass.",
    with_async=True,
)
