"""The shape of a trainer's ingest batch (`POST /api/v1/runs/<id>/ingest`).

Pydantic rather than DRF serializers: a batch carries thousands of metric values and is
validated on the hot path of every trainer report.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StringConstraints

MetricKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_@.:/\-]{1,200}$")]
Number = StrictFloat  # strict: ints are numbers, but true and "1" are not

# What the columns can hold: integer steps and indexes, bigint sequence numbers, and times
# that datetime and PostgreSQL timestamps both represent (before the year 10000).
INT_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1
TIME_MAX = 253_402_300_799.0

MAX_METRIC_STEPS = 10_000
MAX_TRAJECTORIES = 5_000
MAX_LOG_LINES = 10_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MetricStepIn(_Strict):
    step: StrictInt = Field(ge=0, le=INT_MAX, description="Training step.")
    time: Number | None = Field(
        None, ge=0, le=TIME_MAX, description="Unix time the trainer recorded the step; default: received."
    )
    values: dict[MetricKey, Number | None] = Field(
        max_length=2000, description="Metric name → value (null when undefined, e.g. NaN)."
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


class TrajectoryIn(_Strict):
    step: StrictInt = Field(ge=0, le=INT_MAX)
    prompt_index: StrictInt = Field(ge=0, le=INT_MAX, description="Index of the prompt (GRPO group) within the step.")
    sample_index: StrictInt = Field(ge=0, le=INT_MAX, description="Index of the sample within its group.")
    prompt: str | list[ChatMessage]
    turns: list[TurnIn] = Field(default_factory=list, max_length=1000)
    final_answer: str = ""
    ground_truth: Any = None
    reward: Number
    reward_components: dict[MetricKey, Number | None] = Field(default_factory=dict)
    correct: StrictBool
    tool_call_count: StrictInt = Field(0, ge=0, le=INT_MAX)
    truncated: StrictBool = False
    prompt_tokens: StrictInt | None = Field(None, ge=0, le=INT_MAX)
    response_tokens: StrictInt | None = Field(None, ge=0, le=INT_MAX)


class LogLineIn(_Strict):
    seq: StrictInt = Field(
        ge=0, le=BIGINT_MAX, description="Trainer's sequence number of the line; a retry with it is ignored."
    )
    time: Number | None = Field(None, ge=0, le=TIME_MAX)
    level: Literal["debug", "info", "warning", "error"] = "info"
    message: str = Field(max_length=100_000)


class StatusIn(_Strict):
    status: Literal["running", "succeeded", "failed", "cancelled"]
    error: str = Field("", max_length=100_000)
    checkpoint: str | None = Field(None, max_length=500, description="Location of the latest checkpoint.")


class IngestBatch(_Strict):
    """Everything a trainer reports; each batch also counts as a heartbeat."""

    metrics: list[MetricStepIn] = Field(default_factory=list, max_length=MAX_METRIC_STEPS)
    trajectories: list[TrajectoryIn] = Field(default_factory=list, max_length=MAX_TRAJECTORIES)
    logs: list[LogLineIn] = Field(default_factory=list, max_length=MAX_LOG_LINES)
    heartbeat: StrictBool = Field(True, description="Accepted for clarity; every batch is a heartbeat.")
    status: StatusIn | None = None
