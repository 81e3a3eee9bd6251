"""Run presets: the CPU quickstart and one preset per paper tirlab reproduces.

A preset is a partial RunConfig merged over the defaults (`merge_overrides`). The CPU presets list
only what differs from them; a paper preset spells out every value its paper's released training
script sets (or the framework it runs on defaults to), each with its file:line, even where it equals
our default. A value the sources we could read do not give keeps our default and says so, rather
than borrowing a number from somewhere else. Paper presets name the paper's model as a hub id:
they are meant for a GPU machine with internet; on CPU, `quickstart`, `otc-mini` and
`smollm2-gsm8k-cpu` run.

ARCHITECTURE.md's table of papers is our summary of the papers themselves; values cited to it
were read from the papers when that table was written.
"""

from typing import Any

from trainer.config import (
    TINY_ARTIST_FC_MODEL,
    TINY_ARTIST_MODEL,
    TINY_BASE_MODEL,
    TINY_INIT_MODEL,
    TINY_MODEL,
    TINY_TOOL_N1_MODEL,
    TINY_TOOLRL_MODEL,
    RunConfig,
    default_config,
    merge_overrides,
    validate_config,
)

# trainer.models.SMOLLM2_MODEL, spelled out: importing trainer.models loads torch and transformers,
# which the dashboard, reading these presets, does not need (tests/trainer/test_presets.py keeps them equal).
SMOLLM2_MODEL = "smollm2-135m-instruct"

# The tiny model's cold start, as a run's SFT phase: 'tirlab/tiny-char-init' fine-tuned on the 'tiny-cold-start'
# traces with trainer.models.tiny_cold_start.TINY_SFT's budget (1 epoch at lr 3e-3, 32 traces a step) and seed: the
# recipe of the model tirlab ships as 'tirlab/tiny-char' (tests/trainer/test_presets.py keeps them equal). The shipped
# build ran on two torch threads, a run's SFT of the tiny model on one, so their floating point may round apart.
_TINY_SFT = {"enabled": True, "dataset": "tiny-cold-start", "epochs": 1, "learning_rate": 3e-3, "batch_size": 32}

# Steps of the paper presets where a script's length cannot be turned into steps: its epochs run over a
# file we cannot count (or, for ZeroTIR, practically forever), so the count is ours; 200 is long enough
# to see the curves the papers show start to bend.
_PAPER_STEPS = 200

# ToRL (Li, Zou, Liu 2025), from GAIR-NLP/ToRL @cb78cf1: scripts/torl_1.5b.sh and, where it is silent,
# the defaults of the verl it vendors (0.2.0.dev), verl/trainer/config/ppo_trainer.yaml ("yaml" below).
# The OTC presets reuse it. Values equal to tirlab's defaults are spelled out too, so that a change of
# default cannot change what a paper preset means.
_TORL: dict[str, Any] = {
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
        "max_steps": _PAPER_STEPS,
        "eval_every": 4,  # test_freq, scripts/torl_1.5b.sh:57; greedy, as ray_trainer.py:648 validates
        "checkpoint_every": 20,  # save_freq, scripts/torl_1.5b.sh:56
    },
}

# ToRL reward from the shipped SFT cold start ('tirlab/tiny-char'), 128 trajectories per step. The
# issue's prototype used lr 3e-5; from one of our earlier cold starts that moved tool use only from
# 0.55 to 0.67 in 20 steps, lr 2e-4 to 0.98. The curve it gives is in the README ("The trainer",
# from bench/quickstart.py).
_QUICKSTART: dict[str, Any] = {
    "model": {"name_or_path": TINY_MODEL},
    "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
    "tools": {
        "protocol": "python_markdown",
        "max_tool_calls": 1,
        # The shipped cold start learned tirlab's feedback text (trainer.sft); ToRL's would be new to it.
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
# and Tool-N1 train; 10 steps, which is where the effect is (README, "toolrl-mini and tool-n1-mini": past
# them Tool-N1's binary reward leaves most groups all 0 or all 1 and its exact-match rate falls back).
_FC_MINI: dict[str, Any] = merge_overrides(
    _QUICKSTART,
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

PRESETS: dict[str, dict[str, Any]] = {
    # The quickstart: ToRL's protocol and reward from the shipped cold start (_QUICKSTART above).
    "quickstart": _QUICKSTART,
    # The same run with its cold start in it: the randomly initialised tiny model is fine-tuned on the
    # 'tiny-cold-start' traces first (_TINY_SFT: the recipe of the shipped 'tirlab/tiny-char', so the RL part
    # is the quickstart's). Minutes of SFT on 2 cores before the first GRPO step; the page shows its progress.
    "quickstart-sft": merge_overrides(_QUICKSTART, {"model": {"name_or_path": TINY_INIT_MODEL}, "sft": _TINY_SFT}),
    # OTC-mini: OTC-GRPO's reward as the otc-grpo preset's (c = 3, a wrong answer 0) from the shipped cold
    # start, which calls the tool on about half of both kinds of problem; one call at most, so a correct
    # answer scores 1 without the tool and cos(pi/5) = 0.81 with it when a sibling in its group solved it
    # without. Ours, for 2 cores: 16 x 8 rollouts, 50 steps, lr 4e-4 and the k3 KL to the cold start at
    # 0.1 (std-normalised advantages: without them the prototype collapsed to always-code).
    # Measured on 2 cores (bench/quickstart.py --window 10 --seed N), means of steps 0-9 -> 40-49, seeds
    # 0 / 1 / 2: tool use on easy problems 0.46 -> 0.005 / 0.65 -> 0.037 / 0.62 -> 0.010, on hard 0.59 ->
    # 0.97 / 0.70 -> 0.99 / 0.74 -> 1.00, accuracy 0.77 -> 0.90 / 0.80 -> 0.96 / 0.85 -> 0.96 (easy
    # accuracy 0.94 -> 0.87 / 0.94 -> 0.92 / 0.97 -> 0.92; seeds 3, 4: easy tool use 0.000, 0.004, hard
    # 0.97, 1.00). Seed 0, one run each: lr 3e-4 ended at easy tool use 0.071 (0.096 with wrong answers
    # at -1, the earlier setting), too close to the 0.1; lr 5e-4 at 0.001 but with easy accuracy
    # down to 0.81 (0.92 over steps 0-9). Hard problems go first (steps 10-20), easy ones follow.
    "otc-mini": {
        "model": {"name_or_path": TINY_MODEL},
        "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
        "tools": {
            "protocol": "python_markdown",
            "max_tool_calls": 1,
            # The shipped cold start learned tirlab's feedback text (trainer.sft); ToRL's would be new to it.
            "feedback": "tirlab",
        },
        "reward": {"name": "otc_grpo", "params": {"c": 3.0, "wrong_reward": 0.0}},
        "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0},
        "optim": {"learning_rate": 4e-4},
        "grpo": {"scale_by_std": True, "kl_coef": 0.1},
        "schedule": {"max_steps": 50},
    },
    # ReTool at CPU scale: its two stages, a cold start on <code>/<interpreter> traces and then RL with its
    # reward and tool text (the recipe's sandbox tool feeds back stdout + stderr; a wrong answer scores -1,
    # lifted 0.1 per call). The SFT moves the shipped tiny model (trained on ```python calls) to ReTool's
    # syntax on the 'retool-mini-sft' traces, which leave it undecided about calling (trainer.sft_traces): 3
    # epochs of 4,000 -- with 2, one seed in two copied no hard answer right (seed 1: hard accuracy 0.08 before
    # RL and after), and RL cannot find that skill in 20 steps. Measured (bench/quickstart.py --preset
    # retool-mini --window 5, seeds 0 and 1), means of steps 0-4 -> 15-19: hard accuracy 0.54 -> 0.76 and
    # 0.65 -> 0.90 (the SFT-only policy calls on 66-71% of hard problems; RL on 97-98%), accuracy 0.67 -> 0.83
    # and 0.68 -> 0.91, easy tool use 0.72 -> 0.99 (ReTool's turn shaping favours calls); the README's table.
    "retool-mini": merge_overrides(
        _QUICKSTART,
        {
            "tools": {"protocol": "retool", "max_tool_calls": 1, "feedback": "retool"},
            "reward": {"name": "retool", "params": {"turn_shaping": True}},
            "sft": {
                "enabled": True,
                "dataset": "retool-mini-sft",
                "epochs": 3,
                "learning_rate": 3e-3,
                "batch_size": 32,
            },
        },
    ),
    # ARTIST at CPU scale: multi-turn tool use with ARTIST's protocol and reward (answer 2, format 0.5, share of
    # calls that ran), on half hard products (one call needed) and half three-factor chains (two needed); a
    # third call is allowed. ARTIST trains instruction-tuned models that can follow its format; ours is
    # 'tirlab/tiny-char-artist' (trainer.models.tiny_artist), the shipped cold start fine-tuned on
    # 'artist-mini-sft' (trainer.artist_traces: one multiplication per <python> call, undecided how many calls
    # to make; 3 epochs of 16,000 -- with 4,000 the second call's copy of the first output was usually a digit
    # off and chain accuracy stayed near 0.04). Measured (bench/quickstart.py --preset artist-mini --window 5),
    # means of steps 0-4 -> 15-19: calls per response on hard products 0.72 -> 1.12, on chains 1.08 -> 1.91;
    # chain accuracy 0.36 -> 0.77, hard accuracy 0.69 -> 0.96, accuracy 0.53 -> 0.85.
    "artist-mini": merge_overrides(
        _QUICKSTART,
        {
            "model": {"name_or_path": TINY_ARTIST_MODEL},
            "data": {"train_dataset": "arithmetic:multi", "val_dataset": "arithmetic:multi"},
            "tools": {"protocol": "artist", "max_tool_calls": 3, "feedback": "tirlab"},
            "reward": {"name": "artist", "params": {}},
        },
    ),
    # ToolRL at CPU scale: its reward as the toolrl preset's (format in [0, 1], fine-grained correctness in
    # [-3, 3], the released script's constant schedule; calls scored, never executed) on the function-calling
    # task family (trainer.fc_synthetic: 2-4 offered tools, zero, one or two calls, optional arguments).
    # ToolRL starts RL from instruction-tuned models that already call, imperfectly; ours is
    # 'tirlab/tiny-char-toolrl' (trainer.models.tiny_fc): the JSON-call model fine-tuned to be undecided
    # where ToolRL's reward decides -- the <think> block left out, calls written as Python, a second call
    # dropped (trainer.fc_traces.MINI_FLAWS).
    "toolrl-mini": merge_overrides(
        _FC_MINI,
        {
            "model": {"name_or_path": TINY_TOOLRL_MODEL},
            "reward": {"name": "toolrl", "params": {"schedule": "constant"}},
        },
    ),
    # Nemotron-Tool-N1 at CPU scale: its binary reward (1 when the format holds and the calls match the ground
    # truth as a multiset, else 0) and sampling temperature 0.7 (qwen_rl.sh:35) on toolrl-mini's tasks, from
    # 'tirlab/tiny-char-tool-n1': toolrl-mini's start in Tool-N1's layout (one JSON list of {"name",
    # "arguments"}, which its reward reads).
    "tool-n1-mini": merge_overrides(
        _FC_MINI,
        {
            "model": {"name_or_path": TINY_TOOL_N1_MODEL},
            "reward": {"name": "tool_n1", "params": {}},
            "rollout": {"temperature": 0.7},
        },
    ),
    # ARTIST's function calling at CPU scale: multi-turn, the calls run (the function_calling environment
    # executes each <tool> block's JSON calls in the sandbox and feeds the results back in <tool_result>),
    # ARTIST's state + function + format reward, on the tool-chain tasks (trainer.fc_chains): book a flight by
    # its number, or look the next flight up and book the number the lookup returns. ARTIST trains
    # instruction-tuned models that can follow its format; ours is 'tirlab/tiny-char-artist-fc'
    # (trainer.models.tiny_fc), the JSON-call model fine-tuned on tool chains in ARTIST's syntax, undecided on
    # purpose about looking the flight up (it books some chains at once, with a number of its own, and stops
    # after the lookup on others). Prompts run to 303 tokens and responses, the tool results included, to
    # about 520, inside the tiny model's 1,024 positions. 8 prompts a step: at 16 the chains learned as they
    # do at 8 (seed 0: chain accuracy 0.23 -> 0.72 by step 7 against 0.22 -> 0.72) at twice the step time.
    "artist-fc-mini": merge_overrides(
        _QUICKSTART,
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
    # ZeroTIR at CPU scale: RL straight from a base model, no tool-use SFT. 'tirlab/tiny-char-base'
    # (trainer.models.tiny_base) learned arithmetic text and Python notebooks (code, its printed output, the
    # result restated) from trainer.base_corpus; asked "What is ...?" it answers in ZeroTIR's <think>/<answer>
    # format and writes code in about 3% of answers (corpus code_share 0.03: with 0, it never does, and 30
    # steps of this preset left its code-call ratio at 0.000 on every step, hard accuracy at most 0.013).
    # Everything but the model, data, batch, rate and length is the zerotir preset's: python_markdown with
    # 2 code runs and ZeroTIR's output text, its format-gated reward, clip 0.22/0.28 with dual clip 3, no KL,
    # no std scaling, the group-accuracy filter 0.05-0.8 and its three sample filters. Ours, for 2 cores:
    # 16 x 8 rollouts, lr 2e-4, no resampling of filtered groups, 20 steps (every group is past 0.8 by step
    # ~10, so the filter leaves nothing to train on). Measured (bench/quickstart.py --preset zerotir-mini --window 5):
    # see the README's ZeroTIR-mini table; with max_tool_calls 0 the same run's hard accuracy stays 0
    # (tests/trainer/test_zerotir_mini_learns.py runs both).
    "zerotir-mini": {
        "model": {"name_or_path": TINY_BASE_MODEL},
        "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 2, "feedback": "zerotir"},
        "reward": {"name": "zerotir", "params": {}},
        "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0},
        "optim": {"learning_rate": 2e-4},
        "grpo": {"clip_low": 0.22, "clip_high": 0.28, "kl_coef": 0.0, "scale_by_std": False, "clip_ratio_c": 3.0},
        "filtering": {
            "accuracy_min": 0.05,
            "accuracy_max": 0.8,
            "max_resample_batches": 0,
            "drop_truncated_unsolved": True,
            "repeatness_max": 0.2,
            "trigram_repetition_max": 0.6,
            "drop_shortcut": True,
        },
        "schedule": {"max_steps": 20},
    },
    # A real pretrained model on CPU: SmolLM2-135M-Instruct (trainer.models.smollm2) on GSM8K with
    # ToRL's protocol, reward, learning rate (1e-6) and no KL (as the torl preset below). The batch
    # is ours, sized for two CPU cores: 4 prompts x 4 samples, 256 response tokens (ToRL's 2048 would
    # mostly be spent on truncated rambling at this size). Prompts get 512 tokens because ToRL's system
    # prompt plus a GSM8K question runs to about 200 and truncation keeps only the end.
    "smollm2-gsm8k-cpu": {
        "model": {"name_or_path": SMOLLM2_MODEL},
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 512, "max_response_tokens": 256},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1},
        "reward": {"name": "torl", "params": {}},
        "rollout": {"prompts_per_step": 4, "group_size": 4, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"kl_coef": 0.0},
        "schedule": {"max_steps": 20},
    },
    # ToRL: every value and its source is in _TORL above.
    "torl": _TORL,
    # ZeroTIR (arXiv 2505.07773), from yyht/openrlhf_async_pipline @d154c0a: the training command of README.md
    # (lines 86-202, the one with these clip and filter values) and, where it is silent, the defaults of
    # openrlhf/cli/train_ppo_ray.py ("cli" below). Answer reward gated by the <answer>\boxed{}</answer> format.
    "zerotir": {
        "model": {
            # PRETRAIN is a placeholder (README.md:113); the released model is a 7B (README.md:41) and the
            # repository's own run script trains Qwen2.5-7B base (examples/scripts/run_ray_rl.sh:69).
            "name_or_path": "Qwen/Qwen2.5-7B",
            "dtype": "bfloat16",  # --bf16, README.md:172
        },
        "engine": "vllm",  # README.md:144
        "data": {
            # Our default: ZeroTIR trains on ORZ and DAPO-Math problems in its own JSONL (a JSON label per row,
            # examples/scripts/run_ray_rl.sh:71; README.md:214-224), not a format tirlab reads.
            "train_dataset": "gsm8k",
            "max_prompt_tokens": 1024,  # README.md:168
            # README.md:170; tool outputs count against it (env/math/math_tir_process_single_request.py:150).
            "max_response_tokens": 8192,
        },
        "tools": {
            "protocol": "python_markdown",
            # ENV_ITER_NUM=2 (README.md:92): 2 x 2 generation stages, one code run per pair
            # (env/math/math_tir_process_single_request.py:112,144-149,206-233).
            "max_tool_calls": 2,
            # The output as printed, stderr cleaned, replaced by a message past 256 tokens
            # (env/math/math_tir_process_single_request.py:302-313).
            "feedback": "zerotir",
        },
        "reward": {"name": "zerotir", "params": {}},
        "rollout": {
            "prompts_per_step": 128,  # README.md:164
            "group_size": 16,  # N_ROLLOUT, README.md:98,165
            "temperature": 1.0,  # cli:336
            "top_p": 1.0,  # cli:335
            # --async_train with a queue of one batch (README.md:97,150): rollouts run a step ahead of training.
            "async_rollouts": True,
        },
        "optim": {
            "learning_rate": 1e-6,  # README.md:94,175
            # cosine_with_min_lr (openrlhf/trainer/ray/ppo_actor.py:522-528) over 1e8 episodes (README.md:167,
            # openrlhf/trainer/ppo_trainer.py:370-376) never noticeably decays: constant in effect.
            "lr_schedule": "constant",
            "warmup_steps": 0,  # WARMUP=0.0, README.md:93,174
            "grad_clip": 1.0,  # --max_norm, cli:324
            "ppo_epochs": 1,  # README.md:166
            "mini_batch_prompts": 128,  # --train_batch_size 2048 samples / 16 per prompt, README.md:162,165
        },
        "grpo": {
            "clip_low": 0.22,  # --eps_clip_low_high, README.md:153
            "clip_high": 0.28,
            "kl_coef": 0.0,  # KL=0.0, README.md:95,173
            "loss_agg": "token-mean",  # --use_global_token_level_loss, README.md:182
            # reinforce_baseline subtracts the group mean and does not divide by the group's std
            # (openrlhf/trainer/ppo_utils/experience_maker.py:823-827). Deliberate: the script then whitens the
            # advantages over the whole batch's tokens (openrlhf/trainer/ppo_trainer_async.py:571-573), tirlab does not.
            "scale_by_std": False,
            "entropy_coef": 0.0,  # cli:365
            "clip_ratio_c": 3.0,  # --use_dual_policy_loss, README.md:183; its c = 3, openrlhf/models/loss.py:182
        },
        "filtering": {
            # --dynamic_filtering_reward_range (README.md:151-152): a group is kept when its mean answer reward
            # (format-gated correctness, ppo_trainer_async.py:356) is strictly inside (openrlhf/trainer/
            # ppo_trainer_async.py:376-377); with 16 samples no accuracy lands on either bound, so tirlab's
            # inclusive bounds keep the same groups.
            "accuracy_min": 0.05,
            "accuracy_max": 0.8,
            # Our default: the script samples until 128 groups pass (ppo_trainer_async.py:388-390); tirlab bounds it.
            "max_resample_batches": 2,
            # --use_filter_sample (README.md:184) applies exp_filter_fn of env/math/math_tir_filter_fn_utils.py
            # (ppo_trainer_async.py:534-541,578-584) to each sample of the kept groups:
            # truncated and not correct (overlong_filter, :12-16,22),
            "drop_truncated_unsolved": True,
            # no accepted answer and repeatness > 0.2 or repetition_penalty > 0.6 (void_filter, :25),
            "repeatness_max": 0.2,
            "trigram_repetition_max": 0.6,
            # correct, but code blocks, output blocks and executions differ in number (shorcut_filter, :24,26).
            "drop_shortcut": True,
        },
        "schedule": {
            "max_steps": _PAPER_STEPS,  # num_episodes 1e8, README.md:167: our step count
            "checkpoint_every": 50,  # --save_steps, README.md:200
        },
    },
    # ReTool (arXiv 2504.11536), from verl-project/verl-recipe @48ea0a7: retool/run_qwen2_7b_dapo.sh ("dapo.sh")
    # after retool/run_qwen2_7b_sft.sh ("sft.sh"), on verl v0.6.1 (retool/REQUIRED_VERL.txt), whose defaults
    # apply where the scripts are silent: volcengine/verl @d62da49 verl/trainer/config/_generated_ppo_trainer.yaml
    # ("yaml" below).
    "retool": {
        "model": {
            # RL starts from the SFT checkpoint of Qwen2.5-7B-Instruct (dapo.sh:12, sft.sh:18).
            "name_or_path": "Qwen/Qwen2.5-7B-Instruct",
            "dtype": "bfloat16",  # deliberate, as in _TORL: verl's actor keeps fp32 master weights
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
            "max_steps": _PAPER_STEPS,  # total_epochs=1 over DAPO-Math-17k (dapo.sh:109): our step count
            "checkpoint_every": 20,  # dapo.sh:106
        },
    },
    # OTC-PO (arXiv 2504.14870), GRPO variant: correctness scaled by closeness to the fewest tool calls that
    # solved the prompt, c = 3 for code (ARCHITECTURE.md), wrong answers 0 as in the paper. We found no
    # released OTC training script; its code experiments follow ToRL's setup, so every other value is ToRL's
    # script value (_TORL, cited there), not one read from OTC.
    "otc-grpo": merge_overrides(
        _TORL,
        {
            # Our default: OTC's budget is not in a source we could read; 3 is the vendored verl's
            # num_llm_calls_available default (GAIR-NLP/ToRL verl/trainer/config/ppo_trainer.yaml:68 @cb78cf1).
            "tools": {"max_tool_calls": 3},
            "reward": {"name": "otc_grpo", "params": {"c": 3.0, "wrong_reward": 0.0}},
        },
    ),
    # OTC-PO, PPO-style variant: correctness scaled by cos(m*pi/(2m+c)), c = 3 (ARCHITECTURE.md).
    # tirlab trains it with group-normalised advantages (no critic); the rest as otc-grpo.
    "otc-ppo": merge_overrides(
        _TORL,
        {
            "tools": {"max_tool_calls": 3},  # as otc-grpo
            "reward": {"name": "otc_ppo", "params": {"c": 3.0, "wrong_reward": 0.0}},
        },
    ),
    # ToolRL (arXiv 2504.13958), from qiancheng0/ToolRL @8cee13e: train_grpo.sh, which runs
    # examples/grpo_trainer/run_grpo.sh ("run_grpo.sh"), and where they are silent the defaults of the verl 0.1
    # it vendors, verl/trainer/config/ppo_trainer.yaml ("yaml" below). Single-step function calling.
    "toolrl": {
        "model": {
            # Our pick among the paper's models: BASE_MODEL is a placeholder in train_grpo.sh:17 (its example
            # is Qwen2.5-3B-Instruct).
            "name_or_path": "Qwen/Qwen2.5-7B-Instruct",
            "dtype": "bfloat16",  # deliberate, as in _TORL: verl's actor keeps fp32 master weights
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
    # Nemotron-Research-Tool-N1 (arXiv 2505.00024), from NVlabs/Tool-N1 @f9b4849: qwen_rl.sh, which runs
    # verl/examples/agent/qwen.sh ("qwen.sh"), and where they are silent the defaults of the verl it vendors,
    # verl/verl/trainer/config/ppo_trainer.yaml ("yaml" below).
    "tool-n1": {
        "model": {
            "name_or_path": "Qwen/Qwen2.5-7B-Instruct",  # qwen_rl.sh:20
            "dtype": "bfloat16",  # deliberate, as in _TORL: verl's actor keeps fp32 master weights
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
            "max_steps": _PAPER_STEPS,
            "eval_every": 10,  # test_freq, qwen.sh:52; greedy, as ray_trainer.py:645 validates
            "checkpoint_every": 10,  # save_freq, qwen.sh:51
        },
    },
    # ARTIST (arXiv 2505.01441): multi-turn <think>/tool/<output>/<answer> with answer + format + tool-success
    # reward (ARCHITECTURE.md; the reward's constants are fixed in trainer.rewards.artist). We found no released
    # ARTIST code or training script, so every value below but the protocol and reward is ours: ToRL's
    # learning rate, batch and sampling, tirlab's default clip and KL, a budget of 4 calls.
    "artist": {
        "model": {"name_or_path": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        # No ARTIST code to follow for the text after a call: tirlab's (it names what happened).
        "tools": {"protocol": "artist", "max_tool_calls": 4, "feedback": "tirlab"},
        "reward": {"name": "artist", "params": {}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # SkyRL / asynchronous pipeline: what it reproduces is the system, not a recipe. The quickstart, same
    # learning rate, with rollout.async_rollouts on: step t+1 is rolled out by a copy of the weights step t
    # starts from while step t trains (trainer.async_rollout), one step off-policy; tool execution overlaps
    # generation as in every run. bench/async_training.py measures it against the quickstart side by side.
    "skyrl-async": merge_overrides(_QUICKSTART, {"rollout": {"async_rollouts": True}}),
}

PRESET_DESCRIPTIONS: dict[str, str] = {
    "quickstart": "Tiny char-level model on arithmetic, ToRL reward: learns to call Python on CPU in minutes.",
    "quickstart-sft": "The quickstart with its cold start in the run: SFT of the tiny model from scratch, then GRPO.",
    "otc-mini": "OTC-GRPO's reward on the tiny model: tool use on easy problems falls to ~0, on hard ones rises to ~1.",
    "retool-mini": "ReTool on CPU: SFT to <code>/<interpreter> calls, then RL lifts hard accuracy over the SFT model.",
    "artist-mini": "ARTIST on CPU: multi-turn <python>/<output> calls; RL finds 1 call for a product, 2 for a chain.",
    "toolrl-mini": "ToolRL's reward on CPU: the tiny model's JSON calls; exact calls rise, format errors fall.",
    "tool-n1-mini": "Tool-N1's binary reward on CPU: the exact-match rate of JSON calls rises from the cold start.",
    "artist-fc-mini": "ARTIST's function calling on CPU: calls run, results fed back; look-up-then-book chains rise.",
    "zerotir-mini": "ZeroTIR on CPU: RL from a base model, no tool-use SFT; code calls rise from 3% to ~all unaided.",
    "smollm2-gsm8k-cpu": "SmolLM2-135M-Instruct on GSM8K with ToRL's prompt and reward, 4x4 rollouts on CPU.",
    "torl": "ToRL's script: Qwen2.5-Math-1.5B, ```python tool calls, +1/-1 reward, 128x16, clip 0.2, no KL (GPU).",
    "zerotir": "ZeroTIR: Qwen2.5-7B, 2 code runs, format-gated reward, accuracy filter 0.05-0.8, clip 0.22/0.28 (GPU).",
    "retool": "ReTool recipe: SFT cold start then RL, <code>/<interpreter>, 15 calls, clip 0.2/0.28, no KL (GPU).",
    "otc-grpo": "OTC-GRPO on ToRL's setup: rewards correct answers with the fewest tool calls, c = 3 (GPU).",
    "otc-ppo": "OTC-PPO on ToRL's setup: correctness scaled by cos(m*pi/(2m+c)) of the tool calls m, c = 3 (GPU).",
    "toolrl": "ToolRL's script: JSON function calling, format + fine-grained correctness reward, 512x4 (GPU).",
    "tool-n1": "Nemotron-Tool-N1's script: binary format-and-exact-match reward, 1024x5, temperature 0.7 (GPU).",
    "artist": "ARTIST: multi-turn tool use, answer + format + tool-success reward; no released script (GPU).",
    "skyrl-async": "The quickstart one step off-policy: the next step's rollouts run while this step trains (CPU).",
}

# Each CPU mini also runs SkyRL-style, one step off-policy (trainer.async_rollout): '<mini>-async' is the mini
# with rollout.async_rollouts on and nothing else changed, so the two can be compared side by side
# (bench/async_training.py --preset). ZeroTIR's own script trains this way (the zerotir preset).
ASYNC_MINIS = (
    "zerotir-mini",
    "retool-mini",
    "otc-mini",
    "artist-mini",
    "toolrl-mini",
    "tool-n1-mini",
    "artist-fc-mini",
)
for _mini in ASYNC_MINIS:
    PRESETS[f"{_mini}-async"] = merge_overrides(PRESETS[_mini], {"rollout": {"async_rollouts": True}})
    PRESET_DESCRIPTIONS[f"{_mini}-async"] = f"{_mini} one step off-policy: next rollouts run while this step trains."


class UnknownPreset(KeyError):
    """A preset name that is not in PRESETS."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown preset {self.name!r}; expected one of: {', '.join(PRESETS)}"


def preset_names() -> list[str]:
    """Preset names, quickstart first."""
    return list(PRESETS)


def preset_overrides(name: str) -> dict[str, Any]:
    """The preset's partial config (a copy), as merged over the defaults."""
    if name not in PRESETS:
        raise UnknownPreset(name)
    return merge_overrides({}, PRESETS[name])


def preset_config(name: str) -> RunConfig:
    """The validated RunConfig of preset `name`; UnknownPreset for a name not in PRESETS."""
    overrides = preset_overrides(name)
    merged = merge_overrides(default_config(), overrides)
    if "reward" in overrides:
        # A reward's parameters belong to that reward: merged over the default reward's (torl's),
        # they would carry torl's keys into otc_grpo's params, which refuse them. The validator
        # fills in the named reward's own defaults instead.
        merged["reward"] = {"params": {}, **overrides["reward"]}
    return validate_config(merged)
