"""tirlab's agent loop inside verl 0.9.1: the model sees in verl exactly what it sees in tirlab's own trainer.

verl runs one agent loop per sample (verl/experimental/agent_loop/agent_loop.py:632-650, `_run_agent_loop`):
it builds the class named in the agent-loop file with `hydra.utils.instantiate`, passing the file entry's
keys besides `name` and `_target_` as keyword arguments (here `run_config`, the run's config file), and
awaits `run(sampling_params, **row)`, the row's dataset fields as keywords. This loop continues the row's
`extra_info.prompt_text` (trainer.verl.data: tirlab's rendered prompt), tokenised as tirlab's trainer
tokenises it (trainer/loop/train.py `prompt_ids`), and runs tirlab's own trajectory loop
(trainer.rollout.multi_turn.run_trajectory): the run's protocol, environment (python code in tirlab's
sandbox, function calling, none), feedback style, call budget (`tools.max_tool_calls`), stop strings and
output caps. Each generation goes to verl's server (`server_manager.generate`, a TokenOutput back:
verl/workers/rollout/replica.py:39-51) with the protocol's stop strings; its finish is read from the
decoded ids as tirlab's engines read it. Tool-output tokens get `response_mask` 0 (1 with
`tools.train_on_tool_output`), the model's tokens 1.

Per sample, `extra_fields` carries `tool_call_counts` (verl logs tool_call_counts/mean,
verl/trainer/ppo/metric_utils.py:602-606) and what the reward adapter (trainer.verl.reward) needs: the
response text, the executions (each call, output, status) as JSON, truncation and the model's token
count. verl hands every extra field to the reward function's `extra_info` (the reward loop's
`tool_extra_fields`, verl/experimental/agent_loop/agent_loop.py:1016 and
verl/experimental/reward_loop/reward_manager/naive.py:45-47); the rollout dump (`trainer.rollout_data_dir`)
holds only what the reward function returns (verl/trainer/ppo/ray_trainer.py:454-477,514-546).

Runs only in verl's environment (it imports verl).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any
from uuid import uuid4

from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from trainer.engines.base import GenerationOutput, GenerationRequest
from trainer.metrics.step import tool_call_count
from trainer.rollout.multi_turn import RolloutSettings, Trajectory, run_trajectory
from trainer.verl.data import AGENT_NAME, load_run_config
from trainer.verl.reward import EXECUTIONS_FIELD, RESPONSE_TOKENS_FIELD, TEXT_FIELD, TRUNCATED_FIELD


def write_agent_loop_config(path: Path, *, run_config: Path) -> None:
    """Write the agent-loop file verl reads (`actor_rollout_ref.rollout.agent.agent_loop_config_path`): a
    list of entries, each a `name` and hydra's `_target_` plus keyword arguments of the class
    (verl/experimental/agent_loop/agent_loop.py:518-525)."""
    entry = {"name": AGENT_NAME, "_target_": f"{__name__}.{TirlabAgentLoop.__qualname__}"}
    entry["run_config"] = str(Path(run_config).resolve())
    path.parent.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(OmegaConf.create([entry]), path)


@register(AGENT_NAME)
class TirlabAgentLoop(AgentLoopBase):
    """tirlab's protocol and environment driving verl's server, one trajectory per `run`."""

    def __init__(self, *args: Any, run_config: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = load_run_config(str(run_config))
        response_length = int(self.rollout_config.response_length)
        prompt_length = int(self.rollout_config.prompt_length)
        # verl pads every response to response_length and every prompt to prompt_length; tirlab's limits
        # must be those, or the model would see other lengths than in tirlab's trainer.
        for field, ours, theirs, key in (
            ("data.max_response_tokens", config.data.max_response_tokens, response_length, "response_length"),
            ("data.max_prompt_tokens", config.data.max_prompt_tokens, prompt_length, "prompt_length"),
        ):
            if ours != theirs:
                raise ValueError(
                    f"{field} is {ours} but verl's actor_rollout_ref.rollout.{key} is {theirs}: "
                    "translate the run config with trainer.verl.overrides"
                )
        self.settings = RolloutSettings.from_config(config)
        self.max_prompt_tokens = config.data.max_prompt_tokens

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra_info = kwargs.get("extra_info") or {}
        if "prompt_text" not in extra_info:
            raise ValueError(
                "the row's extra_info has no 'prompt_text': tirlab's agent loop reads rows written by "
                "trainer.verl.data.write_verl_dataset"
            )
        tools = json.loads(extra_info["tools"]) if extra_info.get("tools") else None
        # No special tokens, the end kept (trainer/loop/train.py prompt_ids).
        prompt_ids = self.tokenizer.encode(extra_info["prompt_text"], add_special_tokens=False)
        prompt_ids = prompt_ids[-self.max_prompt_tokens :]
        server = _ServerTurns(self.server_manager, self.tokenizer, sampling_params)
        # Sampling follows verl's parameters (its rollout's or its validation's temperature and top_p): the
        # settings' reach only the requests, whose sampling fields _ServerTurns does not read.
        trajectory = await run_trajectory(prompt_ids, server.generate, self.tokenizer, self.settings, tools=tools)
        return self._output(prompt_ids, trajectory, server)

    def _output(self, prompt_ids: list[int], trajectory: Trajectory, server: _ServerTurns) -> AgentLoopOutput:
        completion = trajectory.completion
        gen_s = sum(span.end - span.start for span in trajectory.spans if span.kind == "gen")
        tool_s = sum(span.end - span.start for span in trajectory.spans if span.kind == "tool")
        executions = [dataclasses.asdict(execution) for execution in completion.executions]
        extra_fields = {
            **server.extra_fields,
            "tool_call_counts": tool_call_count(completion),
            TEXT_FIELD: completion.text,
            EXECUTIONS_FIELD: json.dumps(executions, ensure_ascii=False),
            TRUNCATED_FIELD: completion.truncated,
            RESPONSE_TOKENS_FIELD: completion.response_tokens,
        }
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=trajectory.response_ids,
            response_mask=trajectory.loss_mask,
            response_logprobs=trajectory.logprobs if server.logprobs else None,
            # The prompt, each generation and each fed-back output (verl counts chat turns).
            num_turns=1 + len(trajectory.spans),
            metrics=AgentLoopMetrics(generate_sequences=gen_s, tool_calls=tool_s, num_preempted=server.preempted),
            extra_fields=extra_fields,
        )


class _ServerTurns:
    """One trajectory's generations on verl's server, as tirlab's engines answer a GenerationRequest."""

    def __init__(self, server_manager: Any, tokenizer: Any, sampling_params: dict[str, Any]) -> None:
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.sampling_params = sampling_params
        # One id for the trajectory's turns: verl's router keeps them on one server (its prefix cache).
        self.request_id = uuid4().hex
        self.logprobs = bool(sampling_params.get("logprobs"))
        self.preempted = -1
        self.extra_fields: dict[str, Any] = {}

    async def generate(self, request: GenerationRequest) -> GenerationOutput:
        params = {**self.sampling_params, "max_tokens": request.max_new_tokens}
        if request.stop_strings:
            # vLLM stops once the decoded text holds one; the ids keep the token that completed it.
            params["stop"] = list(request.stop_strings)
        output = await self.server_manager.generate(
            request_id=self.request_id, prompt_ids=list(request.token_ids), sampling_params=params
        )
        ids = list(output.token_ids)
        self._note(output)
        if self.logprobs and (output.log_probs is None or len(output.log_probs) != len(ids)):
            raise RuntimeError("verl's server returned no log-prob per token though the rollout asked for them")
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        finish, stop = _finish(request, ids, text, self.tokenizer)
        logprobs = list(output.log_probs) if self.logprobs else [0.0] * len(ids)
        return GenerationOutput(new_token_ids=ids, text=text, logprobs=logprobs, finish_reason=finish, stop_string=stop)

    def _note(self, output: Any) -> None:
        """The server's per-request facts, as verl's own tool agent loop keeps them
        (verl/experimental/agent_loop/tool_agent_loop.py:255-270): the first turn's, the latest weights."""
        if output.num_preempted is not None:
            self.preempted = max(self.preempted, 0) + output.num_preempted
        fields = dict(output.extra_fields or {})
        if not self.extra_fields:
            self.extra_fields = fields
        elif fields.get("max_global_steps") is not None:
            self.extra_fields["max_global_steps"] = fields["max_global_steps"]


def _finish(request: GenerationRequest, ids: list[int], text: str, tokenizer: Any) -> tuple[str, str | None]:
    """The finish of a generation as tirlab's engines report it (trainer/engines/hf.py `_finish_reason`): the
    first stop string in the text, else EOS (a special token last), else the length limit (verl's
    TokenOutput says only 'completed')."""
    found = [(text.find(stop), stop) for stop in request.stop_strings if stop and stop in text]
    if found:
        return "stop", min(found)[1]
    if ids and ids[-1] in set(tokenizer.all_special_ids):
        return "eos", None
    if len(ids) >= request.max_new_tokens:
        return "length", None
    return "eos", None
