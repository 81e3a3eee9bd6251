"""Command line of the trainer: ``python -m trainer <command>``.

``rewards`` scores one completion by hand, to see why a reward gives what it gives:

    python -m trainer rewards torl --completion response.txt --ground-truth 42

The completion file holds either the response text as the protocol produced it, or a JSON object
``{"text": ..., "executions": [{"call", "status", "output"}], "truncated": false}`` for rewards that
read tool statuses. The result is printed as JSON: total, components, correct and details. Usage
errors (unknown reward, invalid parameters, unreadable files) exit with status 2 and a message.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from trainer.trajectory import Completion, ToolExecution

PROTOCOLS = ("python_markdown", "retool", "artist", "tool_call_json")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trainer", description="tirlab trainer commands.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")

    rewards = commands.add_parser(
        "rewards",
        help="score one completion with a reward and print its total and components",
        description="Score one completion with a registered reward and print the result as JSON.",
    )
    rewards.add_argument("name", help="reward name, e.g. torl, retool, otc_grpo, toolrl, tool_n1")
    rewards.add_argument(
        "--completion",
        required=True,
        metavar="FILE",
        help="response text, or a JSON object with 'text' and optional 'executions' and 'truncated'; - reads stdin",
    )
    rewards.add_argument(
        "--ground-truth",
        required=True,
        metavar="TEXT",
        help="the answer, or for tool-call rewards a JSON list of calls or ToolRL's text form",
    )
    rewards.add_argument("--params", default=None, metavar="JSON", help="reward parameters as a JSON object")
    rewards.add_argument(
        "--protocol", default=None, choices=PROTOCOLS, help="tool-call syntax of the completion (default: the reward's)"
    )
    rewards.add_argument("--step", type=int, default=0, metavar="N", help="training step, for scheduled rewards")
    # Each command reports usage errors with its own parser, so the usage line shown is its own.
    rewards.set_defaults(handler=partial(_rewards, rewards))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.handler(args))


def _rewards(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    # Imported when used: the reward modules (math-verify included) cost nothing to other commands.
    from trainer.rewards import RewardParamsError, score_group, validate_reward_params

    params = _json_argument(parser, "--params", args.params) if args.params is not None else None
    if params is not None and not isinstance(params, dict):
        parser.error("--params must be a JSON object")
    try:
        params = validate_reward_params(args.name, params)
    except RewardParamsError as exc:
        parser.error(str(exc))
    completion = _read_completion(parser, args.completion, args.protocol, args.name)
    (result,) = score_group(args.name, [completion], _ground_truth(args.ground_truth), params=params, step=args.step)
    report = {
        "reward": args.name,
        "total": result.total,
        "components": result.components,
        "correct": result.correct,
        "details": result.details,
    }
    # Details may hold values JSON has no type for (sets, parsed calls); they are shown as text.
    print(json.dumps(report, indent=2, default=str))
    return 0


def _json_argument(parser: argparse.ArgumentParser, option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        parser.error(f"{option} is not valid JSON ({exc.msg} at column {exc.colno})")


def _read_completion(parser: argparse.ArgumentParser, source: str, protocol: str | None, reward: str) -> Any:
    """Plain text stays text, so the reward infers tool calls and statuses from it, read with
    --protocol or else the reward's own protocol; a JSON trajectory becomes a Completion, whose
    executions are then the truth (none listed means no call was executed)."""
    from trainer.protocols import get_protocol
    from trainer.rewards.base import Response, registered

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read --completion {source}: {exc}")
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        record = None
    if not (isinstance(record, dict) and isinstance(record.get("text"), str)):
        # Not a trajectory (JSON or not): the file is the response text.
        return text if protocol is None else Response(text=text, protocol=get_protocol(protocol))
    try:
        executions = tuple(ToolExecution(**execution) for execution in record.get("executions", []))
    except TypeError as exc:
        parser.error(f"--completion {source}: executions must be objects with 'call' and 'status' ({exc})")
    return Completion(
        text=record["text"],
        protocol=protocol or record.get("protocol") or registered(reward).protocol,
        executions=executions,
        truncated=bool(record.get("truncated", False)),
        response_tokens=record.get("response_tokens"),
    )


def _ground_truth(text: str) -> Any:
    # Tool-call rewards take a list of calls; anything else (numbers included) stays text, the form
    # math answers are compared in.
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, list | dict) else text
