"""The text fed back to the model for one tool execution, in the style of a paper's code.

The protocol wraps this text in its own markers (```output, <interpreter>, <output>); the style
decides what goes inside, from the sandbox's Result as `ToolExecution` keeps it (status, stdout
and stderr apart), and what a stop at the tool marker without a complete call adds:

- `torl`: ToRL's `postproc` and `postproc_observation` (GAIR-NLP/ToRL cb78cf1,
  verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:227-325) on the response Sandbox Fusion
  would give for the same run.
- `zerotir`: ZeroTIR's `parse_response` (yyht/openrlhf_async_pipline d154c0a,
  env/math/sandbox_utils.py:45-65) and its 256-token cap
  (env/math/math_tir_process_single_request.py:290-314).
- `retool`: verl's SandboxFusionTool as ReTool's recipe runs it (verl v0.6.1 d62da49,
  verl/tools/sandbox_fusion_tools.py:184-189) with the agent loop's 256-character cut
  (verl/experimental/agent_loop/tool_agent_loop.py:457-464).
- `tirlab`: tirlab's own text: a failure shows the last line of its traceback or a status message
  naming the limit that was hit, and an empty output says so and how to see a value, where ToRL
  would claim a timeout.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from trainer.trajectory import ToolExecution

FeedbackStyle = Literal["torl", "zerotir", "retool", "tirlab"]
FEEDBACK_STYLES: tuple[str, ...] = get_args(FeedbackStyle)

# Counts the tokens of a text (the policy's tokenizer): ZeroTIR's cap is in tokens.
TokenCounter = Callable[[str], int]

# ToRL (GAIR-NLP/ToRL, verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py, postproc_observation)
# keeps outputs under 256 characters and otherwise the first and last 128 joined by "...".
DEFAULT_MAX_OUTPUT_CHARS = 256

# --- tirlab ------------------------------------------------------------------------------------

# ToRL shows an empty output as a TimeoutError message, which misleads the model when the code
# simply printed nothing; this marker says what happened and how to see a value.
EMPTY_OUTPUT = "[no output: the code ran but printed nothing; print() the values you need]"

# Shown when a failed execution left no traceback line to return. Each names an exception so
# the "Error" test that ToRL uses to recognise failures also recognises these.
STATUS_MESSAGES: dict[str, str] = {
    "timeout": "TimeoutError: the code ran past the time limit",
    "memory_exceeded": "MemoryError: the code ran past the memory limit",
    "output_limit": "OutputLimitError: the code printed more than the output limit",
    "killed": "KilledError: the code was stopped by the sandbox",
    "error": "RuntimeError: the code failed without a message",
}

# --- ToRL (cb78cf1, verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py) ---------------------

# An empty observation is replaced by this (vllm_rollout_spmd.py:320 @cb78cf1).
TORL_EMPTY_OUTPUT = "timeout_decorator.timeout_decorator.TimeoutError: 'Timed Out'"
# A timed-out call: ToRL's HTTP client gives up after 10 s (vllm_rollout_spmd.py:110 @cb78cf1), the
# run time Sandbox Fusion allows by default (SandboxFusion 469de08 sandbox/server/sandbox_api.py:42),
# so it answers {"error": "unknown"} (:114), which `postproc` turns into ("Error", "UnknownError")
# (:233-234) and the observation into its report, "UnknownError" (:316, :319).
TORL_TIMEOUT_OUTPUT = "UnknownError"

# --- ZeroTIR (d154c0a) -------------------------------------------------------------------------

# The text around a result whose tokens are counted (math_tir_process_single_request.py:290-292 @d154c0a).
ZEROTIR_OUTPUT_PREFIX = "\n```output\n"
ZEROTIR_OUTPUT_SUFFIX = "\n```\n\n\n"
# An output over 256 tokens, wrapper included, is replaced by this message (:306, :312 @d154c0a).
ZEROTIR_MAX_OUTPUT_TOKENS = 256
ZEROTIR_TOO_LONG = "The output of the code execution is too long, please check your code."
# A run that did not finish shows Sandbox Fusion's run status (sandbox_utils.py:60-61 @d154c0a);
# ZeroTIR's sandbox stops a run after 20 s (:106) and its client waits 40 s (:133), so a timeout is
# reported by the sandbox as TimeLimitExceeded (SandboxFusion sandbox/runners/types.py:24).
ZEROTIR_TIMEOUT_OUTPUT = "TimeLimitExceeded"
# parse_response drops the file part of each traceback frame and the caret lines' carets (:58-59).
_ZEROTIR_FILE_PART = re.compile(r'File ".*?", ')

# --- ReTool (verl v0.6.1 d62da49, as pinned by verl-recipe 48ea0a7 retool/REQUIRED_VERL.txt) -----

# A run Sandbox Fusion did not report "Finished" (verl/tools/sandbox_fusion_tools.py:188-189).
RETOOL_UNFINISHED_OUTPUT = "no stdout here"
# The agent loop's default cut ("middle", verl/trainer/config/rollout/rollout.yaml:166-169) keeps the
# first and last half of max_tool_response_length around this (tool_agent_loop.py:463-464).
RETOOL_CUT = "...(truncated)..."


def truncate_output(text: str, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """ToRL truncation: an output of max_chars or more keeps its first and last max_chars/2
    characters joined by "..."; max_chars <= 0 keeps everything."""
    if max_chars <= 0 or len(text) < max_chars:
        return text
    half = max_chars // 2
    return text[:half] + "..." + text[-half:]


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _tirlab(result: ToolExecution | str, max_chars: int) -> str:
    if isinstance(result, ToolExecution):
        text = result.output or ""
        if not result.ok:
            line = _last_line(text)
            text = line if "Error" in line or "Exception" in line else STATUS_MESSAGES.get(result.status, "")
            text = text or STATUS_MESSAGES["error"]
    else:
        text = result
        if "Error" in text:
            text = _last_line(text)
    text = text.strip()
    if not text:
        text = EMPTY_OUTPUT
    return truncate_output(text, max_chars)


def _torl(result: ToolExecution, max_chars: int) -> str:
    # Sandbox Fusion reports a run that exited by itself, a signal or a memory error included, as
    # Finished with its return code, stdout and stderr (SandboxFusion sandbox/runners/base.py:102-106).
    if result.status == "timeout":
        observation = TORL_TIMEOUT_OUTPUT
    elif result.ok or result.stdout:
        # postproc: return code 0 or any stdout is ("stdout", "Done"), an execution pass (:229-230, :312-314).
        observation = result.stdout
    else:
        # Otherwise the observation is the stripped stderr (:232, :316).
        observation = result.stderr.strip()
    if "Error" in observation:
        observation = observation.strip().split("\n")[-1]  # :319
    if len(observation.strip()) == 0:
        observation = TORL_EMPTY_OUTPUT  # :320
    return truncate_output(observation.strip(), max_chars)  # :321-323


def _zerotir(result: ToolExecution, count_tokens: TokenCounter | None) -> str:
    if count_tokens is None:
        raise ValueError("ZeroTIR's feedback caps outputs in tokens: it needs count_tokens")
    if result.status == "timeout":
        text = ZEROTIR_TIMEOUT_OUTPUT
    elif result.ok or result.status == "output_limit":
        # Finished with Success: stdout as it is (sandbox_utils.py:53-55). A run tirlab's sandbox cut
        # at its output cap would have finished in ZeroTIR's, which has none, and printed all of it.
        text = result.stdout
    else:
        # Finished with a failure: stderr without file names and carets (sandbox_utils.py:56-59).
        text = _ZEROTIR_FILE_PART.sub("", result.stderr).replace("^", "")
    if count_tokens(ZEROTIR_OUTPUT_PREFIX + text + ZEROTIR_OUTPUT_SUFFIX) > ZEROTIR_MAX_OUTPUT_TOKENS:
        text = ZEROTIR_TOO_LONG
    return text


def _retool(result: ToolExecution, max_chars: int) -> str:
    # Finished (any return code) is stdout + stderr, anything else a fixed message (sandbox_fusion_tools.py:184-189).
    text = RETOOL_UNFINISHED_OUTPUT if result.status == "timeout" else result.stdout + result.stderr
    if text and len(text) > max_chars:  # tool_agent_loop.py:457
        half = max_chars // 2
        text = text[:half] + RETOOL_CUT + text[-half:]
    return text


@dataclass(frozen=True)
class Feedback:
    """How a tool execution becomes the text the model sees: a style (FEEDBACK_STYLES), the
    character cap (torl, retool, tirlab) and, for zerotir, the policy's token counter."""

    style: FeedbackStyle
    max_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    count_tokens: TokenCounter | None = None

    def __post_init__(self) -> None:
        if self.style not in FEEDBACK_STYLES:
            raise ValueError(f"unknown feedback style {self.style!r}; choose one of: {', '.join(FEEDBACK_STYLES)}")

    def text(self, result: ToolExecution | str) -> str:
        """The text inside the protocol's output wrapper. A plain string is a successful run's
        stdout, except for tirlab, which reads it as ToRL reads the sandbox's text (a failure
        when it contains "Error")."""
        if self.style == "tirlab":
            return _tirlab(result, self.max_chars)
        if isinstance(result, str):
            result = ToolExecution(call="", status="ok", output=result)
        if self.style == "torl":
            return _torl(result, self.max_chars)
        if self.style == "zerotir":
            return _zerotir(result, self.count_tokens)
        return _retool(result, self.max_chars)

    def code_to_run(self, code: str | None) -> str | None:
        """The code of a call, or None when the call is taken to have no code. ToRL runs any
        non-empty block, whitespace only included (vllm_rollout_spmd.py:103-105 @cb78cf1); ZeroTIR
        strips a block and runs nothing when that leaves nothing (env/math/extract_code.py:10-13,
        math_tir_process_single_request.py:255 @d154c0a); tirlab reports it as a missing block."""
        if code is None or self.style == "torl":
            return code
        return code if code.strip() else None

    @property
    def reports_missing_call(self) -> bool:
        """Whether a stop at the tool marker without a complete call gets an error output (tirlab)
        or, as in the papers' loops, nothing: the marker is dropped and generation goes on
        (ToRL vllm_rollout_spmd.py:300-306, :333-347 @cb78cf1; ZeroTIR
        math_tir_process_single_request.py:325-329 @d154c0a). Either way the stop uses up a call."""
        return self.style == "tirlab"


# What a caller that does not choose gets: tirlab's text, the one the shipped cold start of the
# tiny model was trained on (trainer.sft.train writes its traces with the protocols' default).
TIRLAB_FEEDBACK = Feedback("tirlab")
