"""ZeroTIR-mini, run whole: RL from a base model that never called a tool finds the tool on its own.

`python -m trainer run --preset zerotir-mini` starts from 'tirlab/tiny-char-base' (trainer.models.
tiny_base): it learned arithmetic text and Python notebook text, and writes code in a few percent of
its answers to "What is ...?", never having been fed a tool output. ZeroTIR's format-gated reward,
its two-call cap and its group-accuracy filter do the rest. The test asserts, from the runs' own
metrics: the code-call ratio starts near zero and rises; hard problems get solved; the same run with
a cap of 0 calls (the code is written but never run) solves none; the filters act.
"""

import json

import pytest

from tests.trainer._learning import run_preset, window


@pytest.mark.timeout(1800)
def test_zero_rl_finds_the_tool_and_two_calls_beat_none_on_hard_problems(tiny_model_cache, tmp_path):
    # The preset's first 12 of its 20 steps (a constant learning rate: they are the whole run's): the tool is
    # the rule by step 10, and the capped run below is compared over the same steps.
    values = run_preset("zerotir-mini", tmp_path / "cap2", tiny_model_cache, max_steps=12)
    assert len(values) == 12
    start, end = slice(0, 2), slice(7, 12)
    # The base model rarely writes code (measured 0.03-0.04 over steps 0-1) ...
    assert window(values, "tool_call_ratio", start) < 0.12
    # ... and RL alone makes it the rule (measured 0.90 over steps 7-11 with seeds 0 and 1), on hard problems first.
    assert window(values, "tool_call_ratio", end) > 0.7
    hard = "train/hard/accuracy"
    assert window(values, hard, start) < 0.15
    assert window(values, hard, end) > 0.6

    # A cap of 0: the model's code is never run, its "outputs" are its own guesses. Measured over the
    # same steps 7-11: hard accuracy 0.000 against 0.93 with the cap of 2.
    capped = run_preset(
        "zerotir-mini",
        tmp_path / "cap0",
        tiny_model_cache,
        overrides={"tools": {"max_tool_calls": 0}, "schedule": {"max_steps": 12}},
    )
    assert window(capped, hard, end) < window(values, hard, end) - 0.4

    # ZeroTIR's filter acts: groups all wrong (no code yet) or all right (solved) are left out, and
    # each filter reports its drops.
    assert sum(v["filter/dropped_groups_accuracy_min"] for v in values[:5]) > 0
    assert sum(v["filter/dropped_groups_accuracy_max"] for v in values[-5:]) > 0
    for name in ("filter/dropped_truncated_unsolved", "filter/dropped_repetitive", "filter/dropped_shortcut"):
        assert all(name in v for v in values), name

    # What it learned is ZeroTIR's shape: code inside <think>, run, and the output's value in <answer>.
    trajectories = [json.loads(line) for line in (tmp_path / "cap2" / "trajectories.jsonl").read_text().splitlines()]
    solved = [t for t in trajectories if t["step"] >= 7 and t["correct"] and t["tool_call_count"]]
    assert solved
    turns = [turn["text"] for turn in solved[-1]["turns"]]
    assert turns[0].startswith("<think>```python\n") and turns[-1].startswith("</think>\n<answer>\\boxed{")


@pytest.mark.timeout(1800)
def test_one_step_off_policy_as_zerotirs_own_script_trains_it_learns_the_same(tiny_model_cache, tmp_path):
    values = run_preset("zerotir-mini-async", tmp_path / "run", tiny_model_cache)
    assert len(values) == 20
    # Rolled out by the weights one update behind, never more; step 0 by the starting weights.
    staleness = [v["async/staleness"] for v in values]
    assert set(staleness) <= {0.0, 1.0} and sum(staleness) >= len(values) / 2
    start, end = slice(0, 2), slice(-5, None)
    # Measured (bench/async_training.py --preset zerotir-mini --steps 20 --repeats 2): the end of the
    # curve within the synchronous run's spread, hard accuracy 0.943 against 0.954.
    assert window(values, "tool_call_ratio", start) < 0.12
    assert window(values, "tool_call_ratio", end) > 0.7
    assert window(values, "train/hard/accuracy", end) > 0.6
