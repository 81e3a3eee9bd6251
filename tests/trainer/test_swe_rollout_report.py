"""A swe trajectory as the rollout makes it and the rollouts page shows it: the environment's reply to a turn
without a call is tool text with no call behind it, and the call after it keeps its own output, call and status.

Driven by test_rollout's ScriptedEngine (the loop's bookkeeping needs calls a model would not make on cue), with
the real swe environment and sandbox."""

from tests.trainer.test_rollout import ScriptedEngine
from trainer.data.swe_mini import swe_mini_examples
from trainer.envs.base import environment_task
from trainer.models import CharTokenizer
from trainer.protocols import get_protocol
from trainer.report.trajectories import trajectory_report
from trainer.rollout.multi_turn import RolloutSettings, rollout
from trainer.trajectory import RewardResult

REPRO = "<f=bash><p=cmd>python repro.py</p></f>"


def test_a_reply_to_a_turn_without_a_call_is_shown_apart_from_the_calls_outputs():
    tokenizer = CharTokenizer()
    example = swe_mini_examples(1, seed=3)[0]
    prompt = example.prompt[0]["content"]
    engine = ScriptedEngine(tokenizer, {prompt: ["I will look.", REPRO, "<f=finish></f>"]})
    settings = RolloutSettings(
        protocol="codeact_mini", environment="swe", max_tool_calls=5, feedback="tirlab", max_response_tokens=576
    )
    result = rollout(engine, [tokenizer.encode(prompt)], settings, tasks=[environment_task(example)])
    (trajectory,) = result.trajectories
    completion = trajectory.completion
    assert completion.replies == (0,) and [e.call for e in completion.executions] == [REPRO, "<f=finish></f>"]

    report = trajectory_report(example, 0, trajectory, RewardResult(total=0.0), 0, 0, get_protocol("codeact_mini"))
    turns = [(turn.kind, turn.text, turn.call, turn.status) for turn in report.turns]
    got = example.extra_info["instance"]["problem_statement"].split(" returns ")[1].split(",")[0]
    assert turns == [
        ("model", "I will look.", None, None),
        ("tool", "<r>Please continue.</r>\n", None, None),  # the environment's reply: no call, no status
        ("model", REPRO, None, None),
        ("tool", f"<r>{got}\n[exit 1]</r>\n", REPRO, "ok"),
        ("model", "<f=finish></f>", None, None),
    ]
    assert report.outcome.end == "finished" and report.tool_call_count == 2
