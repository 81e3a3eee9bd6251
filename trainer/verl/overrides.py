"""What a tirlab run config becomes in verl 0.9.1: the hydra overrides of `python -m verl.trainer.main_ppo`.

`FIELDS` is the one table: every RunConfig leaf field that verl runs as tirlab does, with the verl keys it
sets (each cited to verl's composed config, `verl/trainer/config/_generated_ppo_trainer.yaml:<line>` of the
installed 0.9.1, "_generated:<line>" below) or the tirlab part inside verl that reads it from the run's
config file (the agent loop, the reward adapter, the data writer, the launch wrapper). `REFUSALS` holds the
values verl cannot run as tirlab does, each with why. Every leaf field is in one of them or both (a field
that maps for some values and is refused for others); tests/trainer/test_verl_overrides.py checks it.

`verl_overrides` raises ConfigError with every refusal, field by field; otherwise it returns the overrides
in the table's order, values quoted for hydra where they need it. `tirlab_fields` maps a verl key (or a
verl error message) back to the tirlab fields behind it, so verl's own validation errors
(trainer.verl.validate) name tirlab's fields.

Nothing here imports verl: the dashboard imports this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from trainer.config import TINY_MODELS, ConfigError, FilterConfig, RewardSpec, RunConfig

# Where verl's composed defaults live; every line cited as _generated:<line> is in it.
VERL_CONFIG = "verl/trainer/config/_generated_ppo_trainer.yaml"
# Names tirlab resolves itself to a model it builds or ships (trainer.models); not Hugging Face checkpoints.
CPU_MODELS = (*TINY_MODELS, "smollm2-135m-instruct")
# tirlab's agent loop, as trainer.verl.agent_loop registers it (trainer.verl.data.AGENT_NAME; not imported,
# since trainer.verl.data loads transformers).
AGENT_LOOP = "tirlab"
REWARD_FUNCTION = str(Path(__file__).resolve().with_name("reward.py"))
# The name verl calls in that file (trainer.verl.reward.compute_score).
REWARD_FUNCTION_NAME = "compute_score"
# tirlab's grpo.clip_ratio_c None (no dual clip) in verl, which always applies one (verl/trainer/ppo/
# core_algos.py:1355-1361): verl clamps the log-ratio to [-20, 20] (core_algos.py:1338), so the ratio is
# at most e^20 < 4.9e8 and a bound of 1e9 never binds: -A * c is always above the clipped loss.
NO_DUAL_CLIP = 1e9
# tirlab's optim.grad_clip 0 (no clipping) in verl, which always clips (verl/workers/engine/fsdp/
# transformer_impl.py:806-811, torch's clip_grad_norm_): an infinite max norm scales by min(1, inf) = 1.
NO_GRAD_CLIP = math.inf
# Micro-batches per GPU (actor update, log-prob passes): memory only, the loss is the same; the largest
# divisor of a GPU's share of a mini-batch up to this.
MAX_MICRO_BATCH_PER_GPU = 4
# tirlab's optimizer is torch's AdamW with its default weight decay (trainer/loop/update.py:65).
ADAMW_WEIGHT_DECAY = 0.01
LOGGERS = ("console", "mlflow")


@dataclass(frozen=True)
class VerlPaths:
    """The files and names of one verl run (trainer.verl.command.run_paths builds them under a run's folder)."""

    train_files: str  # verl parquet rows of the train split (trainer.verl.data)
    val_files: str | None  # of the validation split; None when the run has no data.val_dataset
    agent_loop_config: str  # the agent-loop file naming tirlab's agent loop (trainer.verl.agent_loop)
    run_config: str  # the run-config.json the agent loop and the reward adapter read tirlab's settings from
    checkpoints: str  # trainer.default_local_dir
    rollout_data_dir: str  # trainer.rollout_data_dir: per-step sample dumps tirlab reads (trainer.verl.samples)
    project: str  # trainer.project_name
    experiment: str  # trainer.experiment_name
    reward_function: str = REWARD_FUNCTION  # the file holding verl's custom reward function


@dataclass(frozen=True)
class Entry:
    """How a field reaches verl: the verl keys it sets (`keys`, with `source` citing verl's config), or,
    with no keys, the tirlab part inside verl that reads it from the run's config file (`source`)."""

    keys: tuple[str, ...]
    source: str


def _via(part: str) -> Entry:
    return Entry((), part)


AGENT_LOOP_READS = "tirlab's agent loop reads it from the run config (trainer/verl/agent_loop.py)"
REWARD_READS = "tirlab's reward adapter reads it from the run config (trainer/verl/reward.py)"
DATA_WRITER = "tirlab's data writer (trainer/verl/data.py)"
ARO = "actor_rollout_ref"

# field -> the verl keys it sets (cited to verl's composed config) or the tirlab part that reads it.
FIELDS: dict[str, Entry] = {
    "seed": Entry(
        ("data.seed", f"{ARO}.actor.data_loader_seed", f"{ARO}.rollout.seed"),
        "_generated:517 data.seed, :113 actor.data_loader_seed, :301 rollout.seed",
    ),
    "engine": Entry((), "'verl' is what selects this translation (trainer/verl/launch.py runs main_ppo)"),
    "model.name_or_path": Entry(
        (f"{ARO}.model.path",), "_generated:436 actor_rollout_ref.model.path (a Hugging Face checkpoint)"
    ),
    "model.dtype": Entry(
        (
            f"{ARO}.actor.fsdp_config.model_dtype",
            f"{ARO}.actor.fsdp_config.dtype",
            f"{ARO}.ref.fsdp_config.model_dtype",
            f"{ARO}.ref.fsdp_config.dtype",
            f"{ARO}.rollout.dtype",
        ),
        "_generated:37,51 actor weights and compute, :245,259 the reference's, :304 the rollout's",
    ),
    "model.device": Entry((), "'auto' and 'cuda' are verl's GPUs (_generated:978 trainer.device: cuda)"),
    "data.train_dataset": Entry(
        ("data.train_files",), f"_generated:498: the parquet file {DATA_WRITER} writes from it with tirlab's loader"
    ),
    "data.val_dataset": Entry(
        ("data.val_files",),
        f"_generated:499: the parquet file {DATA_WRITER} writes from it; without one verl is given the train "
        "file and never validates",
    ),
    "data.extra_val_datasets": Entry(
        ("data.val_files",),
        f"_generated:499: their rows go into the same parquet file as val_dataset's ({DATA_WRITER}), each with its "
        "data_source, which verl's validation metrics are split by",
    ),
    "data.prompt_template": _via(f"{DATA_WRITER} renders each row's prompt with it, which the agent loop continues"),
    "data.max_prompt_tokens": Entry(
        ("data.max_prompt_length",),
        "_generated:504; rollout.prompt_length follows it (_generated:302); the agent loop keeps a prompt's last "
        "tokens up to it",
    ),
    "data.overlong_prompts": Entry(
        ("data.filter_overlong_prompts",),
        f"_generated:521 set false: 'drop' drops the rows in {DATA_WRITER} by tirlab's own length rule, "
        "'truncate' keeps a prompt's last tokens in the agent loop",
    ),
    "data.max_response_tokens": Entry(
        ("data.max_response_length",), "_generated:505; rollout.response_length follows it (_generated:303)"
    ),
    "tools.protocol": _via(AGENT_LOOP_READS),
    "tools.environment": _via(AGENT_LOOP_READS),
    "tools.max_tool_calls": Entry(
        (f"{ARO}.rollout.multi_turn.enable", f"{ARO}.rollout.multi_turn.max_assistant_turns"),
        "_generated:346-347 (calls + 1 turns); the budget itself is enforced by " + AGENT_LOOP_READS,
    ),
    "tools.feedback": _via(AGENT_LOOP_READS),
    "tools.output_max_chars": _via(AGENT_LOOP_READS),
    "tools.sandbox_timeout_s": _via(AGENT_LOOP_READS + " (tirlab's sandbox)"),
    "tools.sandbox_memory_mb": _via(AGENT_LOOP_READS + " (tirlab's sandbox)"),
    "tools.train_on_tool_output": _via(AGENT_LOOP_READS + " (response_mask of tool-output tokens)"),
    "reward.name": Entry(
        (
            "reward.custom_reward_function.path",
            "reward.custom_reward_function.name",
            "+reward.custom_reward_function.reward_kwargs.run_config",
        ),
        "_generated:780-782; reward_kwargs are passed to the function (verl/trainer/ppo/reward.py:82-86); "
        + REWARD_READS,
    ),
    "reward.params": _via(REWARD_READS),
    "rollout.prompts_per_step": Entry(("data.train_batch_size",), "_generated:506"),
    "rollout.group_size": Entry((f"{ARO}.rollout.n",), "_generated:329"),
    "rollout.temperature": Entry(
        (f"{ARO}.rollout.temperature", f"{ARO}.rollout.val_kwargs.temperature"),
        "_generated:297; :340 for evaluation, when it samples (schedule.eval_pass_k > 1) and "
        "schedule.eval_temperature is None, else 0 (greedy)",
    ),
    "rollout.top_p": Entry((f"{ARO}.rollout.top_p", f"{ARO}.rollout.val_kwargs.top_p"), "_generated:299, :339"),
    "rollout.async_rollouts": Entry((), "false is main_ppo's sync trainer (_generated:981 trainer.v1.trainer_mode)"),
    "rollout.trajectories_to_report": Entry(
        ("trainer.log_val_generations",),
        "_generated:958 (that many groups of evaluation samples); the training samples reported are read "
        "from trainer.rollout_data_dir by trainer/verl/samples.py",
    ),
    "rollout.backend": Entry((), "'local' only: verl places its own rollout workers"),
    "rollout.replicas": Entry((), "1 only: verl places its own rollout workers"),
    "rollout.sandbox_actors": Entry((), "1 only: tool calls run in the agent loop's workers"),
    "optim.learning_rate": Entry((f"{ARO}.actor.optim.lr",), "_generated:12"),
    "optim.lr_schedule": Entry(
        (f"{ARO}.actor.optim.lr_scheduler_type", f"{ARO}.actor.optim.min_lr_ratio"),
        "_generated:23, :21 (cosine to 0 as tirlab's; verl/workers/config/optimizer.py:123 allows constant and cosine)",
    ),
    "optim.warmup_steps": Entry((f"{ARO}.actor.optim.lr_warmup_steps",), "_generated:16"),
    "optim.grad_clip": Entry((f"{ARO}.actor.optim.clip_grad",), "_generated:20 (0 = no clipping: inf)"),
    "optim.ppo_epochs": Entry((f"{ARO}.actor.ppo_epochs",), "_generated:111"),
    "optim.mini_batch_prompts": Entry(
        (f"{ARO}.actor.ppo_mini_batch_size",), "_generated:80 (None: rollout.prompts_per_step)"
    ),
    "grpo.clip_low": Entry((f"{ARO}.actor.clip_ratio_low",), "_generated:86"),
    "grpo.clip_high": Entry((f"{ARO}.actor.clip_ratio_high",), "_generated:87"),
    "grpo.kl_coef": Entry(
        (
            f"{ARO}.actor.use_kl_loss",
            f"{ARO}.actor.kl_loss_coef",
            f"{ARO}.actor.kl_loss_type",
            "algorithm.use_kl_in_reward",
        ),
        "_generated:106, :109, :110 (low_var_kl is k3), :869 (KL as a loss term, not in the reward)",
    ),
    "grpo.loss_agg": Entry((f"{ARO}.actor.loss_agg_mode",), "_generated:101"),
    "grpo.scale_by_std": Entry(("algorithm.norm_adv_by_std_in_grpo",), "_generated:862"),
    "grpo.entropy_coef": Entry((f"{ARO}.actor.entropy_coeff",), "_generated:103"),
    "grpo.clip_ratio_c": Entry((f"{ARO}.actor.clip_ratio_c",), "_generated:100 (None: 1e9, which never binds)"),
    "schedule.max_steps": Entry(
        ("trainer.total_training_steps", "trainer.total_epochs"),
        "_generated:952; :951 as many epochs as steps, so a small dataset does not end the run early",
    ),
    "schedule.eval_every": Entry(("trainer.test_freq",), "_generated:970 (0: -1)"),
    "schedule.eval_before_train": Entry(("trainer.val_before_train",), "_generated:968"),
    "schedule.eval_pass_k": Entry(
        (f"{ARO}.rollout.val_kwargs.n", f"{ARO}.rollout.val_kwargs.do_sample"), "_generated:341, :342 (k > 1)"
    ),
    "schedule.eval_temperature": Entry(
        (f"{ARO}.rollout.val_kwargs.temperature",), "_generated:340, when the evaluation samples (eval_pass_k > 1)"
    ),
    "schedule.checkpoint_every": Entry(("trainer.save_freq",), "_generated:963 (0: -1)"),
    "schedule.heartbeat_s": _via("tirlab's launch wrapper reports liveness at this period (trainer/verl/launch.py)"),
    "cluster.nnodes": Entry(("trainer.nnodes",), "_generated:961"),
    "cluster.gpus_per_node": Entry(("trainer.n_gpus_per_node",), "_generated:962"),
    "cluster.tensor_parallel": Entry((f"{ARO}.rollout.tensor_model_parallel_size",), "_generated:310"),
}

# Keys set whatever the config, with why: verl's GRPO, tirlab's agent loop and reward, the run's files.
FIXED: dict[str, str] = {
    "algorithm.adv_estimator": "_generated:861 grpo (tirlab's trainer is GRPO; no critic)",
    f"{ARO}.rollout.name": "_generated:293 vllm (the server tirlab's agent loop generates with)",
    f"{ARO}.rollout.mode": "_generated:294 async (agent loops need verl's async server)",
    f"{ARO}.rollout.agent.agent_loop_config_path": "_generated:363 the file naming tirlab's agent loop",
    f"{ARO}.rollout.agent.default_agent_loop": "_generated:362 tirlab's agent loop for every row",
    f"{ARO}.actor.optim.weight_decay": "_generated:15 torch AdamW's default, as tirlab's optimizer",
    f"{ARO}.actor.use_dynamic_bsz": "_generated:83 false: fixed micro-batches, and verl's batch-size checks apply",
    f"{ARO}.actor.ppo_micro_batch_size_per_gpu": "_generated:82 memory only (MAX_MICRO_BATCH_PER_GPU)",
    f"{ARO}.rollout.log_prob_micro_batch_size_per_gpu": "_generated:324 required by verl/utils/config.py:178",
    f"{ARO}.ref.log_prob_micro_batch_size_per_gpu": "_generated:189 required with KL (verl/utils/config.py:171)",
    "trainer.logger": "_generated:955 console and mlflow (metrics back to tirlab through its MLflow API)",
    "trainer.project_name": "_generated:953",
    "trainer.experiment_name": "_generated:954",
    "trainer.default_local_dir": "_generated:974 the run's checkpoints",
    "trainer.rollout_data_dir": "_generated:959 per-step sample dumps tirlab reads",
    "trainer.resume_mode": "_generated:965 auto: a restarted job continues from its latest checkpoint",
}


@dataclass(frozen=True)
class Refusal:
    """A value verl cannot run as tirlab does: `refused(config)` is true for it; `why` says so."""

    refused: Callable[[RunConfig], bool]
    why: str


_SEARCH_ON_VERL = (
    "the search environment runs on tirlab's trainer; on verl, point verl's own search tool at "
    "`python -m retrieval serve` (docs/retrieval.md)"
)


def _non_default(section: str, name: str) -> Callable[[RunConfig], bool]:
    model: BaseModel = getattr(RunConfig(), section)
    default = getattr(model, name)
    return lambda config: getattr(getattr(config, section), name) != default


def _n_gpus(config: RunConfig) -> int:
    return config.cluster.nnodes * config.cluster.gpus_per_node


# Rewards whose score of a completion depends on the other completions of its group: verl scores each
# sample alone (trainer.verl.reward refuses them too).
GROUP_REWARDS = frozenset({"otc_grpo"})


def group_rewards_in(reward: RewardSpec) -> list[str]:
    """The group rewards a reward spec uses, alone or as a term of 'weighted'."""
    names = {reward.name}
    if reward.name == "weighted":
        names |= {term["name"] for term in reward.params["terms"]}
    return sorted(names & GROUP_REWARDS)


def _group_reward(config: RunConfig) -> bool:
    return bool(group_rewards_in(config.reward))


def _mini_batch_split(config: RunConfig) -> bool:
    # Only when the step's batch itself splits (verl's own check, verl/utils/config.py:123-127, says the rest).
    prompts = config.optim.mini_batch_prompts or config.rollout.prompts_per_step
    step_samples = config.rollout.prompts_per_step * config.rollout.group_size
    n = _n_gpus(config)
    return step_samples % n == 0 and (prompts * config.rollout.group_size) % n != 0


_FILTER = (
    "verl's main_ppo has no group or sample filter (algorithm.filter_groups is DAPO's dynamic sampling, a "
    "recipe trainer, not main_ppo); leave filtering at its defaults"
)
_SFT = (
    "verl's SFT is a separate trainer (verl.trainer.sft_trainer): run the cold start first and start this "
    "run from its checkpoint (model.name_or_path)"
)

REFUSALS: dict[str, list[Refusal]] = {
    "engine": [Refusal(lambda c: c.engine != "verl", "this translation is for engine 'verl'")],
    "model.name_or_path": [
        Refusal(
            lambda c: c.model.name_or_path in CPU_MODELS,
            "tirlab's CPU models are built or converted by tirlab (trainer.models), not Hugging Face checkpoints "
            "verl can load: name a hub id or a local Hugging Face directory",
        )
    ],
    "model.device": [Refusal(lambda c: c.model.device == "cpu", "verl trains on GPUs; use 'auto' or 'cuda'")],
    "schedule.eval_every": [
        Refusal(
            lambda c: c.schedule.eval_every > 0 and c.data.val_dataset is None,
            "needs data.val_dataset: verl evaluates on validation files, and there are none",
        )
    ],
    "reward.name": [
        Refusal(
            _group_reward,
            "compares the completions of a GRPO group, and verl scores each sample alone "
            "(trainer/verl/reward.py); use a per-sample reward (otc_ppo is OTC's)",
        )
    ],
    "tools.environment": [
        Refusal(
            lambda c: c.tools.run_environment == "swe",
            "the swe environment grades a trajectory's patch when it ends, and verl's reward function sees the "
            "text alone (trainer/verl/reward.py); swe runs on tirlab's trainer",
        ),
        Refusal(
            lambda c: c.tools.run_environment == "search",
            _SEARCH_ON_VERL,
        ),
    ],
    **{
        f"tools.{name}": [
            Refusal(
                _non_default("tools", name),
                _SEARCH_ON_VERL,
            )
        ]
        for name in ("search_corpus", "search_url", "search_topk")
    },
    "rollout.async_rollouts": [
        Refusal(
            lambda c: c.rollout.async_rollouts,
            "tirlab's one-step off-policy pipeline is not main_ppo's: its sync trainer samples, then trains "
            "(verl 0.9.1's trainer.v1 async modes have other staleness rules: _generated:981-987)",
        )
    ],
    "rollout.backend": [Refusal(_non_default("rollout", "backend"), "verl places its own rollout workers")],
    "rollout.replicas": [
        Refusal(_non_default("rollout", "replicas"), "verl places its own rollout workers (cluster.* sizes them)")
    ],
    "rollout.sandbox_actors": [
        Refusal(_non_default("rollout", "sandbox_actors"), "verl places its own workers; tool calls run in them")
    ],
    "optim.lr_schedule": [
        Refusal(
            lambda c: c.optim.lr_schedule == "linear",
            "verl 0.9.1's FSDP optimizer offers 'constant' and 'cosine' only (verl/workers/config/optimizer.py:123)",
        )
    ],
    "optim.mini_batch_prompts": [
        Refusal(
            _mini_batch_split,
            "each mini-batch of mini_batch_prompts x group_size samples is split evenly over the "
            "nnodes x gpus_per_node GPUs (verl/trainer/ppo/v1/trainer_base.py:1829-1852); make it divisible",
        )
    ],
    "cluster.tensor_parallel": [
        Refusal(
            lambda c: _n_gpus(c) % c.cluster.tensor_parallel != 0,
            "must divide nnodes x gpus_per_node: each rollout replica takes tensor_parallel GPUs",
        )
    ],
    "sft.enabled": [Refusal(lambda c: c.sft.enabled, _SFT)],
    # Read only by the cold start, which is refused above; any value is harmless while it is off.
    "sft.dataset": [Refusal(lambda c: c.sft.enabled and c.sft.dataset is not None, _SFT)],
    "sft.epochs": [Refusal(lambda c: c.sft.enabled and _non_default("sft", "epochs")(c), _SFT)],
    "sft.learning_rate": [Refusal(lambda c: c.sft.enabled and _non_default("sft", "learning_rate")(c), _SFT)],
    "sft.batch_size": [Refusal(lambda c: c.sft.enabled and _non_default("sft", "batch_size")(c), _SFT)],
    **{f"filtering.{name}": [Refusal(_non_default("filtering", name), _FILTER)] for name in FilterConfig.model_fields},
}


def verl_refusals(config: RunConfig) -> dict[str, list[str]]:
    """The fields whose value verl cannot run as tirlab does, each with why (empty when it can)."""
    refused: dict[str, list[str]] = {}
    for field, rules in REFUSALS.items():
        for rule in rules:
            if rule.refused(config):
                refused.setdefault(field, []).append(f"{rule.why} (engine 'verl')")
    return refused


def hydra_value(value: Any) -> str:
    """`value` as hydra's override grammar reads it back: a string that is not a plain word or path is
    single-quoted (backslashes and quotes escaped), so ',' '=' ' ' '[' or a word like 'null' stay text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "inf" if value == math.inf else repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    text = str(value)
    plain = re.fullmatch(r"[A-Za-z_/~.][\w./~+\-]*", text) and text.lower() not in (
        "null",
        "true",
        "false",
        "inf",
        "nan",
    )
    if plain:
        return text
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def _micro_batch_per_gpu(config: RunConfig) -> int:
    prompts = config.optim.mini_batch_prompts or config.rollout.prompts_per_step
    samples, n = prompts * config.rollout.group_size, _n_gpus(config)
    if samples % n:
        return 1  # verl refuses the split itself, or REFUSALS does
    return math.gcd(samples // n, MAX_MICRO_BATCH_PER_GPU)


def _values(config: RunConfig, paths: VerlPaths) -> dict[str, Any]:
    """verl key -> value, in the order FIELDS and FIXED give."""
    optim, grpo, schedule, rollout = config.optim, config.grpo, config.schedule, config.rollout
    sampled_eval = schedule.eval_pass_k > 1
    micro = _micro_batch_per_gpu(config)
    values: dict[str, Any] = {
        "algorithm.adv_estimator": "grpo",
        f"{ARO}.rollout.name": "vllm",
        f"{ARO}.rollout.mode": "async",
        f"{ARO}.rollout.agent.agent_loop_config_path": paths.agent_loop_config,
        f"{ARO}.rollout.agent.default_agent_loop": AGENT_LOOP,
        "data.seed": config.seed,
        f"{ARO}.actor.data_loader_seed": config.seed,
        f"{ARO}.rollout.seed": config.seed,
        f"{ARO}.model.path": config.model.name_or_path,
    }
    for key in FIELDS["model.dtype"].keys:
        values[key] = config.model.dtype
    values |= {
        "data.train_files": paths.train_files,
        # verl always builds a validation dataset (verl/trainer/ppo/v1/trainer_base.py:719); without one
        # it gets the train file, and test_freq -1 keeps it from ever being used.
        "data.val_files": paths.val_files or paths.train_files,
        "data.max_prompt_length": config.data.max_prompt_tokens,
        "data.filter_overlong_prompts": False,
        "data.max_response_length": config.data.max_response_tokens,
        f"{ARO}.rollout.multi_turn.enable": True,
        f"{ARO}.rollout.multi_turn.max_assistant_turns": config.tools.max_tool_calls + 1,
        "reward.custom_reward_function.path": paths.reward_function,
        "reward.custom_reward_function.name": REWARD_FUNCTION_NAME,
        "+reward.custom_reward_function.reward_kwargs.run_config": paths.run_config,
        "data.train_batch_size": rollout.prompts_per_step,
        f"{ARO}.rollout.n": rollout.group_size,
        f"{ARO}.rollout.temperature": rollout.temperature,
        f"{ARO}.rollout.val_kwargs.temperature": (
            (schedule.eval_temperature or rollout.temperature) if sampled_eval else 0.0
        ),
        f"{ARO}.rollout.top_p": rollout.top_p,
        f"{ARO}.rollout.val_kwargs.top_p": rollout.top_p,
        "trainer.log_val_generations": rollout.trajectories_to_report * schedule.eval_pass_k,
        f"{ARO}.actor.optim.lr": optim.learning_rate,
        f"{ARO}.actor.optim.lr_scheduler_type": optim.lr_schedule,
        f"{ARO}.actor.optim.min_lr_ratio": 0.0,
        f"{ARO}.actor.optim.lr_warmup_steps": optim.warmup_steps,
        f"{ARO}.actor.optim.clip_grad": optim.grad_clip if optim.grad_clip > 0 else NO_GRAD_CLIP,
        f"{ARO}.actor.optim.weight_decay": ADAMW_WEIGHT_DECAY,
        f"{ARO}.actor.ppo_epochs": optim.ppo_epochs,
        f"{ARO}.actor.ppo_mini_batch_size": optim.mini_batch_prompts or rollout.prompts_per_step,
        f"{ARO}.actor.use_dynamic_bsz": False,
        f"{ARO}.actor.ppo_micro_batch_size_per_gpu": micro,
        f"{ARO}.rollout.log_prob_micro_batch_size_per_gpu": micro,
        f"{ARO}.ref.log_prob_micro_batch_size_per_gpu": micro,
        f"{ARO}.actor.clip_ratio_low": grpo.clip_low,
        f"{ARO}.actor.clip_ratio_high": grpo.clip_high,
        f"{ARO}.actor.clip_ratio_c": grpo.clip_ratio_c if grpo.clip_ratio_c is not None else NO_DUAL_CLIP,
        f"{ARO}.actor.use_kl_loss": grpo.kl_coef > 0,
        f"{ARO}.actor.kl_loss_coef": grpo.kl_coef,
        f"{ARO}.actor.kl_loss_type": "low_var_kl",
        "algorithm.use_kl_in_reward": False,
        f"{ARO}.actor.loss_agg_mode": grpo.loss_agg,
        "algorithm.norm_adv_by_std_in_grpo": grpo.scale_by_std,
        f"{ARO}.actor.entropy_coeff": grpo.entropy_coef,
        "trainer.total_training_steps": schedule.max_steps,
        "trainer.total_epochs": schedule.max_steps,
        "trainer.test_freq": schedule.eval_every if schedule.eval_every > 0 and paths.val_files else -1,
        "trainer.val_before_train": schedule.eval_before_train and bool(paths.val_files),
        f"{ARO}.rollout.val_kwargs.n": schedule.eval_pass_k,
        f"{ARO}.rollout.val_kwargs.do_sample": sampled_eval,
        "trainer.save_freq": schedule.checkpoint_every if schedule.checkpoint_every > 0 else -1,
        "trainer.nnodes": config.cluster.nnodes,
        "trainer.n_gpus_per_node": config.cluster.gpus_per_node,
        f"{ARO}.rollout.tensor_model_parallel_size": config.cluster.tensor_parallel,
        "trainer.logger": list(LOGGERS),
        "trainer.project_name": paths.project,
        "trainer.experiment_name": paths.experiment,
        "trainer.default_local_dir": paths.checkpoints,
        "trainer.rollout_data_dir": paths.rollout_data_dir,
        "trainer.resume_mode": "auto",
    }
    return values


def verl_overrides(config: RunConfig, paths: VerlPaths) -> list[str]:
    """main_ppo's overrides for `config`, one `key=value` each, in a stable order; ConfigError naming each
    field whose value verl cannot run (verl_refusals)."""
    refused = verl_refusals(config)
    if refused:
        raise ConfigError(refused)
    return [f"{key}={hydra_value(value)}" for key, value in _values(config, paths).items()]


def _key_fields() -> dict[str, tuple[str, ...]]:
    owners: dict[str, list[str]] = {}
    for field, entry in FIELDS.items():
        for key in entry.keys:
            owners.setdefault(key.lstrip("+"), []).append(field)
    # A mini-batch of None is the step's batch; verl's micro-batches follow the mini-batch and the GPUs.
    owners[f"{ARO}.actor.ppo_mini_batch_size"].append("rollout.prompts_per_step")
    return {key: tuple(fields) for key, fields in owners.items()}


KEY_FIELDS = _key_fields()


def _names() -> dict[str, tuple[str, ...]]:
    # verl's messages name a key in full, without its actor_rollout_ref. prefix, or by its last part.
    names: dict[str, tuple[str, ...]] = {}
    last_parts = [key.rsplit(".", 1)[-1] for key in KEY_FIELDS]
    for key, fields in KEY_FIELDS.items():
        names[key] = fields
        names.setdefault(key.removeprefix(f"{ARO}."), fields)
        last = key.rsplit(".", 1)[-1]
        if last_parts.count(last) == 1 and last not in ("n", "name", "path", "enable"):
            names.setdefault(last, fields)
    return names


KEY_NAMES = _names()
# Quantities verl's checks name in their messages rather than a key (verl/utils/config.py:123-127).
MESSAGE_FIELDS: dict[str, tuple[str, ...]] = {
    "real_train_batch_size": ("rollout.prompts_per_step", "rollout.group_size"),
    "minimal possible batch size": ("cluster.nnodes", "cluster.gpus_per_node"),
    "n_gpus": ("cluster.nnodes", "cluster.gpus_per_node"),
}


def tirlab_fields(text: str) -> list[str]:
    """The tirlab fields behind a verl key, or behind the keys and quantities a verl error message names
    (longest keys first, so `rollout.val_kwargs.n` is not also read as `rollout.n`); [] when none is known."""
    key = text.strip().lstrip("+")
    if key in KEY_FIELDS:
        return list(KEY_FIELDS[key])
    found: list[str] = []
    rest = text
    for name in sorted(KEY_NAMES, key=len, reverse=True):
        pattern = rf"(?<![\w.]){re.escape(name)}(?![\w])"
        if re.search(pattern, rest):
            found += KEY_NAMES[name]
            rest = re.sub(pattern, " ", rest)
    for phrase, fields in MESSAGE_FIELDS.items():
        if phrase in rest:
            found += fields
            rest = rest.replace(phrase, " ")
    return list(dict.fromkeys(found))
