"""Seeded SWE traces for swe-mini: the tools' spelling and an undecided fixer.

Each trace works on a swe-mini repository (trainer.data.swe_mini) in codeact_mini's syntax, one call a turn,
with the observations a run feeds back (trainer.envs.swe.compact): it edits the buggy expression with
str_replace, sometimes runs the issue's reproducer (`python repro.py`), and finishes.

What the traces leave open is what RL has to find:
- the fix: each edit picks among the kind's plausible expressions (trainer.data.swe_mini.PLAUSIBLE, the buggy
  one left out) uniformly, without reading the function's name, which tells the right one;
- what to do after an edit: run the reproducer (`after_edit.test`), finish at once (`after_edit.finish`) or edit
  again (the rest, the likeliest) -- so the cold start finishes some wrong fixes, edits right ones away, and runs
  past the run's turn limit on many repositories.
After the reproducer ran it decides by its exit status: 0 (the expected value) finishes, 1 edits again. A trace
ends with finish, at the latest after `max_turns` calls.

`python -m trainer sft-traces swe-mini-sft --out FILE` writes them as JSONL.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from trainer.data.swe_mini import KINDS_BY_NAME, PLAUSIBLE, REPRO_FILE, SOURCE_FILE, swe_mini_rows
from trainer.envs.swe import compact
from trainer.protocols import get_protocol
from trainer.trajectory import ToolExecution

PROTOCOL = "codeact_mini"
EDIT = "<f=edit><p=cmd>str_replace</p><p=path>{path}</p><p=old>{old}</p><p=new>{new}</p></f>"
RUN = f"<f=bash><p=cmd>python {REPRO_FILE}</p></f>"
FINISH = "<f=finish></f>"
_ISSUE = re.compile(r"(?P<call>(?P<name>\w+)\([^)]*\)) returns (?P<got>-?\d+), expected (?P<want>-?\d+) ")
_RETURN = re.compile(r"def (?P<name>\w+)\((?P<args>[^)]*)\):\n    return (?P<body>[^\n]*)\n")


@dataclass(frozen=True)
class AfterEdit:
    """The odds of each next call after an edit: run the reproducer, finish, or (the rest) edit again."""

    test: float = 0.3
    finish: float = 0.25


@dataclass(frozen=True)
class SweMiniMix:
    """The 'swe-mini-sft' traces."""

    traces: int = 8000
    after_edit: AfterEdit = AfterEdit()
    max_turns: int = 7
    content_weight: float = 4.0
    seed: int = 3


SWE_MINI = SweMiniMix()


def _expression(fix: str, params: list[str]) -> str:
    return fix.format(a=params[0], b=params[-1])


def swe_trace(row: dict, rng: random.Random, mix: SweMiniMix = SWE_MINI) -> dict:
    """One trace on one repository (a swe-mini row)."""
    tools = get_protocol(PROTOCOL)
    instance = row["instance"]
    issue = _ISSUE.search(instance["problem_statement"])
    assert issue is not None, instance["problem_statement"]
    name = issue.group("name")
    source = instance["files"][SOURCE_FILE]
    function = next(m for m in _RETURN.finditer(source) if m.group("name") == name)
    params = [p.strip() for p in function.group("args").split(",")]
    kind = KINDS_BY_NAME[name]
    expressions = [_expression(fix, params) for fix in PLAUSIBLE[name]]
    right = expressions[kind.right]
    current = function.group("body")
    response, spans, calls = "", [], 0

    def call(text: str, output: str | None) -> None:
        nonlocal response, calls
        calls += 1
        if output is None:
            response += text
            return
        execution = ToolExecution(call=text, status="ok", output=output)
        response = tools.append_output(response + text, execution)

    def weigh(text: str, part: str) -> None:
        at = len(response) + text.index(part)
        spans.append((at, at + len(part), mix.content_weight))

    def edit() -> None:
        nonlocal current
        new = rng.choice([e for e in expressions if e != current])
        text = EDIT.format(path=SOURCE_FILE, old=current, new=new)
        weigh(text, f"<p=old>{current}</p>")
        call(text, compact.EDITED)
        current = new

    def run() -> bool:
        values = [int(v) for v in re.findall(r"-?\d+", issue.group("call"))]
        got = eval(current, {}, dict(zip(params, values, strict=True)))  # noqa: S307 - our own expressions
        fixed = str(got) == issue.group("want")
        call(RUN, compact.bash(f"{got}\n", 0 if fixed else 1))
        return fixed

    edit()
    while calls < mix.max_turns - 1:
        draw = rng.random()
        if draw < mix.after_edit.test:
            if run():
                break
            if calls >= mix.max_turns - 1:
                break
            edit()
        elif draw < mix.after_edit.test + mix.after_edit.finish:
            break
        else:
            edit()
    call(FINISH, None)
    return {
        "prompt": row["prompt"],
        "response": response,
        "tool_outputs": tools.count_tool_calls(response),
        "weighted_spans": [list(span) for span in spans],
        "extra_info": {"resolved": current == right, "calls": calls},
    }


def swe_traces(mix: SweMiniMix = SWE_MINI) -> list[dict]:
    """`mix.traces` seeded traces on swe-mini repositories of their own split ("sft"), never a run's."""
    rng = random.Random(f"swe-traces:{mix.seed}")
    return [swe_trace(row, rng, mix) for row in swe_mini_rows(mix.traces, seed=mix.seed, split="sft")]
