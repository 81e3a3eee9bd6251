"""ZeroTIR's replay filters (issue 14, item 7): which groups and which samples a step trains on.

Each sample filter is checked on trajectories built here, against what ZeroTIR's exp_filter_fn
(yyht/openrlhf_async_pipline @d154c0a env/math/math_tir_filter_fn_utils.py:18-36) decides for them;
one short run checks that the drop counts are step metrics and that a dropped sample trains no token.
"""

import json
import random
from itertools import islice, zip_longest
from pathlib import Path

import pytest

from tests.model_cache import MODEL_CACHE
from trainer.config import FilterConfig, validate_config
from trainer.loop.filters import (
    DROPPED_GROUPS_ACCURACY_MAX,
    DROPPED_GROUPS_ACCURACY_MIN,
    DROPPED_GROUPS_SAME_REWARD,
    DROPPED_REPETITIVE,
    DROPPED_SAMPLES,
    DROPPED_SHORTCUT,
    DROPPED_TRUNCATED_UNSOLVED,
    StepFilter,
    repeatness,
    sample_drop_reasons,
    trigram_repetition,
)
from trainer.loop.train import run_training
from trainer.protocols import get_protocol
from trainer.report.client import Reporter
from trainer.rewards import score
from trainer.rollout.multi_turn import Trajectory
from trainer.trajectory import Completion, RewardResult, ToolExecution

FENCE = "```"
MARKDOWN = get_protocol("python_markdown")
RIGHT = RewardResult(total=1.0, correct=True, details={"answer": "42"})
WRONG = RewardResult(total=0.0, correct=False, details={"answer": "41"})
NO_ANSWER = RewardResult(total=0.0, correct=False, details={"answer": None})
ALL_ON = FilterConfig(drop_truncated_unsolved=True, repeatness_max=0.2, trigram_repetition_max=0.6, drop_shortcut=True)


def zerotir_repeatness(s: str) -> float:
    """ZeroTIR's repeatness, verbatim but for names (env/common/repeatness.py:13-54 @d154c0a)."""

    def ranks(values):
        index = {v: i for i, v in enumerate(sorted(set(values)))}
        return [index[v] for v in values]

    def suffix_array(s):
        line = ranks(s)
        n, k, ans, sa = len(s), 1, line, [0] * len(s)
        while k < n - 1:
            line = ranks(list(zip_longest(line, islice(line, k, None), fillvalue=-1)))
            ans, k = line, k << 1
        for i, k in enumerate(ans):
            sa[k] = i
        return ans, sa

    def lcp(arr, suffix_arr, inv_suff):
        n, ans, k = len(arr), [0] * len(arr), 0
        for i in range(n):
            if inv_suff[i] == n - 1:
                k = 0
                continue
            j = suffix_arr[inv_suff[i] + 1]
            while i + k < n and j + k < n and arr[i + k] == arr[j + k]:
                k += 1
            ans[inv_suff[i]] = k
            if k > 0:
                k -= 1
        return ans

    arr = [ord(i) for i in s]
    n = len(arr)
    if n <= 1:
        return 0
    c, sa = suffix_array(arr)
    return sum(lcp(arr, sa, c)) * 2 / (n * (n + 1))


def ran(code: str, printed: str) -> tuple[str, ToolExecution]:
    """One executed call as tirlab's rollout leaves it in the text: the block, then the output block."""
    execution = ToolExecution(call=code, status="ok", output=printed)
    return MARKDOWN.append_output(f"{FENCE}python\n{code}\n{FENCE}\n{FENCE}output", execution), execution


def completion(text: str, executions: tuple[ToolExecution, ...] = (), *, truncated: bool = False) -> Completion:
    return Completion(text, "python_markdown", executions, truncated=truncated)


def trajectory(done: Completion) -> Trajectory:
    return Trajectory(
        done, prompt_ids=[1], response_ids=[2, 3, 4], loss_mask=[1, 0, 1], tool_mask=[0, 1, 0], logprobs=[0.0] * 3
    )


# --- the scores ------------------------------------------------------------------------------


def test_repeatness_is_zerotirs_score() -> None:
    rng = random.Random(0)
    texts = ["", "a", "aa", "ab", "aaaa", "abcabcabc", "The answer is 42.\n" * 5]
    texts += [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 60))) for alphabet in ("ab", "abc", "abcdefgh")
    ] * 30
    for text in texts:
        assert repeatness(text) == pytest.approx(zerotir_repeatness(text), abs=1e-12), text


def test_repeatness_counts_repeated_substrings() -> None:
    # "abc": its 6 substrings are all distinct; "aaaa": 4 distinct of 10 -> 6/10 repeat.
    assert repeatness("abc") == 0.0
    assert repeatness("aaaa") == pytest.approx(0.6)


def test_trigram_repetition_is_the_share_of_repeated_word_trigrams() -> None:
    # 7 trigrams of "a b c" x 3, 3 distinct -> 1 - 3/7 (repetition_penalty_reward.py:91-98).
    assert trigram_repetition("a b c a b c a b c") == pytest.approx(1 - 3 / 7)
    assert trigram_repetition("one two") == 0.0  # fewer than 3 words: 0 (:83-84)
    assert trigram_repetition("x = 1\ny = 2") == 0.0


# --- the sample filters ----------------------------------------------------------------------


def test_a_truncated_unsolved_sample_is_dropped() -> None:
    # overlong_filter: (truncated or too long) and not gold (math_tir_filter_fn_utils.py:22).
    cut = completion("Let me think about 6 * 7 and", truncated=True)
    assert sample_drop_reasons(cut, WRONG, ALL_ON) == [DROPPED_TRUNCATED_UNSOLVED]
    assert sample_drop_reasons(cut, RIGHT, ALL_ON) == []  # solved: kept
    assert sample_drop_reasons(completion("Let me think about 6 * 7 and"), WRONG, ALL_ON) == []  # ended: kept
    assert sample_drop_reasons(cut, WRONG, FilterConfig()) == []  # off by default


def test_a_repetitive_sample_without_an_answer_is_dropped() -> None:
    # void_filter: format_answer > 0.5 and (repeatness > 0.2 or repetition_penalty > 0.6) (:25).
    looping = "Let me check again. " * 20
    assert repeatness(looping) > 0.2 and trigram_repetition(looping) > 0.6
    assert sample_drop_reasons(completion(looping), NO_ANSWER, ALL_ON) == [DROPPED_REPETITIVE]
    # An accepted answer (format_answer 0) keeps it: the filter of correct repetitive samples (:23) is unused (:36).
    assert sample_drop_reasons(completion(looping), RIGHT, ALL_ON) == []
    assert sample_drop_reasons(completion(looping), WRONG, ALL_ON) == []
    plain = "Six times seven: six sevens are forty-two, so the product is 42 and I am done."
    assert sample_drop_reasons(completion(plain), NO_ANSWER, ALL_ON) == []


def test_either_repetition_score_alone_makes_a_sample_repetitive() -> None:
    # Word trigrams repeat, characters mostly do not: only trigram_repetition_max catches it.
    words = " ".join(["alpha beta gamma"] * 4)
    assert trigram_repetition(words) > 0.6 and repeatness(words) < 0.9
    only_trigrams = FilterConfig(trigram_repetition_max=0.6)
    only_repeatness = FilterConfig(repeatness_max=0.9)
    assert sample_drop_reasons(completion(words), NO_ANSWER, only_trigrams) == [DROPPED_REPETITIVE]
    assert sample_drop_reasons(completion(words), NO_ANSWER, only_repeatness) == []


def test_the_zerotir_reward_leaves_no_answer_exactly_when_zerotir_sets_format_answer() -> None:
    # format_answer is 0 only for a valid format that stopped (math_reward_tir.py:193-196, :245).
    looping = "Let me check again. " * 20
    valid_wrong = score("zerotir", looping + "</think><answer>\\boxed{41}</answer>", "42")
    broken = score("zerotir", looping + "<answer>\\boxed{41}</answer>", "42")  # no </think>
    assert sample_drop_reasons(completion(looping), valid_wrong, ALL_ON) == []
    assert sample_drop_reasons(completion(looping), broken, ALL_ON) == [DROPPED_REPETITIVE]


def test_a_correct_answer_with_an_output_the_model_wrote_is_a_shortcut() -> None:
    # shorcut_filter: gold and code_filter, code_filter comparing code, output, opened-code and
    # execution counts (math_tir_filter_fn_utils.py:24,26).
    text, execution = ran("print(6*7)", "42")
    assert sample_drop_reasons(completion(text + "So \\boxed{42}.", (execution,)), RIGHT, ALL_ON) == []
    forged = f"{FENCE}python\nprint(6*7)\n{FENCE}\n{FENCE}output\n42\n{FENCE}\nSo \\boxed{{42}}."
    assert sample_drop_reasons(completion(forged), RIGHT, ALL_ON) == [DROPPED_SHORTCUT]
    assert sample_drop_reasons(completion(forged), WRONG, ALL_ON) == []  # only correct answers are shortcuts


def test_a_correct_answer_with_code_that_never_ran_is_a_shortcut() -> None:
    text, execution = ran("print(6*7)", "42")
    unrun = text + f"{FENCE}python\nprint(7*6)\n{FENCE}\nSo \\boxed{{42}}."  # a block past the call budget
    unclosed = text + f"So \\boxed{{42}}.\n{FENCE}python\nprint(1)"
    assert sample_drop_reasons(completion(unrun, (execution,)), RIGHT, ALL_ON) == [DROPPED_SHORTCUT]
    assert sample_drop_reasons(completion(unclosed, (execution,)), RIGHT, ALL_ON) == [DROPPED_SHORTCUT]


def test_the_shortcut_filter_refuses_a_protocol_without_markdown_blocks() -> None:
    tagged = Completion("<code>print(1)</code>", "retool", (), truncated=False)
    with pytest.raises(ValueError, match="drop_shortcut.*'retool'"):
        sample_drop_reasons(tagged, RIGHT, FilterConfig(drop_shortcut=True))


# --- a step's filter ---------------------------------------------------------------------------


def test_group_rules_count_each_drop_under_its_first_rule() -> None:
    rules = FilterConfig(drop_all_same_reward=True, accuracy_min=0.3, accuracy_max=0.7)
    step = StepFilter(rules)
    assert not step.keep([WRONG, WRONG])  # same reward (and accuracy 0): counted once, as same reward
    assert not step.keep([RIGHT, WRONG, WRONG, WRONG])  # accuracy 0.25 < 0.3
    assert step.keep([RIGHT, WRONG])
    assert not step.keep([RIGHT, RIGHT, RIGHT, WRONG])  # accuracy 0.75 > 0.7
    metrics = step.metrics()
    assert metrics[DROPPED_GROUPS_SAME_REWARD] == 1 and metrics[DROPPED_GROUPS_ACCURACY_MAX] == 1
    assert metrics[DROPPED_GROUPS_ACCURACY_MIN] == 1
    assert DROPPED_SAMPLES not in metrics  # no sample filter on: no sample metric


def test_a_dropped_sample_keeps_its_reward_but_trains_no_token() -> None:
    step = StepFilter(ALL_ON)
    cut = trajectory(completion("Let me think", truncated=True))
    done = trajectory(completion("So \\boxed{42}."))
    rewards = [WRONG, RIGHT]
    trained = step.train_on([cut, done], rewards)
    assert [t.loss_mask for t in trained] == [[0, 0, 0], [1, 0, 1]]
    assert [t.completion for t in trained] == [cut.completion, done.completion]
    assert rewards == [WRONG, RIGHT]  # the group's baseline still sees both rewards
    metrics = step.metrics()
    assert metrics[DROPPED_TRUNCATED_UNSOLVED] == 1 and metrics[DROPPED_SAMPLES] == 1
    assert metrics[DROPPED_REPETITIVE] == 0 and metrics[DROPPED_SHORTCUT] == 0


# --- in a run --------------------------------------------------------------------------------


def test_a_run_reports_each_filters_drops_and_trains_only_the_kept_samples(random_tiny, tmp_path: Path) -> None:
    # Thresholds of 1 never fire (scores are <= 1) and an untrained model is never right, so no shortcut:
    # all drops are the truncated unsolved ones, which the reported trajectories show.
    config = {
        "model": {"name_or_path": str(random_tiny)},
        "data": {"train_dataset": "arithmetic", "prompt_template": "plain", "max_response_tokens": 24},
        "rollout": {"prompts_per_step": 3, "group_size": 4, "trajectories_to_report": 3},
        "filtering": {
            "drop_truncated_unsolved": True,
            "repeatness_max": 1.0,
            "trigram_repetition_max": 1.0,
            "drop_shortcut": True,
        },
        "schedule": {"max_steps": 1},
    }
    with Reporter(tmp_path) as reporter:
        run_training(validate_config(config), reporter=reporter, out_dir=tmp_path, model_cache=MODEL_CACHE)
    (step,) = [json.loads(line)["values"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    samples = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert len(samples) == 12  # every kept group is reported
    dropped = [s for s in samples if s["truncated"] and not s["correct"]]
    assert dropped, "the untrained model should run into the 24-token limit"
    assert step[DROPPED_TRUNCATED_UNSOLVED] == step[DROPPED_SAMPLES] == len(dropped)
    assert step[DROPPED_REPETITIVE] == 0 and step[DROPPED_SHORTCUT] == 0
    kept_tokens = sum(s["response_tokens"] for s in samples if s not in dropped)
    assert step.get("actor/trained_tokens", 0.0) == kept_tokens
