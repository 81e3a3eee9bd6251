"""ToolRL: JSON function calling under its fine-grained reward, at CPU scale (toolrl-mini) and as its script."""

from trainer.config import TINY_TOOLRL_MODEL, merge_overrides
from trainer.presets.base import register_preset
from trainer.presets.common import FC_MINI

# ToolRL at CPU scale: its reward as the toolrl preset's (format in [0, 1], fine-grained correctness in
# [-3, 3], the released script's constant schedule; calls scored, never executed) on the function-calling
# task family (trainer.data.function_calling: 2-4 offered tools, zero, one or two calls, optional arguments).
# ToolRL starts RL from instruction-tuned models that already call, imperfectly; ours is
# 'tirlab/tiny-char-toolrl' (trainer.models.tiny.function_calling): the JSON-call model fine-tuned to be undecided
# where ToolRL's reward decides -- the <think> block left out, calls written as Python, a second call
# dropped (trainer.sft.traces.function_calling.MINI_FLAWS).
register_preset(
    "toolrl-mini",
    merge_overrides(
        FC_MINI,
        {
            "model": {"name_or_path": TINY_TOOLRL_MODEL},
            "reward": {"name": "toolrl", "params": {"schedule": "constant"}},
        },
    ),
    description="ToolRL's reward on CPU: the tiny model's JSON calls; exact calls rise, format errors fall.",
    with_async=True,
)

# ToolRL (arXiv 2504.13958), from qiancheng0/ToolRL @8cee13e: train_grpo.sh, which runs
# examples/grpo_trainer/run_grpo.sh ("run_grpo.sh"), and where they are silent the defaults of the verl 0.1
# it vendors, verl/trainer/config/ppo_trainer.yaml ("yaml" below). Single-step function calling.
register_preset(
    "toolrl",
    {
        "model": {
            # Our pick among the paper's models: BASE_MODEL is a placeholder in train_grpo.sh:17 (its example
            # is Qwen2.5-3B-Instruct).
            "name_or_path": "Qwen/Qwen2.5-7B-Instruct",
            "dtype": "bfloat16",  # deliberate, as in TORL: verl's actor keeps fp32 master weights
        },
        "engine": "vllm",  # run_grpo.sh:22
        "data": {
            # ToolRL's dataset/rlla_4k/train.parquet (train_grpo.sh:16, run_grpo.sh:3); tirlab ships only its
            # test split: download the train file to this path.
            "train_dataset": "data/toolrl/train.parquet",
            "val_dataset": "toolrl-test",  # dataset/rlla_4k/test.parquet, run_grpo.sh:4
            "max_prompt_tokens": 2048,  # run_grpo.sh:7
            "max_response_tokens": 1024,  # run_grpo.sh:8
            # Long prompts are cut from the left; ToolRL's length filter is commented out
            # (verl/utils/dataset/rl_dataset.py:113-116, ray_trainer.py:378).
            "overlong_prompts": "truncate",
        },
        # Calls are scored, never executed: ToolRL runs no tool while training (its rollout only generates).
        "tools": {"protocol": "tool_call_json", "max_tool_calls": 1},
        # Every reward switch of train_grpo.sh:7-14 is 0: the constant schedule.
        "reward": {"name": "toolrl", "params": {"schedule": "constant"}},
        "rollout": {
            "prompts_per_step": 512,  # run_grpo.sh:5
            "group_size": 4,  # run_grpo.sh:24
            "temperature": 1.0,  # yaml:63
            "top_p": 1.0,  # yaml:65
            "async_rollouts": False,  # verl/trainer/ppo/ray_trainer.py:642,713: sample, then train
        },
        "optim": {
            "learning_rate": 1e-6,  # run_grpo.sh:10
            "lr_schedule": "constant",  # warmup_style, yaml:40
            "warmup_steps": 0,  # lr_warmup_steps_ratio, yaml:38
            "grad_clip": 1.0,  # yaml:27
            "ppo_epochs": 1,  # yaml:33
            "mini_batch_prompts": 128,  # ppo_mini_batch_size, run_grpo.sh:12: four optimizer steps per step
        },
        "grpo": {
            # verl's one symmetric clip_ratio (yaml:28); the script sets none.
            "clip_low": 0.2,
            "clip_high": 0.2,
            # Deliberate: with use_kl_loss=False (run_grpo.sh:14) the script subtracts 1e-3 x the k1 estimate
            # from each token's reward (run_grpo.sh:26, yaml:142; ray_trainer.py:84-109,687-690). tirlab has
            # only the k3 loss term: the same weight, another estimator and place.
            "kl_coef": 1e-3,
            "loss_agg": "token-mean",  # verl/trainer/ppo/core_algos.py:192
            "scale_by_std": True,  # core_algos.py:148,152
            "entropy_coef": 1e-3,  # entropy_coeff, yaml:29 (the script sets none); verl/workers/actor/dp_actor.py:257
            "clip_ratio_c": None,  # the vendored verl 0.1 has no dual clip
        },
        "schedule": {
            # total_epochs=15 (run_grpo.sh:35) x 7 full batches of 512 (drop_last, ray_trainer.py:382,406): the
            # train split is what a 2% test split of 80 rows leaves (dataset/rlla_4k_raw/rlla.py:42-43), 3,920-3,969.
            "max_steps": 105,
            "eval_every": 5,  # test_freq, run_grpo.sh:34; greedy, as ray_trainer.py:439 validates
            "checkpoint_every": 15,  # save_freq, run_grpo.sh:33
        },
    },
    description="ToolRL's script: JSON function calling, format + fine-grained correctness reward, 512x4 (GPU).",
)
