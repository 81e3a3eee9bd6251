"""What the trainer and the dashboard both rely on, defined once: run statuses, the metric-key rule,
the size limits, the ingest batch (`POST /api/v1/runs/<id>/ingest`), the setup phases a run goes
through and the headline metric names.

The trainer builds its reports from these models (trainer/report/client.py, trainer/loop/train.py) and names its
headline metrics with these names (trainer/metrics/step.py); the dashboard validates and stores with the
same ones (webapp/runs: models, ingest, API schema) and hands statuses and headline names to its
pages' JavaScript as page data. Nothing else spells them. No Django here: the trainer runs without it.

Pydantic rather than DRF serializers: a batch carries thousands of metric values and is validated on
the hot path of every trainer report. The field descriptions appear in the OpenAPI schema.
"""

import functools
import posixpath
import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

# Invalid input, by field: what a 400 answer and a form show (the run config, reward parameters).
NON_FIELD_KEY = "__all__"
# A dataset reference of this form names a dashboard upload by id; only the dashboard resolves it to a file.
DATASET_REF_PREFIX = "dataset:"


class FieldErrors(ValueError):
    """A ValueError that carries its messages by dotted field path."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{path}: {msg}" for path, msgs in errors.items() for msg in msgs))


def _join(*parts: str) -> str:
    return ".".join(part for part in parts if part and part != NON_FIELD_KEY) or NON_FIELD_KEY


def field_errors(exc: ValidationError, prefix: str = "") -> dict[str, list[str]]:
    """Flatten a pydantic ValidationError into {dotted path: [messages]}.

    A FieldErrors raised by a validator is expanded under the location it was
    raised at, so nested validations keep their own field paths.
    """
    errors: dict[str, list[str]] = {}
    for err in exc.errors():
        path = _join(prefix, *error_path(err))
        cause = err.get("ctx", {}).get("error") if err["type"] == "value_error" else None
        if isinstance(cause, FieldErrors):
            for sub_path, messages in cause.errors.items():
                errors.setdefault(_join(path, sub_path), []).extend(messages)
        else:
            errors.setdefault(path, []).append(str(cause) if cause is not None else err["msg"])
    return errors


# A tagged union's errors carry the member's tag in their location ("outcome.swe.turns"), and a wrong tag is the
# union's own error ("outcome"); the field path says neither: "outcome.turns", "outcome.kind".
_UNION_TAG_ERRORS = {"union_tag_invalid": "kind", "union_tag_not_found": "kind"}
_TAGGED_UNIONS = {"outcome": ("swe", "search")}


def error_path(err: Any) -> list[str]:
    """The field path of one pydantic error, its location without a tagged union's tags."""
    parts = [str(part) for part in err["loc"]]
    path = [part for i, part in enumerate(parts) if not (i and part in _TAGGED_UNIONS.get(parts[i - 1], ()))]
    if err["type"] in _UNION_TAG_ERRORS:
        path.append(_UNION_TAG_ERRORS[err["type"]])
    return path


class RunStatus(StrEnum):
    """queued → starting → running → succeeded | failed | cancelled | lost."""

    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"


ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.STARTING, RunStatus.RUNNING)
FINISHED_STATUSES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.LOST)
# What a trainer may report; of these, the finished ones are final. The dashboard itself queues and
# starts runs, and marks them lost when their heartbeat stops.
TRAINER_STATUSES = (RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
LOG_LEVELS = ("debug", "info", "warning", "error")

# What the columns can hold: integer steps, indexes and token counts, bigint sequence numbers, and
# times that datetime and PostgreSQL timestamps both represent (before the year 10000).
INT_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1
TIME_MAX = 253_402_300_799.0

MAX_METRIC_KEY = 250  # characters of a metric name (MLflow's MAX_ENTITY_KEY_LENGTH; and Run.metric_keys' column)
MAX_METRIC_VALUES = 2_000  # values in one metric step
MAX_TURNS = 1_000  # turns in one trajectory
MAX_LOG_MESSAGE = 100_000  # characters of a log line
MAX_STATUS_ERROR = 100_000  # characters of a run's error
MAX_CHECKPOINT = 500  # characters of a checkpoint location (and of Run.checkpoint_path)
MAX_PHASE_DETAIL = 200  # characters of a phase's detail line
MAX_DATA_SOURCE = 200  # characters of a row's data source (a benchmark's name: aime24, nq, openai/gsm8k)
# Items of one ingest batch.
MAX_METRIC_STEPS = 10_000
MAX_TRAJECTORIES = 5_000
MAX_LOG_LINES = 10_000
MAX_CHECKPOINTS = 1_000

# MLflow's rule for metric names (mlflow/utils/validation.py), so that what verl, TRL or the HF
# Trainer log arrives as they named it ("profiling/Time taken: GRPOTrainer._prepare_inputs",
# "val-core/openai/gsm8k/reward/mean_at_1"): unicode word characters (Python's \w), / . - space
# and :, plus @ (tirlab's own "pass@4"); and, as MLflow's path_not_unique, not a path that
# normalises to another name: no '//', no '.' or '..' part, no leading '/' or '..', no trailing '/'.
# No commas or '#', so a key reads the same in a URL's `?keys=a,b` and in a chart title. The pattern
# is the characters and the length; is_metric_key is the whole rule.
METRIC_KEY_PATTERN = rf"^[\w/.\- :@]{{1,{MAX_METRIC_KEY}}}$"
_METRIC_KEY = re.compile(METRIC_KEY_PATTERN)


@functools.lru_cache(maxsize=4096)
def _is_metric_key(key: str) -> bool:
    # Cached: a batch repeats its ~40 keys in every step, and the check (a regex and normpath,
    # ~1 µs) would cost 4 ms of a 100-step batch; cached, the schema's per-key check costs 0.8 ms
    # more than pydantic's own regex did (measured on 100 steps x 40 keys).
    # fullmatch: `$` alone would let a trailing newline through.
    return (
        _METRIC_KEY.fullmatch(key) is not None
        and posixpath.normpath(key) == key
        and key != "."
        and not key.startswith(("..", "/"))
    )


def is_metric_key(key: object) -> bool:
    """Whether `key` is a name the dashboard stores a metric (or reward component) under."""
    # Too long a string is refused before the cache, which would otherwise hold it.
    return isinstance(key, str) and len(key) <= MAX_METRIC_KEY and _is_metric_key(key)


def _metric_key(key: str) -> str:
    if not is_metric_key(key):
        raise ValueError(
            f"not a metric name: 1 to {MAX_METRIC_KEY} letters, digits, spaces and _ - . : / @, "
            "not a path that normalises to another name (no '//', no leading '/' or '..')"
        )
    return key


# What a trainer is doing, in order: loading the model (and its tokenizer, data and engine), an SFT
# cold start, then the GRPO steps; an evaluation run (`python -m trainer evaluate`) loads, then evaluates.
# The run page shows the phase until the first metric arrives.
LOADING = "loading"
SFT = "sft"
RL = "rl"
EVAL = "eval"
PHASES = (LOADING, SFT, RL, EVAL)

# The SFT cold start's metrics (trainer.sft.phase): keys under "sft/", by SFT optimizer step (1, 2, …)
# -- their own step axis, not the RL steps'. They do not move a run's last step, their steps have no
# rollouts, and the run page charts them against their step: a step's one stored time is the RL
# step's once RL reaches that number (the steps' rows are shared).
SFT_METRIC_PREFIX = "sft/"
SFT_LOSS = "sft/loss"


def is_sft_metric(key: str) -> bool:
    """Whether `key` is one of the SFT cold start's metrics, on the SFT's own step axis."""
    return key.startswith(SFT_METRIC_PREFIX)


# The run page draws these first, in this order, and prefetches their series.
ACCURACY = "accuracy"
TOOL_CALL_RATIO = "tool_call_ratio"
CODE_IN_CORRECT = "code_in_correct"
RESPONSE_LENGTH_MEAN = "response_length/mean"
TOOL_PRODUCTIVITY = "tool_productivity"
HEADLINE_METRICS = (ACCURACY, TOOL_CALL_RATIO, CODE_IN_CORRECT, RESPONSE_LENGTH_MEAN, TOOL_PRODUCTIVITY)
# A function-calling run's (protocol tool_call_json) calls against the ground-truth calls (trainer.metrics.calls),
# with the calls per response: what ToolRL and Tool-N1 report, and its run page draws first instead.
EXACT_MATCH = "calls/exact_match"
NAME_ACCURACY = "calls/name_accuracy"
PARAM_ACCURACY = "calls/param_accuracy"
FORMAT_ERROR_RATIO = "calls/format_error_ratio"
CALL_METRICS = (EXACT_MATCH, NAME_ACCURACY, PARAM_ACCURACY, FORMAT_ERROR_RATIO)
# Multi-turn function calling (protocol artist_fc) adds: the calls' names, in order, are the ground truth's.
SEQUENCE_MATCH = "calls/sequence_match"
TOOL_CALLS_MEAN = "tool_calls/mean"
CALL_HEADLINE_METRICS = (*CALL_METRICS, TOOL_CALLS_MEAN, RESPONSE_LENGTH_MEAN)
# ARTIST's function calling: the tasks done, the call sequences right, then the calls themselves.
MULTI_TURN_HEADLINE_METRICS = (ACCURACY, SEQUENCE_MATCH, *CALL_METRICS, TOOL_CALLS_MEAN, RESPONSE_LENGTH_MEAN)
# Software engineering (the swe environment, SkyRL-v0): the share of trajectories whose patch resolves the
# instance (SWE-bench's "resolved"), how trajectories ended (SkyRL-v0 logs finish_action_ratio, max_turn_ratio
# and stuck_ratio), turns per trajectory, and the patches (trainer.metrics.swe).
SWE_RESOLVE_RATE = "swe/resolve_rate"
SWE_FINISH_RATIO = "swe/finish_action_ratio"
SWE_MAX_TURN_RATIO = "swe/max_turn_ratio"
SWE_STUCK_RATIO = "swe/stuck_ratio"
SWE_TURNS_MEAN = "swe/turns/mean"
SWE_HEADLINE_METRICS = (SWE_RESOLVE_RATE, SWE_FINISH_RATIO, SWE_MAX_TURN_RATIO, SWE_TURNS_MEAN, RESPONSE_LENGTH_MEAN)


# Checked by is_metric_key itself, not by pydantic's regex engine (Rust's \w is not Python's), so
# that the trainer and the dashboard agree on every name; the schema shows the pattern.
MetricKey = Annotated[
    str,
    AfterValidator(_metric_key),
    WithJsonSchema({"type": "string", "pattern": METRIC_KEY_PATTERN, "minLength": 1, "maxLength": MAX_METRIC_KEY}),
]
Number = StrictFloat  # strict: ints are numbers, but true and "1" are not


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MetricStepIn(_Strict):
    step: StrictInt = Field(ge=0, le=INT_MAX, description="Training step.")
    time: Number | None = Field(
        None, ge=0, le=TIME_MAX, description="Unix time the trainer recorded the step; default: received."
    )
    values: dict[MetricKey, Number | None] = Field(
        max_length=MAX_METRIC_VALUES, description="Metric name → value (null when undefined, e.g. NaN)."
    )


class ChatMessage(_Strict):
    role: str
    content: str


class TurnIn(_Strict):
    kind: Literal["model", "tool"] = Field(description="Model-generated text, or a tool's output.")
    text: str = Field(description="The model's text, or the tool output as fed back to the model.")
    call: str | None = Field(None, description="The tool call the model made (code, or JSON calls).")
    status: str | None = Field(None, description="Tool outcome: ok, error, timeout, memory_exceeded, …")
    duration_ms: Number | None = Field(None, ge=0, description="Tool execution time.")


MAX_SWE_TEST_NAME, MAX_SWE_TEST_MESSAGE = 2_000, 10_000


class SweTestIn(_Strict):
    name: str = Field(max_length=MAX_SWE_TEST_NAME, description="The test's id, e.g. tests/test_f.py::test_add.")
    kind: Literal["FAIL_TO_PASS", "PASS_TO_PASS"]
    passed: StrictBool
    message: str = Field("", max_length=MAX_SWE_TEST_MESSAGE, description="The failure's last line.")


SWE_ENDS = ("finished", "max_turns", "stuck", "context_full", "no_call")
# An instance's FAIL_TO_PASS + PASS_TO_PASS: a real SWE-Gym / SWE-bench instance's PASS_TO_PASS can run past a
# thousand ids (parametrized tests), more than MAX_TURNS.
MAX_SWE_TESTS = 20_000


class SweOutcomeIn(_Strict):
    """How a software-engineering trajectory ended, its patch and the hidden tests' results (trainer.envs.swe)."""

    kind: Literal["swe"]
    end: Literal[SWE_ENDS] = Field(description="finish called, the turn limit, the stuck detector, the context full.")
    turns: StrictInt = Field(ge=0, le=INT_MAX)
    calls: StrictInt = Field(0, ge=0, le=INT_MAX)
    format_errors: StrictInt = Field(0, ge=0, le=INT_MAX)
    patch: str = Field("", max_length=MAX_LOG_MESSAGE, description="git diff of the repository against its base.")
    patch_lines: StrictInt = Field(0, ge=0, le=INT_MAX)
    applied: StrictBool
    apply_log: str = Field("", max_length=MAX_LOG_MESSAGE)
    resolved: StrictBool
    tests: list[SweTestIn] = Field(default_factory=list, max_length=MAX_SWE_TESTS)


SEARCH_ENDS = ("answered", "max_turns", "context_full", "no_answer")
MAX_SEARCHES, MAX_PASSAGES = 1_000, 100
MAX_SEARCH_QUERY, MAX_PASSAGE_TITLE, MAX_PASSAGE_TEXT = 10_000, 1_000, 10_000


class PassageIn(_Strict):
    id: str = Field(max_length=MAX_PASSAGE_TITLE, description="The passage's id in its corpus.")
    title: str = Field("", max_length=MAX_PASSAGE_TITLE)
    score: Number | None = Field(None, description="The retriever's score; None when it gave none.")
    text: str = Field("", max_length=MAX_PASSAGE_TEXT, description="The passage after its title (its start).")


class SearchIn(_Strict):
    query: str = Field(max_length=MAX_SEARCH_QUERY)
    passages: list[PassageIn] = Field(default_factory=list, max_length=MAX_PASSAGES)


class SearchOutcomeIn(_Strict):
    """How a search trajectory ended, Search-R1's counts of its actions and each search with its passages
    (trainer.envs.search)."""

    kind: Literal["search"]
    end: Literal[SEARCH_ENDS] = Field(description="an answer, the turn limit, the context full, or none of them.")
    actions: StrictInt = Field(ge=0, le=INT_MAX, description="Search-R1's turns_stats: 1 + searches + invalid turns.")
    valid_actions: StrictInt = Field(0, ge=0, le=INT_MAX)
    valid_searches: StrictInt = Field(0, ge=0, le=INT_MAX)
    searches: list[SearchIn] = Field(default_factory=list, max_length=MAX_SEARCHES)


class TrajectoryIn(_Strict):
    """One sampled rollout of a step: its turns, final answer, reward and token counts."""

    step: StrictInt = Field(ge=0, le=INT_MAX)
    prompt_index: StrictInt = Field(ge=0, le=INT_MAX, description="Index of the prompt (GRPO group) within the step.")
    sample_index: StrictInt = Field(ge=0, le=INT_MAX, description="Index of the sample within its group.")
    prompt: str | list[ChatMessage]
    turns: list[TurnIn] = Field(default_factory=list, max_length=MAX_TURNS)
    final_answer: str = ""
    ground_truth: Any = None
    reward: Number
    reward_components: dict[MetricKey, Number | None] = Field(default_factory=dict)
    correct: StrictBool
    tool_call_count: StrictInt = Field(0, ge=0, le=INT_MAX)
    truncated: StrictBool = False
    prompt_tokens: StrictInt | None = Field(None, ge=0, le=INT_MAX)
    response_tokens: StrictInt | None = Field(None, ge=0, le=INT_MAX)
    data_source: str | None = Field(
        None,
        max_length=MAX_DATA_SOURCE,
        description="The row's data source: the benchmark an evaluation's trajectory belongs to (aime24, nq, …).",
    )
    outcome: Annotated[SweOutcomeIn | SearchOutcomeIn, Field(discriminator="kind")] | None = Field(
        None,
        description="An environment's result of the whole trajectory: the swe environment's patch and tests, the "
        "search environment's searches.",
    )


class LogLineIn(_Strict):
    seq: StrictInt = Field(
        ge=0, le=BIGINT_MAX, description="Trainer's sequence number of the line; a retry with it is ignored."
    )
    time: Number | None = Field(None, ge=0, le=TIME_MAX)
    level: Literal[LOG_LEVELS] = "info"
    message: str = Field(max_length=MAX_LOG_MESSAGE)


class StatusIn(_Strict):
    status: Literal[TRAINER_STATUSES]
    error: str = Field("", max_length=MAX_STATUS_ERROR)
    checkpoint: str | None = Field(None, max_length=MAX_CHECKPOINT, description="Location of the latest checkpoint.")


class CheckpointIn(_Strict):
    """A checkpoint the trainer saved: the step it was saved after (updates done) and where it lies."""

    step: StrictInt = Field(ge=0, le=INT_MAX, description="Training steps done when it was saved.")
    path: str = Field(min_length=1, max_length=MAX_CHECKPOINT, description="Its folder, as the trainer sees it.")


class PhaseIn(_Strict):
    """Where the trainer is in its run and how far it has to go: the latest one reported wins.

    A trainer reports it as it goes (every SFT or RL step; the reporter sends only the latest), so a
    run that spends minutes loading a model or in an SFT cold start shows progress before its first
    metric. `done` of `total` counts the phase's own units: SFT optimizer steps, RL steps (a resumed
    run starts part-way), or 0 of 1 while loading.
    """

    name: Literal[PHASES] = Field(
        description="loading (the model, data, engine), sft (the cold start), rl, or eval (an evaluation run)."
    )
    done: StrictInt = Field(ge=0, le=INT_MAX, description="Units of the phase done so far; at most `total`.")
    total: StrictInt = Field(ge=1, le=INT_MAX, description="Units the phase has in all.")
    eta_s: Number | None = Field(None, ge=0, description="Seconds the phase is expected to take still, if known.")
    detail: str = Field(
        "", max_length=MAX_PHASE_DETAIL, description="A short note shown beside it, e.g. the model being loaded."
    )

    @model_validator(mode="after")
    def _done_within_total(self) -> "PhaseIn":
        if self.done > self.total:
            raise ValueError(f"done ({self.done}) is more than total ({self.total})")
        return self


class IngestBatch(_Strict):
    """Everything a trainer reports; each batch also counts as a heartbeat."""

    metrics: list[MetricStepIn] = Field(default_factory=list, max_length=MAX_METRIC_STEPS)
    trajectories: list[TrajectoryIn] = Field(default_factory=list, max_length=MAX_TRAJECTORIES)
    logs: list[LogLineIn] = Field(default_factory=list, max_length=MAX_LOG_LINES)
    checkpoints: list[CheckpointIn] = Field(
        default_factory=list, max_length=MAX_CHECKPOINTS, description="Checkpoints saved since the last batch."
    )
    heartbeat: StrictBool = Field(True, description="Accepted for clarity; every batch is a heartbeat.")
    status: StatusIn | None = None
    phase: PhaseIn | None = Field(None, description="The trainer's current phase and its progress; the latest wins.")
