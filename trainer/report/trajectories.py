"""A trajectory as the dashboard stores it (trainer.contract.TrajectoryIn): its turns, with each tool
output's status and duration, its prompt, answer, reward and counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trainer.contract import MAX_DATA_SOURCE, ChatMessage, TrajectoryIn, TurnIn
from trainer.metrics.step import tool_call_count
from trainer.protocols.base import Protocol
from trainer.protocols.prompts import Prompt
from trainer.report.client import jsonable
from trainer.rollout.multi_turn import Trajectory
from trainer.trajectory import Example, RewardResult


def trajectory_report(
    example: Example,
    position: int,
    trajectory: Trajectory,
    reward: RewardResult,
    sample: int,
    step: int,
    protocol: Protocol,
    prompt: Prompt | None = None,
) -> TrajectoryIn:
    """One trajectory as the dashboard stores it: its turns, with each tool output's status and duration.

    ``prompt`` is what the model was conditioned on (the template applied; a raw template's text is
    sent as text); without it, the dataset row's messages. The final answer is the one the reward
    scored when the reward says which (``details["answer"]``: ToRL's reads the whole response, tool
    output included), else the protocol's reading of the model's own text.

    Built as the contract's model, so a trajectory the dashboard would refuse fails here, where it is made."""
    completion = trajectory.completion
    executions = list(completion.executions)
    turns, calls, tool_texts = [], iter(executions), 0
    # Tool texts in order: an execution's output, or the environment's reply to a turn without a call, which has
    # no call behind it (Completion.replies).
    for segment in protocol.segments(completion.text, tool_outputs=completion.tool_texts):
        execution = None
        if segment.kind == "tool":
            execution = None if tool_texts in completion.replies else next(calls, None)
            tool_texts += 1
        if execution is None:
            turns.append(TurnIn(kind=segment.kind, text=segment.text))
        else:
            turns.append(
                TurnIn(
                    kind="tool",
                    text=segment.text,
                    call=execution.call,
                    status=execution.status,
                    duration_ms=float(execution.duration_ms),
                )
            )
    return TrajectoryIn(
        step=step,
        # The group's place in the step (the ingest key), not its dataset row: resampled draws can
        # repeat a row within one step.
        prompt_index=position,
        sample_index=sample,
        prompt=prompt.text
        if prompt is not None and prompt.text is not None
        # Role and content only: a dataset's messages may carry more (names, tool calls).
        else [
            ChatMessage(role=m["role"], content=m["content"])
            for m in (prompt.messages if prompt is not None and prompt.messages is not None else example.prompt)
        ],
        turns=turns,
        final_answer=_scored_answer(reward)
        or protocol.final_answer(completion.text, tool_outputs=completion.tool_texts)
        or "",
        ground_truth=jsonable(example.ground_truth),
        reward=float(reward.total),
        reward_components={key: float(value) for key, value in reward.components.items()},
        correct=bool(reward.correct),
        # The calls the step's tool-call metrics count: the executions, or for calls that are scored and
        # not run (tool_call_json), the calls in the text.
        tool_call_count=tool_call_count(completion),
        truncated=completion.truncated,
        prompt_tokens=len(trajectory.prompt_ids),
        response_tokens=completion.response_tokens,
        data_source=example.data_source[:MAX_DATA_SOURCE] or None,
        outcome=completion.outcome,
    )


def groups_report(
    groups: Sequence[Any], *, step: int, protocol: Protocol, prompt: Callable[[Example], Prompt]
) -> list[TrajectoryIn]:
    """Every trajectory of whole scored groups (trainer.loop.collect.Group: an example, its trajectories and their
    rewards), each at its group's place in `groups` and its own in the group; `prompt(example)` is what the model
    was conditioned on."""
    return [
        trajectory_report(group.example, position, trajectory, reward, sample, step, protocol, prompt(group.example))
        for position, group in enumerate(groups)
        for sample, (trajectory, reward) in enumerate(zip(group.trajectories, group.rewards, strict=True))
    ]


def _scored_answer(reward: RewardResult) -> str | None:
    answer = reward.details.get("answer") if isinstance(reward.details, dict) else None
    return answer if isinstance(answer, str) and answer else None
