"""ReTool: SFT cold start then RL, at CPU scale (retool-mini) and as the verl recipe's script."""

from trainer.config import TINY_RETOOL_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import PAPER_STEPS, QUICKSTART

# ReTool at CPU scale: its two stages, a cold start on <code>/<interpreter> traces and then RL with its
# reward and tool text (the recipe's sandbox tool feeds back stdout + stderr; a wrong answer scores -1,
# lifted 0.1 per call). The SFT stage moves the shipped tiny model (trained on ```python calls) to ReTool's
# syntax on the 'retool-mini-sft' traces, which leave it undecided about calling
# (trainer.sft.traces.arithmetic): 3 epochs of 4,000 -- with 2, one seed in two copied no hard answer right
# (seed 1: hard accuracy 0.08 before RL and after), and RL cannot find that skill in 20 steps. That stage
# always trained the same weights (375 steps, ~170 s of every run), so it is done once and shipped:
# 'tirlab/tiny-char-retool' (trainer.models.tiny.retool, bit for bit what this preset's SFT phase trained
# with seed 0), and RL starts from it; `sft.*` still runs the stage in a run (the tiny cold start with
# sft.dataset 'retool-mini-sft', tests/trainer/test_sft_then_rl.py). Measured (bench/quickstart.py --preset
# retool-mini --window 5, seed 0; the same to the last digit at 30baae9, whose run trained the SFT stage
# itself), means of steps 0-4 -> 15-19: hard accuracy 0.22 -> 0.42 (the SFT-only policy calls on 63% of hard
# problems; RL on 96%), accuracy 0.54 -> 0.66, easy tool use 0.67 -> 0.97 (ReTool's turn shaping favours
# calls); docs/presets.md has the table.
register_preset(
    "retool-mini",
    merge_overrides(
        QUICKSTART,
        {
            "model": {"name_or_path": TINY_RETOOL_MODEL},
            "tools": {"protocol": "retool", "max_tool_calls": 1, "feedback": "retool"},
            "reward": {"name": "retool", "params": {"turn_shaping": True}},
        },
    ),
    description="ReTool on CPU: RL from the shipped SFT to <code>/<interpreter> calls lifts hard accuracy over it.",
    with_async=True,
)

# ReTool (arXiv 2504.11536), from verl-project/verl-recipe @48ea0a7: retool/run_qwen2_7b_dapo.sh ("dapo.sh")
# after retool/run_qwen2_7b_sft.sh ("sft.sh"), on verl v0.6.1 (retool/REQUIRED_VERL.txt), whose defaults
# apply where the scripts are silent: volcengine/verl @d62da49 verl/trainer/config/_generated_ppo_trainer.yaml
# ("yaml" below).
register_preset(
    "retool",
    {
        "model": {
            # RL starts from the SFT checkpoint of Qwen2.5-7B-Instruct (dapo.sh:12, sft.sh:18).
            "name_or_path": "Qwen/Qwen2.5-7B-Instruct",
            "dtype": "bfloat16",  # deliberate, as in TORL: verl's actor keeps fp32 master weights
        },
        "engine": "vllm",  # dapo.sh:86
        "data": {
            # DAPO-Math-17k (dapo.sh:9,14; BytedTsinghua-SIA/DAPO-Math-17k on Hugging Face), a verl parquet:
            # download it to this path.
            "train_dataset": "data/retool/dapo-math-17k.parquet",
            "max_prompt_tokens": 2048,  # dapo.sh:37,62
            "max_response_tokens": 16384,  # dapo.sh:38,63
            "overlong_prompts": "drop",  # filter_overlong_prompts=True, dapo.sh:64
        },
        "tools": {
            "protocol": "retool",
            # max_assistant_turns=16 (dapo.sh:36,91): verl's tool agent loop stops at the 16th assistant turn
            # before running its call (verl/experimental/agent_loop/tool_agent_loop.py:226-239 @d62da49): 15 calls.
            "max_tool_calls": 15,
            "output_max_chars": 256,  # max_tool_response_length, yaml:218
            "sandbox_timeout_s": 30.0,  # default_timeout, retool/sandbox_fusion_tool_config.yaml:8
            "sandbox_memory_mb": 1024,  # memory_limit_mb, retool/sandbox_fusion_tool_config.yaml:10
            "train_on_tool_output": False,  # tool responses get mask 0, tool_agent_loop.py:373
            "feedback": "retool",  # the sandbox tool's text, retool/retool.py (stdout + stderr, "no stdout here")
        },
        # The recipe's compute_score lifts a wrong answer by 0.1 per tool call, to at most -0.6
        # (retool/retool.py:88-91).
        "reward": {"name": "retool", "params": {"turn_shaping": True}},
        "rollout": {
            "prompts_per_step": 64,  # dapo.sh:41,61
            "group_size": 16,  # dapo.sh:43,95
            "temperature": 1.0,  # yaml:171
            "top_p": 1.0,  # yaml:173
            # rollout.mode=async (dapo.sh:87) overlaps requests within a step; steps still alternate with
            # training (verl/trainer/ppo/ray_trainer.py:1042,1215 @d62da49).
            "async_rollouts": False,
        },
        "optim": {
            "learning_rate": 1e-6,  # dapo.sh:39,78
            "lr_schedule": "constant",  # lr_scheduler_type, yaml:23
            "warmup_steps": 0,  # lr_warmup_steps -1 and lr_warmup_steps_ratio 0, yaml:13,16
            "grad_clip": 1.0,  # yaml:107
            "ppo_epochs": 1,  # yaml:71
            "mini_batch_prompts": 16,  # ppo_mini_batch_size, dapo.sh:42
        },
        "grpo": {
            "clip_low": 0.2,  # dapo.sh:33,75
            "clip_high": 0.28,  # dapo.sh:34,76
            "kl_coef": 0.0,  # no KL loss, no KL in the reward: dapo.sh:28-31
            "loss_agg": "token-mean",  # loss_agg_mode, yaml:65
            "scale_by_std": True,  # norm_adv_by_std_in_grpo, yaml:482
            "entropy_coef": 0.0,  # entropy_coeff, yaml:66
            "clip_ratio_c": 10.0,  # dapo.sh:77
        },
        "sft": {
            "enabled": True,
            # The recipe's cold-start traces (wuxibin/ReTool-SFT, sft.sh:16) are not shipped: put them at this
            # path or point it at an upload; loading says so if they are missing.
            "dataset": "data/retool/sft.jsonl",
            "epochs": 6,  # sft.sh:41
            "learning_rate": 1e-5,  # sft.sh sets none: verl v0.6.1 verl/trainer/config/sft_trainer.yaml:51 @d62da49
        },
        "schedule": {
            "max_steps": PAPER_STEPS,  # total_epochs=1 over DAPO-Math-17k (dapo.sh:109): our step count
            "checkpoint_every": 20,  # dapo.sh:106
        },
    },
    description="ReTool recipe: SFT cold start then RL, <code>/<interpreter>, 15 calls, clip 0.2/0.28, no KL (GPU).",
)
