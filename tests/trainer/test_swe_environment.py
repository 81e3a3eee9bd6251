"""The swe environment as the rollout drives it: a call in either spelling runs against the trajectory's own
repository, finish ends the trajectory, a turn without a call is answered until the turn limit, and the
outcome grades the patch the trajectory left (the tools' texts and the grading: test_swe_tools.py,
test_swe_grading.py)."""

import asyncio

import pytest

from sandbox import SandboxPool
from trainer.data.swe_mini import swe_mini_rows
from trainer.envs import CallContext, get_environment
from trainer.envs.swe import SweTaskError
from trainer.protocols import Feedback, get_protocol

ENV = get_environment("swe")
FEEDBACK = Feedback("tirlab")
ROW = swe_mini_rows(1, seed=3)[0]["instance"]
ISSUE = ROW["problem_statement"]  # e.g. "dec(8) returns 6, expected 7 (python repro.py)."


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(size=2) as pool:
        yield pool


def _buggy_and_right(instance: dict) -> tuple[str, str]:
    from trainer.data.swe_mini import KINDS_BY_NAME

    name = instance["problem_statement"].split("(")[0]
    kind = KINDS_BY_NAME[name]
    source = instance["files"]["f.py"]
    body = source.split(f"def {name}(")[1].split("return ", 1)[1].split("\n", 1)[0]
    return body, kind.fixes[kind.right].format(a="a", b="b")


def drive(pool, protocol_name: str, calls: list[str], max_calls: int = 5) -> tuple[str, dict, CallContext]:
    protocol = get_protocol(protocol_name)
    context = CallContext(run_code=pool.arun, task=ROW, max_calls=max_calls)

    async def run() -> tuple[str, dict]:
        text = ""
        for call in calls:
            stopped = text + call
            execution = await ENV.run_call(protocol, stopped, FEEDBACK, context)
            text = ENV.append_output(protocol, stopped, execution, FEEDBACK)
            if ENV.finished(context):
                break
        return text, await ENV.outcome(protocol, context, truncated=False)

    text, outcome = asyncio.run(run())
    return text, outcome, context


def test_the_mini_runs_the_reproducer_fixes_and_finishes(pool):
    buggy, right = _buggy_and_right(ROW)
    repro = "<f=bash><p=cmd>python repro.py</p></f>"
    text, outcome, _ = drive(
        pool,
        "codeact_mini",
        [
            repro,
            f"<f=edit><p=cmd>str_replace</p><p=path>f.py</p><p=old>{buggy}</p><p=new>{right}</p></f>",
            repro,
            "<f=finish></f>",
        ],
    )
    got, want = ISSUE.split(" returns ")[1].split(" (")[0].split(", expected ")
    # The issue's reproducer prints the example's value and fails until the fix is in.
    assert f"<r>{got}\n[exit 1]</r>\n" in text and f"<r>{want}\n[exit 0]</r>\n" in text
    assert "<r>edited</r>\n" in text and text.endswith("<f=finish></f>")
    assert outcome["end"] == "finished" and outcome["turns"] == 4 and outcome["resolved"] and outcome["applied"]
    # The patch is the fix alone: the reproducer is the repository's, unchanged.
    assert outcome["patch"].startswith("diff --git a/f.py b/f.py") and outcome["patch_lines"] == 2
    assert "repro.py" not in outcome["patch"]
    assert {t["kind"] for t in outcome["tests"]} == {"FAIL_TO_PASS", "PASS_TO_PASS"}


def test_codeact_sees_skyrl_v0s_observations_and_the_turn_limit_ends_the_trajectory(pool):
    command = "<function=execute_bash>\n<parameter=command>ls</parameter>\n</function"
    text, outcome, context = drive(pool, "codeact", [command, command], max_calls=2)
    assert text.count("EXECUTION RESULT of [execute_bash]:") == 2 and "f.py" in text
    assert outcome["end"] == "max_turns" and outcome["patch"] == "" and not outcome["resolved"]
    assert ENV.finished(context)


def test_a_turn_without_a_call_is_answered_until_the_turn_limit(pool):
    protocol = get_protocol("codeact_mini")
    context = CallContext(run_code=pool.arun, task=ROW, max_calls=2)
    assert ENV.on_no_call(protocol, context) == "<r>Please continue.</r>\n"
    assert ENV.on_no_call(protocol, context) is None  # the second turn was the last
    outcome = asyncio.run(ENV.outcome(protocol, context, truncated=False))
    assert outcome["end"] == "max_turns" and outcome["turns"] == 2


def test_a_call_that_is_no_tool_is_a_format_error(pool):
    _, outcome, _ = drive(pool, "codeact_mini", ["<f=python><p=cmd>1</p></f>", "<f=finish></f>"])
    assert outcome["format_errors"] == 1 and outcome["calls"] == 2


def test_an_example_without_its_repository_is_refused(pool):
    protocol = get_protocol("codeact")
    context = CallContext(run_code=pool.arun, task={**ROW, "files": None})
    with pytest.raises(SweTaskError, match="container image"):
        asyncio.run(ENV.run_call(protocol, "<function=finish>\n</function", FEEDBACK, context))
