"""verl's per-step rollout dumps as tirlab's step metrics and trajectories (trainer.verl.samples), and the
launch wrapper reading them as verl writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.contract import ACCURACY, CODE_IN_CORRECT, RESPONSE_LENGTH_MEAN, TOOL_CALL_RATIO, TOOL_PRODUCTIVITY
from trainer.verl.samples import DumpError, dump_metrics, dump_trajectories, groups_of, new_steps, read_dump

CALL = "Let me compute.\n```python\nprint(6 * 7)\n```\n```output\n42\n```\nSo \\boxed{42}."
NO_CALL = "It is \\boxed{41}."


def sample(prompt: str, output: str, *, correct: bool, calls: int, score: float) -> dict:
    """One line as verl 0.9.1 writes it (ray_trainer.py:454-477) with tirlab's reward extras."""
    return {
        "input": prompt,
        "output": output,
        "gts": "42",
        "score": score,
        "step": 3,
        "correct": correct,
        "tool_calls": calls,
        "answer_reward": score,
    }


def write_dump(folder: Path, step: int, samples: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{step}.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in samples), encoding="utf-8")
    return path


SAMPLES = [
    sample("What is 6*7?", CALL, correct=True, calls=1, score=1.0),
    sample("What is 6*7?", NO_CALL, correct=False, calls=0, score=-1.0),
    sample("What is 6*7?", CALL, correct=True, calls=1, score=1.0),
    sample("What is 5+5?", CALL.replace("42", "10"), correct=False, calls=1, score=-1.0),
]


def test_headline_metrics_are_computed_per_sample_as_tirlabs_trainer_computes_them() -> None:
    metrics = dump_metrics(SAMPLES, protocol="python_markdown")
    assert metrics[ACCURACY] == pytest.approx(2 / 4)
    assert metrics[TOOL_CALL_RATIO] == pytest.approx(3 / 4)
    assert metrics[CODE_IN_CORRECT] == pytest.approx(2 / 4)
    assert metrics[TOOL_PRODUCTIVITY] == pytest.approx(2 / 3)  # sum(correct) / sum(calls)
    assert metrics["tool_calls/mean"] == pytest.approx(3 / 4)


def test_verls_own_response_lengths_are_left_to_verl() -> None:
    # verl logs response_length/* in tokens; a character count from the text must not overwrite them.
    metrics = dump_metrics(SAMPLES, protocol="python_markdown")
    assert RESPONSE_LENGTH_MEAN not in metrics and "response_length/max" not in metrics


def test_groups_are_the_samples_of_one_prompt_in_verls_order() -> None:
    groups = groups_of(SAMPLES)
    assert [len(group) for group in groups] == [3, 1]
    assert groups[0][1]["output"] == NO_CALL


def test_trajectories_carry_the_calls_and_outputs_split_by_the_protocol() -> None:
    trajectories = dump_trajectories(SAMPLES, step=3, protocol="python_markdown", groups=1)
    assert [(t.prompt_index, t.sample_index) for t in trajectories] == [(0, 0), (0, 1), (0, 2)]
    first = trajectories[0]
    assert [turn.kind for turn in first.turns] == ["model", "tool", "model"]
    assert first.turns[1].text == "\n42\n```\n"
    assert first.turns[1].call == "print(6 * 7)\n"
    assert "".join(turn.text for turn in first.turns) == CALL
    assert (first.final_answer, first.correct, first.tool_call_count, first.reward) == ("42", True, 1, 1.0)
    assert first.reward_components == {"answer_reward": 1.0}


def test_a_dump_without_tirlabs_reward_extras_is_refused_with_its_line(tmp_path: Path) -> None:
    bare = {key: value for key, value in SAMPLES[0].items() if key not in ("correct", "tool_calls")}
    path = write_dump(tmp_path, 1, [SAMPLES[0], bare])
    with pytest.raises(DumpError, match=r"1.jsonl:2 lacks correct, tool_calls"):
        read_dump(path)


def test_the_newest_dump_waits_until_verl_has_moved_on_or_ended(tmp_path: Path) -> None:
    write_dump(tmp_path, 1, SAMPLES)
    assert list(new_steps(tmp_path, set())) == []  # step 1 may still be being written
    write_dump(tmp_path, 2, SAMPLES)
    assert [step for step, _ in new_steps(tmp_path, set())] == [1]
    assert [step for step, _ in new_steps(tmp_path, {1}, final=True)] == [2]
    assert len(read_dump(tmp_path / "2.jsonl")) == 4
