"""Run presets: the CPU quickstart and one preset per paper tirlab reproduces.

A preset is a partial RunConfig merged over the defaults (`merge_overrides`), so it lists only what
differs from them. Every value taken from a paper or its released training script says where it
comes from; a value the sources we could read do not give keeps our default and says so, rather
than borrowing a number from somewhere else. Paper presets name the paper's model as a hub id:
they are meant for a GPU machine with internet; on CPU, `quickstart`, `quickstart-otc` and
`smollm2-gsm8k-cpu` run.

ARCHITECTURE.md's table of papers is our summary of the papers themselves; values cited to it
were read from the papers when that table was written.
"""

from typing import Any

from trainer.config import TINY_MODEL, RunConfig, default_config, merge_overrides, validate_config

# trainer.models.SMOLLM2_MODEL, spelled out: importing trainer.models loads torch and transformers,
# which the dashboard, reading these presets, does not need (tests/trainer/test_presets.py keeps them equal).
SMOLLM2_MODEL = "smollm2-135m-instruct"

# Steps of the paper presets: the papers train for epochs over datasets we do not ship, so a step
# count is ours; 200 is long enough to see the curves the papers show start to bend.
_PAPER_STEPS = 200

# The quickstart's cold start. trainer.models.tiny_cold_start trains the tiny model with its own
# budget (TINY_SFT: 1 epoch at lr 3e-3 on synthetic traces); the preset states the same numbers so
# the resolved config a run stores says what really happened. tests/trainer/test_presets.py keeps them equal.
_TINY_SFT = {"enabled": True, "epochs": 1, "learning_rate": 3e-3}

PRESETS: dict[str, dict[str, Any]] = {
    # ToRL reward from the SFT cold start, 128 trajectories per step. The prototype used
    # lr 3e-5; from one of our earlier cold starts that moved tool use only from 0.55 to 0.67 in 20
    # steps, lr 2e-4 to 0.98. Measured end to end with lr 2e-4 on 2 idle cores (349 s, cold start
    # included): accuracy 0.77 -> 0.99 and tool use 0.50 -> 0.97 (easy 0.42 -> 0.96, hard 0.58 ->
    # 0.98) by step 20, about 3 s per step (README, "The trainer").
    "quickstart": {
        "model": {"name_or_path": TINY_MODEL},
        "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1},
        "reward": {"name": "torl", "params": {}},
        "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0},
        "optim": {"learning_rate": 2e-4},
        "grpo": {"scale_by_std": True},
        "sft": _TINY_SFT,
        "schedule": {"max_steps": 20},
    },
    # OTC-GRPO from the same cold start, wrong answers scored -1 (the paper gives 0), as the issue's
    # prototype; std-normalised advantages were needed there (without them the policy collapsed to
    # always-code). From an earlier cold start, its lr 1e-4 was too slow (by step 50 easy tool use
    # 0.56 -> 0.26, hard flat); lr 3e-4 found the split but eroded mental arithmetic (easy accuracy
    # 0.85 over steps 40-49; 0.90 with the k3 KL term to the cold start at 0.1, one run each).
    # Measured with these settings from the current cold start (145 s, cold start cached; means of
    # steps 0-9 -> 40-49): tool use on easy 0.46 -> 0.30, on hard 0.54 -> 0.72, accuracy 0.77 -> 0.86.
    # The split forms, but more slowly than it did from an earlier cold start (easy 0.04, hard 0.96).
    "quickstart-otc": {
        "model": {"name_or_path": TINY_MODEL},
        "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1},
        "reward": {"name": "otc_grpo", "params": {"wrong_reward": -1.0}},
        "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0},
        "optim": {"learning_rate": 3e-4},
        "grpo": {"scale_by_std": True, "kl_coef": 0.1},
        "sft": _TINY_SFT,
        "schedule": {"max_steps": 50},
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
    # ToRL (Li, Zou, Liu 2025; GAIR-NLP/ToRL): RL from the Qwen2.5-Math base model, ```python blocks,
    # +1/-1 reward, tool-call budget C, temperature 1, group 16, no KL (ARCHITECTURE.md).
    # lr 1e-6, 128 prompts per step and no KL also appear in a public ToRL training script in verl
    # style seen while writing this; we could not read GAIR-NLP/ToRL's own script to confirm them.
    "torl": {
        "model": {"name_or_path": "Qwen/Qwen2.5-Math-1.5B", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1},
        "reward": {"name": "torl", "params": {}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"kl_coef": 0.0},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # ZeroTIR (arXiv 2505.07773): RL from a base model with code execution, answer reward gated by
    # the <answer>\boxed{}</answer> format, groups kept only when their accuracy is in 0.05-0.8,
    # clip 0.22/0.28 (ARCHITECTURE.md). The paper studies interaction budgets 0, 2, 4 and 20; 4 is
    # our pick among them. Model, learning rate and batch shape are not from the paper: ToRL's.
    "zerotir": {
        "model": {"name_or_path": "Qwen/Qwen2.5-Math-1.5B", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 4},
        "reward": {"name": "zerotir", "params": {}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"clip_low": 0.22, "clip_high": 0.28, "kl_coef": 0.0},
        "filtering": {"accuracy_min": 0.05, "accuracy_max": 0.8, "max_resample_batches": 2},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # ReTool (arXiv 2504.11536), from verl's recipe/retool/run_qwen2_7b_dapo.sh: RL after an SFT
    # cold start of Qwen2.5-7B-Instruct, lr 1e-6, clip 0.2/0.28, no KL, 64 prompts x 16 responses,
    # prompt 2048 / response 16384 tokens, up to 16 turns, temperature 1 (verl's default).
    # The cold-start traces (the recipe's ReTool-SFT set) are not shipped: put them at sft.dataset's
    # path or point it at an upload; loading says so if they are missing.
    "retool": {
        "model": {"name_or_path": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 2048, "max_response_tokens": 16384},
        "tools": {"protocol": "retool", "max_tool_calls": 16},
        "reward": {"name": "retool", "params": {}},
        "rollout": {"prompts_per_step": 64, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"clip_low": 0.2, "clip_high": 0.28, "kl_coef": 0.0},
        "sft": {"enabled": True, "dataset": "data/retool/sft.jsonl"},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # OTC-PO (arXiv 2504.14870), GRPO variant: correctness scaled by closeness to the fewest tool
    # calls that solved the prompt, c = 3 for code (ARCHITECTURE.md), wrong answers 0 as in the paper.
    # Its code setting follows ToRL's, so model, budget and sampling are ToRL's, not read from OTC.
    "otc-grpo": {
        "model": {"name_or_path": "Qwen/Qwen2.5-Math-1.5B", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 3},
        "reward": {"name": "otc_grpo", "params": {"c": 3.0, "wrong_reward": 0.0}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"kl_coef": 0.0},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # OTC-PO, PPO-style variant: correctness scaled by cos(m*pi/(2m+c)), c = 3 (ARCHITECTURE.md).
    # tirlab trains it with group-normalised advantages (no critic); the rest as otc-grpo.
    "otc-ppo": {
        "model": {"name_or_path": "Qwen/Qwen2.5-Math-1.5B", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 3},
        "reward": {"name": "otc_ppo", "params": {"c": 3.0, "wrong_reward": 0.0}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "grpo": {"kl_coef": 0.0},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # ToolRL (arXiv 2504.13958), from the repository's examples/grpo_trainer/run_grpo.sh (read in
    # forks of qiancheng0/ToolRL): GRPO, 512 prompts x 4 responses, lr 1e-6, prompt 2048 / response
    # 1024 tokens, KL 1e-3 (the script applies it as a reward penalty; here it is the k3 loss term),
    # single-step function calling. Model per the paper's main runs: Qwen2.5-7B-Instruct.
    # The function-calling data (the paper's rlla_4k) is not shipped: its path is where to put it.
    "toolrl": {
        "model": {"name_or_path": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "data/toolrl/rlla_4k.jsonl", "max_prompt_tokens": 2048, "max_response_tokens": 1024},
        "tools": {"protocol": "tool_call_json", "max_tool_calls": 1},
        "reward": {"name": "toolrl", "params": {"schedule": "constant"}},
        "rollout": {"prompts_per_step": 512, "group_size": 4, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        # The script sets no clip range, so verl's symmetric default 0.2 applies.
        "grpo": {"clip_low": 0.2, "clip_high": 0.2, "kl_coef": 1e-3},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # Nemotron-Research-Tool-N1 (arXiv 2505.00024), from the repository's qwen_rl.sh (NVlabs/Tool-N1,
    # read in a fork): Qwen2.5-7B-Instruct, GRPO, 1024 prompts x 5 responses, lr 1e-6, temperature
    # 0.7, k3 ("low_var_kl") KL loss 1e-3, prompt 8192 / response 1024 tokens, no entropy bonus.
    # The function-calling data (the paper's xLAM + ToolACE mix) is not shipped: put it at this path.
    "tool-n1": {
        "model": {"name_or_path": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "data/tool_n1/train.jsonl", "max_prompt_tokens": 8192, "max_response_tokens": 1024},
        "tools": {"protocol": "tool_call_json", "max_tool_calls": 1},
        "reward": {"name": "tool_n1", "params": {}},
        "rollout": {"prompts_per_step": 1024, "group_size": 5, "temperature": 0.7},
        "optim": {"learning_rate": 1e-6},
        # The script sets no clip range, so verl's symmetric default 0.2 applies.
        "grpo": {"clip_low": 0.2, "clip_high": 0.2, "kl_coef": 1e-3, "entropy_coef": 0.0},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # ARTIST (arXiv 2505.01441): multi-turn <think>/tool/<output>/<answer> with answer + format +
    # tool-success reward (ARCHITECTURE.md; the reward's constants are fixed in trainer.rewards.artist).
    # The paper's optimisation settings were not available to us: model size, lr, group size and
    # budget are ToRL's values and our default clip/KL, not ARTIST's.
    "artist": {
        "model": {"name_or_path": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        "engine": "vllm",
        "data": {"train_dataset": "gsm8k", "max_prompt_tokens": 1024, "max_response_tokens": 2048},
        "tools": {"protocol": "artist", "max_tool_calls": 4},
        "reward": {"name": "artist", "params": {}},
        "rollout": {"prompts_per_step": 128, "group_size": 16, "temperature": 1.0},
        "optim": {"learning_rate": 1e-6},
        "schedule": {"max_steps": _PAPER_STEPS},
    },
    # SkyRL / asynchronous pipeline: what it reproduces is the system, not a recipe: rollouts of the
    # next step overlap training and tool execution overlaps generation. It runs the quickstart's
    # task (so it runs on CPU) with the asynchronous rollout pipeline explicitly on.
    "skyrl-async": {
        "model": {"name_or_path": TINY_MODEL},
        "data": {"train_dataset": "arithmetic", "val_dataset": "arithmetic"},
        "tools": {"protocol": "python_markdown", "max_tool_calls": 1},
        "reward": {"name": "torl", "params": {}},
        "rollout": {"prompts_per_step": 16, "group_size": 8, "temperature": 1.0, "async_rollouts": True},
        "optim": {"learning_rate": 3e-5},
        "sft": _TINY_SFT,
        "schedule": {"max_steps": 20},
    },
}

PRESET_DESCRIPTIONS: dict[str, str] = {
    "quickstart": "Tiny char-level model on arithmetic, ToRL reward: learns to call Python on CPU in minutes.",
    "quickstart-otc": "Tiny model on arithmetic with OTC-GRPO: skips the tool on easy problems, uses it on hard.",
    "smollm2-gsm8k-cpu": "SmolLM2-135M-Instruct on GSM8K with ToRL's prompt and reward, 4x4 rollouts on CPU.",
    "torl": "ToRL: Qwen2.5-Math-1.5B, ```python tool calls, +1/-1 reward, group 16, no KL (GPU).",
    "zerotir": "ZeroTIR: format-gated answer reward, accuracy filter 0.05-0.8, clip 0.22/0.28 (GPU).",
    "retool": "ReTool: SFT cold start then RL, <code>/<interpreter>, clip 0.2/0.28, no KL (GPU).",
    "otc-grpo": "OTC-GRPO: rewards correct answers with the fewest tool calls, c = 3 (GPU).",
    "otc-ppo": "OTC-PPO: correctness scaled by cos(m*pi/(2m+c)) of the tool calls m, c = 3 (GPU).",
    "toolrl": "ToolRL: JSON function calling, format + fine-grained correctness reward, group 4 (GPU).",
    "tool-n1": "Nemotron-Tool-N1: binary format-and-exact-match reward, temperature 0.7, KL 1e-3 (GPU).",
    "artist": "ARTIST: multi-turn tool use, answer + format + tool-success reward (GPU).",
    "skyrl-async": "Asynchronous rollouts overlapping generation, tool execution and training (CPU quickstart task).",
}


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
