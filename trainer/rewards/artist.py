"""ARTIST: answer reward (2 correct, 0 wrong) + format reward (0.5) + tool-execution reward.

The ARTIST paper publishes no code; the terms follow its text:
- answer: 2 when the <answer> (its \\boxed{} if present) equals the ground truth, else 0;
- format: 0.5 when the response opens with <think>, every <python> call is followed by its
  <output> before anything else is called, blocks are not nested or left open, and the response
  ends with its single <answer>...</answer>; text between blocks is allowed (the relaxed form);
- tool execution: successful calls / calls, 0 with no call.
Tags are read from the full response, because the <output> blocks are part of the order checked.
"""

import re
from typing import Any

from trainer.answers import answers_equivalent
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.rewards.tags import tag_blocks
from trainer.trajectory import RewardResult


class ArtistParams(RewardParams):
    """ARTIST: answer 2/0, format 0.5 and tool success ratio, all fixed by the paper; no parameters."""


ANSWER_REWARD = 2.0
FORMAT_REWARD = 0.5
_TAG = re.compile(r"</?(think|python|output|answer)>")


def format_valid(text: str) -> bool:
    """Blocks in order: think first, each python followed by its output, one answer at the end."""
    text = text.strip()
    blocks = tag_blocks(text, _TAG)
    if blocks is None or not blocks or blocks[0] != "think" or blocks[-1] != "answer":
        return False
    if blocks.count("answer") != 1 or not text.endswith("</answer>"):
        return False
    for i, name in enumerate(blocks):
        if name == "python" and (i + 1 >= len(blocks) or blocks[i + 1] != "output"):
            return False
        if name == "output" and (i == 0 or blocks[i - 1] != "python"):
            return False
    return True


def _artist(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    answer = response.final_answer
    correct = answers_equivalent(answer, str(ground_truth))
    failures = response.call_failures
    tool_reward = (len(failures) - sum(failures)) / len(failures) if failures else 0.0
    answer_reward = ANSWER_REWARD if correct else 0.0
    format_reward = FORMAT_REWARD if format_valid(response.text) else 0.0
    return RewardResult(
        total=answer_reward + format_reward + tool_reward,
        components={"answer": answer_reward, "format": format_reward, "tool_execution": tool_reward},
        correct=correct,
        details={"answer": answer, "tool_calls": len(failures), "failed_calls": sum(failures)},
    )


register_reward(
    "artist",
    params=ArtistParams,
    description="Answer reward 2/0 plus 0.5 for a well-formed response plus the fraction of tool calls "
    "that executed successfully (ARTIST).",
    protocol="artist",
)(per_completion(_artist))
