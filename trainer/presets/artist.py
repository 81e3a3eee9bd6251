"""ARTIST: multi-turn tool use with code (artist-mini) and with function calls (artist-fc-mini) at CPU
scale, and the paper's setting for a GPU."""

from trainer.config import TINY_ARTIST_FC_MODEL, TINY_ARTIST_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import PAPER_STEPS, QUICKSTART

# ARTIST at CPU scale: multi-turn tool use with ARTIST's protocol and reward (answer 2, format 0.5, share of
# calls that ran), on half hard products (one call needed) and half three-factor chains (two needed); a
# third call is allowed. ARTIST trains instruction-tuned models that can follow its format; ours is
# 'tirlab/tiny-char-artist' (trainer.models.tiny.artist), the shipped cold start fine-tuned on
# 'artist-mini-sft' (trainer.sft.traces.artist: one multiplication per <python> call, undecided how many calls
# to make; 3 epochs of 16,000 -- with 4,000 the second call's copy of the first output was usually a digit
# off and chain accuracy stayed near 0.04). Measured (bench/quickstart.py --preset artist-mini --window 5),
# means of steps 0-4 -> 15-19: calls per response on hard products 0.72 -> 1.12, on chains 1.08 -> 1.91;
# chain accuracy 0.36 -> 0.77, hard accuracy 0.69 -> 0.96, accuracy 0.53 -> 0.85.
register_preset(
    "artist-mini",
    merge_overrides(
        QUICKSTART,
        {
            "model": {"name_or_path": TINY_ARTIST_MODEL},
            "data": {"train_dataset": "arithmetic:multi", "val_dataset": "arithmetic:multi"},
            "tools": {"protocol": "artist", "max_tool_calls": 3, "feedback": "tirlab"},
            "reward": {"name": "artist", "params": {}},
        },
    ),
    description="ARTIST on CPU: multi-turn <python>/<output> calls; RL finds 1 call for a product, 2 for a chain.",
    with_async=True,
)

# ARTIST's function calling at CPU scale: multi-turn, the calls run (the function_calling environment
# executes each <tool> block's JSON calls in the sandbox and feeds the results back in <tool_result>),
# ARTIST's state + function + format reward, on the tool-chain tasks (trainer.data.tool_chains): book a flight by
# its number, or look the next flight up and book the number the lookup returns. ARTIST trains
# instruction-tuned models that can follow its format; ours is 'tirlab/tiny-char-artist-fc'
# (trainer.models.tiny.function_calling), the JSON-call model fine-tuned on tool chains in ARTIST's syntax,
# undecided on
# purpose about looking the flight up (it books some chains at once, with a number of its own, and stops
# after the lookup on others). Prompts run to 303 tokens and responses, the tool results included, to
# about 520, inside the tiny model's 1,024 positions. 8 prompts a step: at 16 the chains learned as they
# do at 8 (seed 0: chain accuracy 0.23 -> 0.72 by step 7 against 0.22 -> 0.72) at twice the step time.
register_preset(
    "artist-fc-mini",
    merge_overrides(
        QUICKSTART,
        {
            "rollout": {"prompts_per_step": 8},
            "model": {"name_or_path": TINY_ARTIST_FC_MODEL},
            "data": {
                "train_dataset": "tool-chains",
                "val_dataset": "tool-chains",
                "prompt_template": "tool-signatures",
                "max_prompt_tokens": 320,
                "max_response_tokens": 640,
            },
            "tools": {"protocol": "artist_fc", "environment": "function_calling", "max_tool_calls": 3},
            "reward": {"name": "artist_fc", "params": {}},
            "schedule": {"max_steps": 10},
        },
    ),
    description="ARTIST's function calling on CPU: calls run, results fed back; look-up-then-book chains rise.",
    with_async=True,
)

# ARTIST (arXiv 2505.01441): multi-turn <think>/tool/<output>/<answer> with answer + format + tool-success
# reward (ARCHITECTURE.md; the reward's constants are fixed in trainer.rewards.artist). We found no released
# ARTIST code or training script, so every value below but the protocol and reward is ours: ToRL's
# learning rate, batch and sampling, tirlab's default clip and KL, a budget of 4 calls.
register_preset(
    "artist",
    {
        "model": {"name_or_path": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        # No ARTIST code to follow for the text after a call: tirlab's (it names what happened).
        "tools": {"protocol": "artist", "max_tool_calls": 4, "feedback": "tirlab"},
        "reward": {"name": "artist", "params": {}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "schedule": {"max_steps": PAPER_STEPS},
    },
    description="ARTIST: multi-turn tool use, answer + format + tool-success reward; no released script (GPU).",
)
