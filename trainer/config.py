"""The typed configuration of one training run.

`RunConfig` is the single source of truth for what a run accepts: the
dashboard renders its form from `config_json_schema()`, the API answers 400
with `ConfigError.errors`, and `validate_config(data).model_dump(mode="json")`
is the resolved snapshot a run stores.
"""

import copy
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainer.contract import DATASET_REF_PREFIX, FieldErrors, field_errors
from trainer.data.corpora import BUILTIN_CORPORA
from trainer.envs import ENVIRONMENT_NAMES
from trainer.protocols import PROTOCOL_NAMES, default_environment, get_protocol
from trainer.protocols.feedback import DEFAULT_MAX_OUTPUT_CHARS, FeedbackStyle
from trainer.protocols.prompts import PromptTemplateError, resolve_template
from trainer.rewards import REWARD_NAMES, validate_reward_params

TINY_MODEL = "tirlab/tiny-char"
# The same architecture and tokenizer, randomly initialised: what the tiny model's cold start starts from.
TINY_INIT_MODEL = "tirlab/tiny-char-init"
# The same, trained as a base model (arithmetic text and Python notebooks, no tool call): where zero RL starts.
TINY_BASE_MODEL = "tirlab/tiny-char-base"
# The cold start fine-tuned to ARTIST's format (one multiplication per call): where artist-mini's RL starts.
TINY_ARTIST_MODEL = "tirlab/tiny-char-artist"
# The cold start fine-tuned to ReTool's <code>/<interpreter> syntax, as retool-mini's SFT stage did in every run.
TINY_RETOOL_MODEL = "tirlab/tiny-char-retool"
# The cold start fine-tuned to emit JSON function calls (ToolRL's layout): RL with ToolRL's reward on CPU starts here.
TINY_FC_MODEL = "tirlab/tiny-char-fc"
# That model fine-tuned to be undecided where ToolRL's reward can decide (trainer.models.tiny.function_calling):
# toolrl-mini's start.
TINY_TOOLRL_MODEL = "tirlab/tiny-char-toolrl"
# That model taught Tool-N1's layout of calls (one JSON list, "arguments"), undecided as the one above: tool-n1-mini's.
TINY_TOOL_N1_MODEL = "tirlab/tiny-char-tool-n1"
# The JSON-call model taught ARTIST's multi-turn syntax on tool chains, unsure of looking flights up: artist-fc-mini's.
TINY_ARTIST_FC_MODEL = "tirlab/tiny-char-artist-fc"
# The cold start taught codeact_mini's three tools on swe-mini repositories, unsure of the fix and of when to stop.
TINY_SWE_MODEL = "tirlab/tiny-char-swe"
# The cold start taught Search-R1's <search>/<answer> tags on search-mini, unsure of how many searches a question needs.
TINY_SEARCH_MODEL = "tirlab/tiny-char-search"
# The tiny models fine-tuned from the cold start by a recipe (trainer.models.loading.DERIVED).
TINY_DERIVED_MODELS = (
    TINY_ARTIST_MODEL,
    TINY_RETOOL_MODEL,
    TINY_FC_MODEL,
    TINY_TOOLRL_MODEL,
    TINY_TOOL_N1_MODEL,
    TINY_ARTIST_FC_MODEL,
    TINY_SWE_MODEL,
    TINY_SEARCH_MODEL,
)
TINY_MODELS = (TINY_MODEL, TINY_INIT_MODEL, TINY_BASE_MODEL, *TINY_DERIVED_MODELS)
# Trace sets tirlab generates (trainer.sft.data.BUILTIN_TRACES), and the protocol each is written in; here
# because the dashboard validates configs with this module without loading the trainer.
BUILTIN_SFT_TRACES = {
    "tiny-cold-start": "python_markdown",
    "retool-mini-sft": "retool",
    "artist-mini-sft": "artist",
    "fc-mini-sft": "tool_call_json",
    "toolrl-mini-sft": "tool_call_json",
    "tool-n1-mini-sft": "tool_call_json",
    "artist-fc-mini-sft": "artist_fc",
    "swe-mini-sft": "codeact_mini",
    "search-mini-copy": "search_r1",
    "search-mini-read": "search_r1",
    "search-mini-sft": "search_r1",
}
# Search-R1's retriever.topk (PeterGriffinJin/Search-R1 @a14dc3a train_grpo.sh:81).
DEFAULT_SEARCH_TOPK = 3


class ConfigError(FieldErrors):
    """An invalid run config; `errors` maps dotted field paths to messages."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ModelConfig(_Section):
    """Which policy model is trained, and in which dtype."""

    name_or_path: str = Field(
        TINY_MODEL,
        min_length=1,
        description=(
            f"'{TINY_MODEL}' (tiny CPU model, shipped cold-started for arithmetic tool use), '{TINY_INIT_MODEL}' "
            "(the same model randomly initialised: give it an SFT cold start), 'smollm2-135m-instruct', a local HF "
            "directory or a hub id."
        ),
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="Weight and compute dtype.")
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description=(
            "Where the policy trains, and with engine 'hf' also generates: 'auto' is the GPU when one is visible, "
            "else the CPU. Engine 'vllm' always trains on the GPU it generates on."
        ),
    )


class DataConfig(_Section):
    """Where prompts come from and how long prompts and responses may be."""

    train_dataset: str = Field(
        "arithmetic",
        min_length=1,
        description=(
            "Built-in name ('arithmetic[:level]', 'function-calling[:easy|hard|mixed]' = generated JSON tool calls, "
            "'gsm8k' = the GSM8K train file, 'gsm8k-test', 'toolrl-test' = "
            "ToolRL's test set, 'torl-test' = ToRL's test set, which you download), "
            f"'{DATASET_REF_PREFIX}<id>' for an uploaded one, or a file path."
        ),
    )
    val_dataset: str | None = Field(None, description="Dataset reference for evaluation, same forms as train_dataset.")
    extra_val_datasets: list[str] = Field(
        default_factory=list,
        description=(
            "More datasets evaluated with val_dataset, same forms as train_dataset. Every evaluated row is reported "
            "under its data source's benchmark (bench/<data_source>/accuracy, …; trainer.metrics.benchmarks)."
        ),
    )
    prompt_template: str | None = Field(
        None,
        description=(
            "Template wrapping each question (trainer.protocols.prompts: 'torl' is ToRL's raw completion prompt, "
            "'torl-chat', 'retool', 'artist', 'toolrl', 'tool_n1', 'plain', or text with {question}); "
            "None uses the tool protocol's default."
        ),
    )
    max_prompt_tokens: int = Field(256, ge=1, description="Maximum prompt length in tokens.")
    overlong_prompts: Literal["truncate", "drop"] = Field(
        "truncate",
        description=(
            "A prompt over max_prompt_tokens: 'truncate' keeps its last tokens; 'drop' removes the row from "
            "the train and validation data at load time, as ToRL does (a raw prompt must have at most "
            "max_prompt_tokens - 10 tokens, a chat prompt at most max_prompt_tokens)."
        ),
    )
    max_response_tokens: int = Field(256, ge=1, description="Maximum response length in tokens.")

    @field_validator("prompt_template")
    @classmethod
    def _known_template(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                resolve_template(value)
            except PromptTemplateError as exc:
                raise ValueError(str(exc)) from None
        return value


# The choices, as their registries hold them: each protocol and environment registers itself in its own file. A run
# can take a protocol only once an environment that runs its calls is registered (search_r1's 'search' is not yet:
# the protocol renders and previews traces, and a run cannot choose it).
RUN_PROTOCOLS = tuple(name for name in PROTOCOL_NAMES if default_environment(name) in ENVIRONMENT_NAMES)
ProtocolName = Literal[RUN_PROTOCOLS]  # type: ignore[valid-type]
EnvironmentName = Literal[ENVIRONMENT_NAMES]  # type: ignore[valid-type]


class ToolConfig(_Section):
    """Tool-call syntax, call budget and sandbox limits."""

    protocol: ProtocolName = Field(
        "python_markdown", description="Syntax of tool calls and tool outputs in the response."
    )
    environment: EnvironmentName | None = Field(
        None,
        description=(
            "What a call does (trainer.envs): 'python' runs the call's code in the sandbox (the code "
            "protocols); 'none' runs nothing, the calls are scored as written (tool_call_json, as ToolRL and "
            "Tool-N1 train); 'function_calling' runs each call block's JSON calls against the offered tools in "
            "the sandbox and feeds the results back (tool_call_json's <tool_response>, multi-turn; artist_fc's "
            "<tool_result>, its only one). None uses the protocol's default: 'python', 'none' for "
            "tool_call_json, 'function_calling' for artist_fc."
        ),
    )
    max_tool_calls: int = Field(1, ge=0, description="Tool calls allowed per response (ToRL's C); 0 disables tools.")
    feedback: FeedbackStyle = Field(
        "torl",
        description=(
            "Text fed back after a call, in the style of a paper's code: 'torl' (ToRL's rollout: stdout when "
            "the run exited 0 or printed, else stderr; the last line of any text with 'Error'), 'zerotir' "
            "(ZeroTIR: stdout, or stderr without file names; over 256 tokens, a 'too long' message), "
            "'retool' (ReTool's recipe: stdout and stderr, 'no stdout here' on a timeout), or 'tirlab' "
            "(the last traceback line, a status message naming the limit hit, and a hint on empty output). "
            "With 'torl' and 'zerotir' a stop at the tool marker without a complete call adds nothing; "
            "with 'tirlab' it gets an error output. Each call uses up one of max_tool_calls."
        ),
    )
    output_max_chars: int = Field(
        256,
        ge=1,
        description="Tool output is cut to this many characters (ToRL; ReTool's max_tool_response_length); "
        "'zerotir' feedback caps at 256 tokens instead.",
    )
    sandbox_timeout_s: float = Field(10.0, gt=0, description="Wall-clock limit of one tool call in seconds.")
    sandbox_memory_mb: int = Field(1024, ge=1, description="Memory limit of one tool call in MiB.")
    train_on_tool_output: bool = Field(
        False, description="Include tool-output tokens in the loss (normally masked out)."
    )
    search_corpus: str | None = Field(
        None,
        description=(
            "Environment 'search': the corpus searched in-process with BM25 (tirlab's retrieval service), a "
            f"built-in one ({', '.join(BUILTIN_CORPORA)}), '{DATASET_REF_PREFIX}<id>' for one registered on the "
            'dashboard, or the path of a jsonl file in Search-R1\'s format ({"id", "contents"} a line).'
        ),
    )
    search_url: str | None = Field(
        None,
        description=(
            "Environment 'search': an external retrieval server's POST /retrieve URL instead of a corpus "
            "(Search-R1's own E5 server, or `python -m retrieval serve`), asked as Search-R1 asks it."
        ),
    )
    search_topk: int = Field(
        DEFAULT_SEARCH_TOPK, ge=1, le=50, description="Environment 'search': passages returned per search."
    )

    @property
    def run_environment(self) -> str:
        """The environment the calls run in: `environment`, or the protocol's default."""
        return self.environment or default_environment(self.protocol)

    @model_validator(mode="after")
    def _check_environment(self) -> "ToolConfig":
        allowed = get_protocol(self.protocol).environments
        if self.environment is not None and self.environment not in allowed:
            names = " or ".join(f"'{name}'" for name in allowed)
            message = f"protocol '{self.protocol}' runs its calls in {names}, not '{self.environment}'"
            raise ConfigError({"environment": [message]})
        return self

    @model_validator(mode="after")
    def _check_search(self) -> "ToolConfig":
        fields = {"search_corpus": self.search_corpus, "search_url": self.search_url}
        if self.run_environment != "search":
            errors = {
                name: [f"needs tools.environment 'search'; this run's calls run in '{self.run_environment}'"]
                for name, value in (*fields.items(), ("search_topk", self.search_topk))
                if value is not None and value != DEFAULT_SEARCH_TOPK
            }
            if errors:
                raise ConfigError(errors)
            return self
        if (self.search_corpus is None) == (self.search_url is None):
            message = "the search environment needs a corpus to search or a retrieval URL to ask: give one of the two"
            raise ConfigError({"search_corpus": [message]})
        if self.search_url is not None and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", self.search_url):
            raise ConfigError(
                {"search_url": ["expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/retrieve"]}
            )
        if self.search_corpus is not None and not self.search_corpus.strip():
            raise ConfigError({"search_corpus": ["expected a corpus name, a dataset:<id> or a file path"]})
        return self

    @model_validator(mode="after")
    def _check_output_cap(self) -> "ToolConfig":
        # ZeroTIR's cap is 256 tokens of the whole output block, fixed in its code
        # (env/math/math_tir_process_single_request.py:306 @d154c0a); a character cap would be ignored.
        if self.feedback == "zerotir" and self.output_max_chars != DEFAULT_MAX_OUTPUT_CHARS:
            message = f"'zerotir' feedback caps outputs at 256 tokens; leave it at {DEFAULT_MAX_OUTPUT_CHARS}"
            raise ConfigError({"output_max_chars": [message]})
        return self


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
        False,
        description=(
            "One step off-policy (SkyRL-style): step t+1 is rolled out, by a copy of the weights step t starts "
            "from, while step t trains; the importance ratio is taken against that copy's log-probs "
            "(async/staleness 1 from the second step on). False: sample, then train (verl)."
        ),
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
    mini_batch_prompts: int | None = Field(
        None,
        ge=1,
        description=(
            "Prompts (whole GRPO groups) per optimizer step, as verl's actor.ppo_mini_batch_size: each epoch "
            "takes one optimizer step per mini-batch, in order, against the log-probs of the policy that "
            "sampled, so later mini-batches are off-policy. At most rollout.prompts_per_step; "
            "None = one optimizer step per epoch over the whole step."
        ),
    )


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
    clip_ratio_c: float | None = Field(
        None,
        gt=1,
        description=(
            "Dual clip (verl's clip_ratio_c): a negative-advantage token's loss is at most -A * c, so a "
            "ratio far above 1 cannot blow it up. Must be > 1; None disables it (the verl that ToRL, "
            "ToolRL and Tool-N1 vendor has no dual clip)."
        ),
    )


class FilterConfig(_Section):
    """Which rollouts are trained on: whole GRPO groups, then single samples of the kept groups
    (ZeroTIR's replay filters; trainer.loop.filters says how a dropped sample still counts in its
    group's advantage baseline). Each rule's drop count is a `filter/...` metric of the step."""

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
    drop_truncated_unsolved: bool = Field(
        False,
        description=(
            "Leave out of the loss each sample cut at max_response_tokens that is not correct (ZeroTIR's "
            "overlong filter); it still counts in its group's advantage baseline and accuracy."
        ),
    )
    repeatness_max: float | None = Field(
        None,
        ge=0,
        le=1,
        description=(
            "Leave out of the loss each sample with no accepted answer (not correct, and the reward found no "
            "answer) whose repeatness is above this: the share of its substring occurrences, tool outputs "
            "included, that repeat another (ZeroTIR's suffix-array score; ZeroTIR: 0.2). None: not checked."
        ),
    )
    trigram_repetition_max: float | None = Field(
        None,
        ge=0,
        le=1,
        description=(
            "Leave out of the loss each sample with no accepted answer whose share of repeated word 3-grams "
            "(1 - distinct / all) is above this (ZeroTIR: 0.6; a sample over either this or repeatness_max "
            "counts as repetitive). None: not checked."
        ),
    )
    drop_shortcut: bool = Field(
        False,
        description=(
            "Leave out of the loss each correct sample whose ```python blocks opened, ```python blocks closed, "
            "```output blocks and executed calls are not all equal in number: an answer reached with output it "
            "wrote itself or with code that never ran (ZeroTIR's shortcut filter; tools.protocol python_markdown)."
        ),
    )

    @model_validator(mode="after")
    def _check_accuracy_range(self) -> "FilterConfig":
        low, high = self.accuracy_min, self.accuracy_max
        if low is not None and high is not None and low > high:
            raise ConfigError({"accuracy_min": [f"must be <= accuracy_max ({high})"]})
        return self


class SFTConfig(_Section):
    """Supervised cold start before RL (ReTool): the loaded model is fine-tuned on traces of tool use
    (trainer.sft.data), then RL starts from the result, which is also the KL reference."""

    enabled: bool = Field(False, description="Fine-tune on sft.dataset before RL.")
    dataset: str | None = Field(
        None,
        description=(
            "SFT traces, required when enabled: a built-in set ("
            + ", ".join(f"'{name}'" for name in BUILTIN_SFT_TRACES)
            + f"), '{DATASET_REF_PREFIX}<id>' for an upload, or a JSONL file path "
            "(trainer.data.datasets.sft_traces gives the format)."
        ),
    )
    epochs: int = Field(1, ge=1, description="Passes over the SFT traces.")
    learning_rate: float = Field(
        1e-4, gt=0, description="Peak SFT learning rate (linear warmup over 5% of the steps, cosine decay to a tenth)."
    )
    batch_size: int = Field(32, ge=1, description="Traces per SFT optimizer step.")


class ScheduleConfig(_Section):
    """How long the run lasts and how often it evaluates, checkpoints and reports liveness."""

    max_steps: int = Field(20, ge=1, description="Training steps to run.")
    eval_every: int = Field(0, ge=0, description="Evaluate every this many steps; 0 never evaluates.")
    eval_pass_k: int = Field(
        1,
        ge=1,
        description=(
            "Samples per evaluation prompt: 1 evaluates greedily; k > 1 adds a pass of k samples per prompt "
            "(avg@k, pass@k) at eval_temperature."
        ),
    )
    eval_temperature: float | None = Field(
        None,
        gt=0,
        description="Temperature of the evaluation's k samples (eval_pass_k > 1); None: rollout.temperature.",
    )
    eval_before_train: bool = Field(
        False,
        description=(
            "Also evaluate the starting policy before the first step, reported with step 0 (verl's "
            "trainer.val_before_train): the baseline a learning curve starts from. Needs data.val_dataset."
        ),
    )
    checkpoint_every: int = Field(
        0, ge=0, description="Save a checkpoint every this many steps; 0 disables periodic checkpoints."
    )
    heartbeat_s: float = Field(5.0, gt=0, description="Seconds between liveness heartbeats of the trainer.")


class ClusterConfig(_Section):
    """The GPU cluster a run of engine 'verl' trains on (verl's trainer.nnodes / n_gpus_per_node and its
    rollout's tensor parallelism); tirlab's own trainer is one process and refuses other values."""

    nnodes: int = Field(1, ge=1, description="Nodes of the cluster (verl's trainer.nnodes); engine 'verl'.")
    gpus_per_node: int = Field(
        1, ge=1, description="GPUs on each node (verl's trainer.n_gpus_per_node); engine 'verl'."
    )
    tensor_parallel: int = Field(
        1,
        ge=1,
        description=(
            "GPUs that hold one copy of the model for generation (verl's rollout.tensor_model_parallel_size); "
            "must divide nnodes x gpus_per_node; engine 'verl'."
        ),
    )


class RunConfig(_Section):
    """Everything a training run needs."""

    seed: int = Field(0, ge=0, description="Random seed for sampling, data order and initialisation.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The policy model.")
    engine: Literal["hf", "vllm", "verl"] = Field(
        "hf",
        description=(
            "Who generates and trains: 'hf' (tirlab's trainer, Hugging Face generation, CPU or GPU), 'vllm' "
            "(tirlab's trainer, vLLM generation, one GPU), or 'verl' (verl 0.9.1 trains the run across the GPU "
            "cluster of the cluster section, with tirlab's prompts, tool protocol and reward inside it; "
            "docs/verl.md)."
        ),
    )
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
    cluster: ClusterConfig = Field(
        default_factory=ClusterConfig, description="The GPU cluster of an engine 'verl' run."
    )

    @model_validator(mode="after")
    def _check_cluster_fields(self) -> "RunConfig":
        if self.engine != "verl":
            default = ClusterConfig()
            errors = {
                f"cluster.{name}": [f"needs engine 'verl'; engine '{self.engine}' trains in one process"]
                for name in ClusterConfig.model_fields
                if getattr(self.cluster, name) != getattr(default, name)
            }
            if errors:
                raise ConfigError(errors)
        return self

    @model_validator(mode="after")
    def _check_sft_dataset(self) -> "RunConfig":
        dataset = self.sft.dataset
        if self.sft.enabled and dataset is None:
            builtins = ", ".join(f"'{name}'" for name in BUILTIN_SFT_TRACES)
            raise ConfigError({"sft.dataset": [f"required when sft.enabled is true (built-in traces: {builtins})"]})
        written_in = BUILTIN_SFT_TRACES.get(dataset or "")
        if self.sft.enabled and written_in is not None and written_in != self.tools.protocol:
            raise ConfigError(
                {
                    "sft.dataset": [
                        f"'{dataset}' is written in the '{written_in}' protocol but tools.protocol is "
                        f"'{self.tools.protocol}': the model would learn calls the rollout does not run"
                    ]
                }
            )
        return self

    @model_validator(mode="after")
    def _check_shortcut_filter(self) -> "RunConfig":
        # ZeroTIR's shortcut filter counts ```python and ```output blocks: defined for that syntax only.
        if self.filtering.drop_shortcut and self.tools.protocol != "python_markdown":
            protocol = self.tools.protocol
            message = f"counts ```python/```output blocks: needs tools.protocol 'python_markdown', not '{protocol}'"
            raise ConfigError({"filtering.drop_shortcut": [message]})
        return self

    @model_validator(mode="after")
    def _check_evaluation(self) -> "RunConfig":
        if self.data.extra_val_datasets and not self.data.val_dataset:
            message = "needs data.val_dataset: name the first dataset to evaluate there"
            raise ConfigError({"data.extra_val_datasets": [message]})
        blank = [i for i, ref in enumerate(self.data.extra_val_datasets) if not ref.strip()]
        if blank:
            raise ConfigError({f"data.extra_val_datasets.{blank[0]}": ["expected a dataset reference"]})
        if self.schedule.eval_temperature is not None and self.schedule.eval_pass_k == 1:
            message = "needs schedule.eval_pass_k > 1: one sample per prompt is evaluated greedily"
            raise ConfigError({"schedule.eval_temperature": [message]})
        return self

    @model_validator(mode="after")
    def _check_eval_before_train(self) -> "RunConfig":
        if self.schedule.eval_before_train and not self.data.val_dataset:
            raise ConfigError({"schedule.eval_before_train": ["needs data.val_dataset: there is nothing to evaluate"]})
        if self.schedule.eval_before_train and self.schedule.eval_every == 1:
            message = "with eval_every 1 step 0 is evaluated after its update; the two would share step 0"
            raise ConfigError({"schedule.eval_before_train": [message]})
        return self

    @model_validator(mode="after")
    def _check_mini_batch_prompts(self) -> "RunConfig":
        # verl refuses a mini-batch larger than the step's batch (v0.6.1 verl/workers/config/actor.py:153 @d62da49).
        prompts, per_step = self.optim.mini_batch_prompts, self.rollout.prompts_per_step
        if prompts is not None and prompts > per_step:
            raise ConfigError({"optim.mini_batch_prompts": [f"must be <= rollout.prompts_per_step ({per_step})"]})
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
