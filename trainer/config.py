"""The typed configuration of one training run.

`RunConfig` is the single source of truth for what a run accepts: the
dashboard renders its form from `config_json_schema()`, the API answers 400
with `ConfigError.errors`, and `validate_config(data).model_dump(mode="json")`
is the resolved snapshot a run stores.
"""

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from trainer.rewards import REWARD_NAMES, validate_reward_params
from trainer.rewards.params import FieldErrors, field_errors

TINY_MODEL = "tirlab/tiny-char"
# A dataset reference of this form names a dashboard upload by id; only the dashboard resolves it.
DATASET_REF_PREFIX = "dataset:"


class ConfigError(FieldErrors):
    """An invalid run config; `errors` maps dotted field paths to messages."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ModelConfig(_Section):
    """Which policy model is trained, and in which dtype."""

    name_or_path: str = Field(
        TINY_MODEL,
        min_length=1,
        description=f"'{TINY_MODEL}' (tiny CPU model), 'smollm2-135m-instruct', a local HF directory or a hub id.",
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="Weight and compute dtype.")


class DataConfig(_Section):
    """Where prompts come from and how long prompts and responses may be."""

    train_dataset: str = Field(
        "arithmetic",
        min_length=1,
        description=(
            "Built-in name ('arithmetic', 'gsm8k' = the GSM8K train file, 'gsm8k-test'), "
            f"'{DATASET_REF_PREFIX}<id>' for an uploaded one, or a file path."
        ),
    )
    val_dataset: str | None = Field(None, description="Dataset reference for evaluation, same forms as train_dataset.")
    prompt_template: str | None = Field(
        None, description="Template wrapping each question; None uses the tool protocol's default."
    )
    max_prompt_tokens: int = Field(256, ge=1, description="Maximum prompt length in tokens.")
    max_response_tokens: int = Field(256, ge=1, description="Maximum response length in tokens.")


class ToolConfig(_Section):
    """Tool-call syntax, call budget and sandbox limits."""

    protocol: Literal["python_markdown", "retool", "artist", "tool_call_json"] = Field(
        "python_markdown", description="Syntax of tool calls and tool outputs in the response."
    )
    max_tool_calls: int = Field(1, ge=0, description="Tool calls allowed per response (ToRL's C); 0 disables tools.")
    output_max_chars: int = Field(256, ge=1, description="Tool output is truncated to this many characters (ToRL).")
    sandbox_timeout_s: float = Field(10.0, gt=0, description="Wall-clock limit of one tool call in seconds.")
    sandbox_memory_mb: int = Field(1024, ge=1, description="Memory limit of one tool call in MiB.")
    train_on_tool_output: bool = Field(
        False, description="Include tool-output tokens in the loss (normally masked out)."
    )


class RewardSpec(_Section):
    """A reward by name, with parameters validated by trainer.rewards."""

    name: str = Field("torl", description="Reward function name.", json_schema_extra={"enum": list(REWARD_NAMES)})
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of the reward; missing ones take the reward's defaults."
    )

    @model_validator(mode="after")
    def _validate_reward(self) -> "RewardSpec":
        self.params = validate_reward_params(self.name, self.params)
        return self


class RolloutConfig(_Section):
    """How many GRPO groups are sampled per step, and how."""

    prompts_per_step: int = Field(8, ge=1, description="Prompts sampled per training step.")
    group_size: int = Field(8, ge=1, description="Responses sampled per prompt (GRPO's G).")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature; 0 is greedy.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling probability mass.")
    async_rollouts: bool = Field(
        True, description="Generate the next step's rollouts while the current step trains (SkyRL async)."
    )
    trajectories_to_report: int = Field(
        2, ge=0, description="Whole GRPO groups whose trajectories are reported per step."
    )
    backend: Literal["local", "ray"] = Field(
        "local", description="'local' rolls out in the trainer process; 'ray' on Ray actors spread over a cluster."
    )
    replicas: int = Field(
        1, ge=1, description="Rollout replicas (Ray actors, each with its own copy of the policy); backend 'ray'."
    )
    sandbox_actors: int = Field(
        1, ge=1, description="Ray actors executing tool calls, each with its own sandbox pool; backend 'ray'."
    )

    @model_validator(mode="after")
    def _check_ray_only_fields(self) -> "RolloutConfig":
        if self.backend == "local":
            errors = {
                name: ["needs backend 'ray'; the local backend runs one rollout in the trainer process"]
                for name in ("replicas", "sandbox_actors")
                if getattr(self, name) != 1
            }
            if errors:
                raise ConfigError(errors)
        return self


class OptimConfig(_Section):
    """Learning rate, its schedule, gradient clipping and epochs per step."""

    learning_rate: float = Field(1e-5, gt=0, description="Peak learning rate.")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field(
        "constant", description="Learning-rate decay after warmup."
    )
    warmup_steps: int = Field(0, ge=0, description="Steps of linear warmup from 0 to the peak learning rate.")
    grad_clip: float = Field(1.0, ge=0, description="Maximum gradient norm; 0 disables clipping.")
    ppo_epochs: int = Field(1, ge=1, description="Optimisation passes over each step's rollouts.")


class GRPOConfig(_Section):
    """Clipping, KL, aggregation and advantage normalisation of the GRPO loss."""

    clip_low: float = Field(0.2, ge=0, description="Lower clip range of the importance ratio (1 - clip_low).")
    clip_high: float = Field(
        0.28, ge=0, description="Upper clip range of the importance ratio (1 + clip_high; DAPO clip-higher)."
    )
    kl_coef: float = Field(
        0.0, ge=0, description="Weight of the k3 KL penalty to the reference model, loaded only when > 0."
    )
    loss_agg: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = Field(
        "token-mean", description="How per-token losses are aggregated into the batch loss."
    )
    scale_by_std: bool = Field(True, description="Divide advantages by the group's reward std (False = Dr. GRPO).")
    entropy_coef: float = Field(0.0, ge=0, description="Weight of the entropy bonus.")


class FilterConfig(_Section):
    """Which GRPO groups are kept for training."""

    drop_all_same_reward: bool = Field(
        False, description="Drop groups whose responses all got the same reward (zero advantage)."
    )
    accuracy_min: float | None = Field(
        None, ge=0, le=1, description="Drop groups whose accuracy is below this (ZeroTIR keeps 0.05-0.8)."
    )
    accuracy_max: float | None = Field(
        None, ge=0, le=1, description="Drop groups whose accuracy is above this (ZeroTIR keeps 0.05-0.8)."
    )
    max_resample_batches: int = Field(
        0, ge=0, description="Extra rollout batches sampled per step to refill groups that were dropped."
    )

    @model_validator(mode="after")
    def _check_accuracy_range(self) -> "FilterConfig":
        low, high = self.accuracy_min, self.accuracy_max
        if low is not None and high is not None and low > high:
            raise ConfigError({"accuracy_min": [f"must be <= accuracy_max ({high})"]})
        return self


class SFTConfig(_Section):
    """Supervised cold start before RL (ReTool).

    Enabling it requires a dataset, except with the tiny quickstart model,
    which builds its own synthetic tool-use traces.
    """

    enabled: bool = Field(False, description="Run supervised fine-tuning before RL.")
    dataset: str | None = Field(
        None, description=f"Dataset reference of SFT traces; required when enabled, unless the model is {TINY_MODEL}."
    )
    epochs: int = Field(1, ge=1, description="Passes over the SFT dataset.")
    learning_rate: float = Field(1e-4, gt=0, description="SFT learning rate.")


class ScheduleConfig(_Section):
    """How long the run lasts and how often it evaluates, checkpoints and reports liveness."""

    max_steps: int = Field(20, ge=1, description="Training steps to run.")
    eval_every: int = Field(0, ge=0, description="Evaluate every this many steps; 0 never evaluates.")
    eval_pass_k: int = Field(1, ge=1, description="Samples per evaluation prompt for pass@k.")
    checkpoint_every: int = Field(
        0, ge=0, description="Save a checkpoint every this many steps; 0 disables periodic checkpoints."
    )
    heartbeat_s: float = Field(5.0, gt=0, description="Seconds between liveness heartbeats of the trainer.")


class RunConfig(_Section):
    """Everything a training run needs."""

    seed: int = Field(0, ge=0, description="Random seed for sampling, data order and initialisation.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The policy model.")
    engine: Literal["hf", "vllm"] = Field("hf", description="Rollout generation engine.")
    data: DataConfig = Field(default_factory=DataConfig, description="Training and validation data.")
    tools: ToolConfig = Field(default_factory=ToolConfig, description="How the model calls the code sandbox.")
    reward: RewardSpec = Field(default_factory=RewardSpec, description="The reward function and its parameters.")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Sampling of GRPO groups.")
    optim: OptimConfig = Field(default_factory=OptimConfig, description="Optimizer and learning-rate schedule.")
    grpo: GRPOConfig = Field(default_factory=GRPOConfig, description="GRPO loss.")
    filtering: FilterConfig = Field(default_factory=FilterConfig, description="Which GRPO groups are kept.")
    sft: SFTConfig = Field(default_factory=SFTConfig, description="Supervised cold start before RL (ReTool).")
    schedule: ScheduleConfig = Field(
        default_factory=ScheduleConfig, description="Run length, evaluation and checkpoint cadence."
    )

    @model_validator(mode="after")
    def _check_sft_dataset(self) -> "RunConfig":
        if self.sft.enabled and self.sft.dataset is None and self.model.name_or_path != TINY_MODEL:
            raise ConfigError({"sft.dataset": [f"required when sft.enabled is true, unless the model is {TINY_MODEL}"]})
        return self


def validate_config(data: dict[str, Any]) -> RunConfig:
    """Validate a run config; raise ConfigError with dotted field paths."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(field_errors(exc)) from None


def config_json_schema() -> dict[str, Any]:
    """JSON schema of RunConfig, from which the dashboard renders its form."""
    return RunConfig.model_json_schema()


def default_config() -> dict[str, Any]:
    """The default run config as JSON-ready data."""
    return RunConfig().model_dump(mode="json")


def merge_overrides(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `overrides` into a copy of `base`: dicts merge recursively, anything else replaces."""
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_overrides(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
