"""Reward names and the pydantic models that validate their parameters.

A stored reward preset is a name plus a JSON object of parameters; this module
is the single place that says which names exist, which parameters each one
takes, their paper defaults, and how invalid input is reported (field path ->
messages, ready for an API's 400 answer or a form).
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

NON_FIELD_KEY = "__all__"


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
        path = _join(prefix, *(str(part) for part in err["loc"]))
        cause = err.get("ctx", {}).get("error") if err["type"] == "value_error" else None
        if isinstance(cause, FieldErrors):
            for sub_path, messages in cause.errors.items():
                errors.setdefault(_join(path, sub_path), []).extend(messages)
        else:
            errors.setdefault(path, []).append(str(cause) if cause is not None else err["msg"])
    return errors


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TorlParams(_Params):
    """ToRL: +1 for a correct final answer, -1 otherwise."""

    exec_error_penalty: float = Field(
        0.0,
        ge=0,
        description="Subtracted unless the last tool call ran successfully; a response without a call "
        "is penalised too, as in ToRL (its option is 0.5).",
    )
    answer_from: Literal["response", "model_text"] = Field(
        "response",
        description="Where the last \\boxed{} answer is read: the whole response with tool outputs, as ToRL "
        "scores it, or the model's own text only, which a program printing \\boxed{} cannot fool.",
    )


class RetoolParams(_Params):
    """ReTool: +1 for a correct final answer, -1 otherwise."""

    turn_shaping: bool = Field(
        False, description="Score a wrong answer with k tool calls as min(-0.6, -1 + 0.1k) (verl recipe)."
    )


class OtcPpoParams(_Params):
    """OTC-PPO: correctness scaled by a factor that decays with the number of tool calls."""

    alpha: float = Field(1.0, description="Weight of the tool-efficiency factor on the correctness reward.")
    c: float = Field(3.0, gt=0, description="Smoothness constant c of the cos(m*pi/(2m+c)) tool-call decay.")
    wrong_reward: float = Field(0.0, description="Reward of a wrong answer (paper 0; -1 is an option).")


class OtcGrpoParams(OtcPpoParams):
    """OTC-GRPO: correctness scaled by closeness to the fewest tool calls that solved the prompt."""

    global_min: bool = Field(
        False, description="Use the fewest tool calls seen for the prompt across steps, not only within the group."
    )


class ToolRLParams(_Params):
    """ToolRL: format reward plus fine-grained tool-call matching reward.

    Step s of a tirlab run is ToolRL's step s + 1 (its trainer counts from 1). The switches are
    rlla.py's environment variables, in snake case, off by default as in ToolRL's train_grpo.sh.
    """

    schedule: Literal["constant", "scheduled", "max1_step30_max3"] = Field(
        "constant",
        description="Reward scale over training: constant, smooth dynamic (SCHEDULEREWARD), or correctness "
        "max 1 until ToolRL step 30 then 3 (MAX1STEP30MAX3).",
    )
    with_length: bool = Field(
        False, description="Add ToolRL's length reward in [0, 1]: words of the <think> block over 512 (WITHLENGTH)."
    )
    schedule_length: bool = Field(
        False,
        description="Length reward target grows from 384 words by 256 every 105 steps instead of 512 "
        "(SCHEDULELENGTH; needs with_length).",
    )
    correct_max1: bool = Field(False, description="Correctness reward in [-1, 1] instead of [-3, 3] (CORRECTMAX1).")
    coarse_reward: bool = Field(
        False, description="Correctness is the maximum for an exact call match, else the minimum (COARSEREWARD)."
    )
    refined_reward: bool = Field(
        False,
        description="Tool names and parameter names score only when they match exactly, not by overlap "
        "(REFINEDREWARD).",
    )
    intermediate_reward: bool = Field(
        False,
        description="Each ground-truth call scores 1 only when a predicted call is identical, instead of per "
        "parameter name and value (INTERMEDIATEREWARD).",
    )

    @model_validator(mode="after")
    def _switches_have_effect(self) -> "ToolRLParams":
        errors: dict[str, list[str]] = {}
        if self.schedule_length and not self.with_length:
            errors["schedule_length"] = ["schedule_length changes the length reward: set with_length too"]
        for name in ("refined_reward", "intermediate_reward"):
            if self.coarse_reward and getattr(self, name):
                errors[name] = [f"coarse_reward scores every inexact match as the minimum, so {name} has no effect"]
        if errors:
            raise FieldErrors(errors)
        return self


class ToolN1Params(_Params):
    """Nemotron-Tool-N1: binary format-and-exact-match reward; no parameters."""


class ZeroTIRParams(_Params):
    """ZeroTIR: outcome reward on the final answer."""

    format_penalty: float = Field(0.0, description="Subtracted when the response breaks the answer format.")


class ArtistParams(_Params):
    """ARTIST: answer 2/0, format 0.5 and tool success ratio, all fixed by the paper; no parameters."""


class ArtistFcParams(_Params):
    """ARTIST function calling: state 0.5, function 0.5 and format 0.2 maxima, fixed by the paper; no parameters."""


TermRewardName = Literal["torl", "retool", "otc_ppo", "otc_grpo", "toolrl", "tool_n1", "zerotir", "artist", "artist_fc"]


class WeightedTerm(_Params):
    """One reward of a weighted sum, with its own parameters."""

    name: TermRewardName = Field(description="Reward name of this term (any reward except weighted).")
    weight: float = Field(1.0, description="Multiplier applied to this term's reward.")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of this term's reward, validated against its own schema."
    )

    @model_validator(mode="after")
    def _validate_params(self) -> "WeightedTerm":
        self.params = validate_reward_params(self.name, self.params)
        return self


class WeightedParams(_Params):
    """Weighted sum of other rewards."""

    terms: list[WeightedTerm] = Field(
        default_factory=lambda: [WeightedTerm(name="torl")],
        min_length=1,
        description="Rewards to add up, each with a weight and its own parameters (at least one).",
    )


_PARAMS_MODELS: dict[str, type[BaseModel]] = {
    "torl": TorlParams,
    "retool": RetoolParams,
    "otc_ppo": OtcPpoParams,
    "otc_grpo": OtcGrpoParams,
    "toolrl": ToolRLParams,
    "tool_n1": ToolN1Params,
    "zerotir": ZeroTIRParams,
    "artist": ArtistParams,
    "artist_fc": ArtistFcParams,
    "weighted": WeightedParams,
}

REWARD_NAMES: tuple[str, ...] = tuple(_PARAMS_MODELS)

REWARD_DESCRIPTIONS: dict[str, str] = {
    "torl": "+1 if the last \\boxed{} of the response matches the ground truth, -1 otherwise, "
    "optionally minus a penalty unless the last tool call ran successfully (ToRL).",
    "retool": "+1 for a correct final answer, -1 otherwise, "
    "optionally shaped by the number of tool calls on wrong answers (ReTool).",
    "otc_ppo": "Correctness reward scaled by cos(m*pi/(2m+c)), "
    "which favours answering with fewer tool calls m (OTC-PPO).",
    "otc_grpo": "Correctness reward scaled by closeness to the fewest tool calls that solved the prompt (OTC-GRPO).",
    "toolrl": "Format reward plus fine-grained matching of tool names, parameter names and values "
    "against the ground-truth calls (ToolRL).",
    "tool_n1": "1 only if the reasoning format is valid and the tool calls match the ground truth exactly, "
    "0 otherwise (Nemotron-Tool-N1).",
    "zerotir": "+1 if the final answer matches the ground truth, 0 otherwise, "
    "optionally minus a format penalty (ZeroTIR).",
    "artist": "Answer reward 2/0 plus 0.5 for a well-formed response plus the fraction of tool calls "
    "that executed successfully (ARTIST).",
    "artist_fc": "State reward 0.5 x state variables right, plus function reward 0.5 x expected calls made, "
    "plus format reward up to 0.2 for <reasoning> and <tool> tags in order (ARTIST, function calling).",
    "weighted": "Weighted sum of other rewards, each with its own parameters.",
}


class RewardParamsError(FieldErrors):
    """Unknown reward name or invalid parameters; errors keyed by 'name' or 'params.<field>'."""


def reward_params_model(name: str) -> type[BaseModel]:
    """The pydantic model that validates the parameters of reward `name`."""
    try:
        return _PARAMS_MODELS[name]
    except (KeyError, TypeError):
        choices = ", ".join(REWARD_NAMES)
        raise RewardParamsError({"name": [f"unknown reward {name!r}; choose one of: {choices}"]}) from None


def validate_reward_params(name: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Validate `params` for reward `name`; return them with defaults filled in."""
    model = reward_params_model(name)
    try:
        return model.model_validate({} if params is None else params).model_dump(mode="json")
    except ValidationError as exc:
        raise RewardParamsError(field_errors(exc, prefix="params")) from None


def reward_params_schema(name: str) -> dict[str, Any]:
    """JSON schema of the parameters of reward `name`."""
    return reward_params_model(name).model_json_schema()


def reward_defaults() -> dict[str, dict[str, Any]]:
    """Default parameters of every reward, by name (seeds the built-in reward presets)."""
    return {name: validate_reward_params(name, None) for name in REWARD_NAMES}
