import math

import pytest

from trainer import protocols
from trainer.metrics.step import (
    SUBSET_METRICS,
    ScoredCompletion,
    pass_at_k,
    response_length,
    step_metrics,
    subset_metrics,
    tool_call_count,
    validation_metrics,
)
from trainer.trajectory import Completion, RewardResult, ToolExecution


def execs(*statuses: str) -> tuple[ToolExecution, ...]:
    return tuple(ToolExecution(call="print(1)", status=status) for status in statuses)


def scored(
    total: float,
    correct: bool,
    *,
    statuses: tuple[str, ...] = (),
    calls: int | None = None,
    tokens: int = 10,
    truncated: bool = False,
    components: dict[str, float] | None = None,
) -> ScoredCompletion:
    completion = Completion(text="...", executions=execs(*statuses), truncated=truncated, response_tokens=tokens)
    reward = RewardResult(total=total, components=components or {}, correct=correct)
    return ScoredCompletion(completion, reward, tool_calls=calls)


def step() -> list[list]:
    """Two prompts; every expected value in the tests below is computed by hand from here."""
    group_a = [
        scored(1.0, True, statuses=("ok", "ok"), tokens=10, components={"answer": 1.0, "format": 0.5}),
        scored(-1.0, False, statuses=("error",), tokens=20, truncated=True, components={"answer": -1.0, "format": 0.0}),
        scored(1.0, True, calls=0, tokens=30, components={"answer": 1.0, "format": 0.5}),
    ]
    b1 = scored(
        -1.0, False, statuses=("timeout",), tokens=40, truncated=True, components={"answer": -1.0, "format": 0.5}
    )
    b2 = scored(-1.0, False, calls=0, tokens=50, components={"answer": -1.0, "format": 0.0})
    return [group_a, [b1, b2]]


def test_every_metric_of_a_step_by_hand() -> None:
    metrics = step_metrics(step())
    assert metrics == pytest.approx(
        {
            "accuracy": 2 / 5,
            "tool_call_ratio": 3 / 5,  # calls per completion: 2, 1, 0, 1, 0
            "code_in_correct": 1 / 5,  # only the first both called a tool and is correct
            "response_length/mean": 30.0,
            "response_length/max": 50.0,
            "response_length/clip_ratio": 2 / 5,
            "tool_productivity": 2 / 4,  # 2 correct answers over 4 calls
            "tool_calls/mean": 4 / 5,
            "tool_calls/max": 2.0,
            "tool_exec/success_ratio": 2 / 4,  # ok, ok out of ok, ok, error, timeout
            "tool_exec/error_ratio": 2 / 4,  # error and timeout
            "tool_exec/timeout_ratio": 1 / 4,
            "reward/mean": -0.2,
            "reward/std": math.sqrt((2 * 1.2**2 + 3 * 0.8**2) / 5),
            "reward/answer/mean": -0.2,
            "reward/format/mean": 1.5 / 5,
            "groups/all_same_reward_ratio": 1 / 2,  # group b is all -1
        }
    )


def test_plain_pairs_are_accepted() -> None:
    items = [scored(1.0, True, statuses=("ok",)), scored(0.0, False, statuses=("error", "ok"), tokens=30)]
    pairs = [(item.completion, item.reward) for item in items]
    assert step_metrics([pairs]) == step_metrics([items])
    assert step_metrics([pairs])["tool_calls/mean"] == 1.5


def test_pairs_without_executions_count_calls_from_the_protocol() -> None:
    text = "```python\nprint(1)\n```\n```output\n1\n```\n```python\nprint(2)\n```\n```output\n2\n```"
    completion = Completion(text=text, response_tokens=5)
    reward = RewardResult(total=1.0, correct=True)
    assert tool_call_count(completion) == 2
    metrics = step_metrics([[(completion, reward)]])
    assert metrics["tool_calls/mean"] == 2.0
    assert metrics["tool_productivity"] == 0.5
    # Recorded executions win over the text: an over-budget block that was never run is no call.
    executed = Completion(text=text, executions=execs("ok"), response_tokens=5)
    assert tool_call_count(executed) == 1


def test_length_without_token_count_is_model_text_characters() -> None:
    text = "abcd\n```python\nprint(1)\n```\n```output\nlong tool output\n```\n"
    assert response_length(Completion(text=text)) < len(text) - len("long tool output")
    assert response_length(Completion(text="ignored", response_tokens=17)) == 17


def test_real_protocol_counts_python_blocks() -> None:
    text = "Let me compute.\n```python\nprint(6 * 7)\n```\n```output\n42\n```\nSo \\boxed{42}."
    assert tool_call_count(Completion(text=text)) == 1
    assert tool_call_count(Completion(text="\\boxed{42}")) == 0
    # The inserted tool output is not the model's; the protocol decides where it starts.
    (tool_output,) = protocols.get_protocol("python_markdown").tool_texts(text)
    assert "42" in tool_output
    assert response_length(Completion(text=text)) == len(text) - len(tool_output)
    # After the call budget, an output block the model wrote itself is its own text.
    mimicked = text + "\n```python\nprint(1)\n```\n```output\n1\n```\n"
    assert response_length(Completion(text=mimicked, executions=execs("ok"))) == len(mimicked) - len(tool_output)


def test_empty_step_has_no_metrics() -> None:
    assert step_metrics([]) == {}
    assert step_metrics([[], []]) == {}
    assert validation_metrics([]) == {}


def test_no_tool_calls_leaves_ratios_over_calls_absent() -> None:
    metrics = step_metrics([[scored(1.0, True, calls=0), scored(0.0, False, calls=0)]])
    assert "tool_productivity" not in metrics
    assert "tool_exec/error_ratio" not in metrics
    assert "tool_exec/timeout_ratio" not in metrics
    assert metrics["tool_call_ratio"] == 0.0
    assert metrics["code_in_correct"] == 0.0
    assert metrics["tool_calls/max"] == 0.0


def test_calls_without_correct_answers_have_zero_productivity() -> None:
    metrics = step_metrics([[scored(-1.0, False, statuses=("ok",))]])
    assert metrics["tool_productivity"] == 0.0
    assert metrics["tool_exec/error_ratio"] == 0.0


def test_all_same_groups() -> None:
    same = [scored(1.0, True, calls=0), scored(1.0, True, calls=0)]
    # Floating-point noise is not a learning signal: 0.1 + 0.2 and 0.3 are the same reward.
    noisy = [scored(0.1 + 0.2, False, calls=0), scored(0.3, False, calls=0)]
    single = [scored(0.5, False, calls=0)]
    metrics = step_metrics([same, noisy, single])
    assert metrics["groups/all_same_reward_ratio"] == 1.0
    mean = (1 + 1 + 0.3 + 0.3 + 0.5) / 5
    assert metrics["reward/std"] == pytest.approx(math.sqrt((0.38**2 * 2 + 0.32**2 * 2 + 0.12**2) / 5))
    assert metrics["reward/mean"] == pytest.approx(mean)
    differing = step_metrics([[scored(1.0, True, calls=0), scored(0.0, False, calls=0)]])
    assert differing["groups/all_same_reward_ratio"] == 0.0


def test_component_mean_is_over_completions_that_report_it() -> None:
    metrics = step_metrics(
        [[scored(1.0, True, calls=0, components={"a": 1.0}), scored(0.0, False, calls=0, components={"b": 4.0})]]
    )
    assert metrics["reward/a/mean"] == 1.0
    assert metrics["reward/b/mean"] == 4.0


def test_prefix_names_every_metric() -> None:
    plain = step_metrics(step())
    prefixed = step_metrics(step(), prefix="val/")
    assert prefixed == {f"val/{name}": value for name, value in plain.items()}


def test_pass_at_k_estimator() -> None:
    assert pass_at_k(10, 1, 1) == pytest.approx(0.1)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # C(3,2)/C(5,2)
    assert pass_at_k(3, 2, 2) == 1.0  # only one wrong sample: every pair holds a correct one
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 0)


def test_pass_at_k_averages_over_prompts_with_enough_samples() -> None:
    # Group a: n=3, c=2. Group b: n=2, c=0.
    metrics = step_metrics(step(), prefix="val/", pass_at=(1, 2, 3))
    assert metrics["val/pass@1"] == pytest.approx((2 / 3 + 0) / 2)
    assert metrics["val/pass@2"] == pytest.approx((1.0 + 0.0) / 2)
    assert metrics["val/pass@3"] == pytest.approx(1.0)  # group b has only 2 samples
    assert "val/pass@4" not in step_metrics(step(), prefix="val/", pass_at=(4,))


def test_validation_metrics_default_k_is_the_smallest_group() -> None:
    metrics = validation_metrics(step())
    assert metrics["val/pass@2"] == pytest.approx(0.5)
    assert "val/pass@1" not in metrics
    assert validation_metrics(step(), k=1)["val/pass@1"] == pytest.approx(1 / 3)
    assert set(validation_metrics(step(), k=[1, 3])) >= {"val/pass@1", "val/pass@3", "val/accuracy"}
    assert not any(name.startswith("pass@") or not name.startswith("val/") for name in metrics)


def test_subset_metrics_are_the_step_metrics_of_each_labels_groups() -> None:
    group_a, group_b = step()
    easy = [scored(1.0, True, calls=0, tokens=4), scored(1.0, True, statuses=("ok",), tokens=6)]
    metrics = subset_metrics([group_a, easy, group_b], ["hard", "easy", "hard"], prefix="train/")
    assert metrics == pytest.approx(
        {
            "train/easy/accuracy": 1.0,
            "train/easy/tool_call_ratio": 0.5,
            "train/easy/code_in_correct": 0.5,
            "train/easy/reward/mean": 1.0,
            "train/easy/response_length/mean": 5.0,
            "train/easy/tool_calls/mean": 0.5,
            # hard is groups a and b: the whole step of the hand-computed test above
            "train/hard/accuracy": 2 / 5,
            "train/hard/tool_call_ratio": 3 / 5,
            "train/hard/code_in_correct": 1 / 5,
            "train/hard/reward/mean": -0.2,
            "train/hard/response_length/mean": 30.0,
            "train/hard/tool_calls/mean": 4 / 5,
        }
    )
    assert list(metrics)[:6] == [f"train/easy/{name}" for name in SUBSET_METRICS]  # labels come sorted


def test_unlabelled_groups_are_in_no_subset() -> None:
    group_a, group_b = step()
    assert subset_metrics([group_a, group_b], [None, None]) == {}
    only_b = subset_metrics([group_a, group_b], [None, "x"])
    assert only_b["x/accuracy"] == 0.0 and only_b["x/tool_call_ratio"] == 0.5
    assert subset_metrics([], []) == {}
    with pytest.raises(ValueError):
        subset_metrics([group_a], ["a", "b"])
