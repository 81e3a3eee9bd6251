"""What a training step keeps of its rollouts: whole GRPO groups, and single samples inside them.

Two levels, as ZeroTIR's trainer (yyht/openrlhf_async_pipline @d154c0a) has them:

- **Groups** (`StepFilter.keep`): a group whose rewards are all equal (no GRPO signal,
  `drop_all_same_reward`), or whose accuracy lies outside [accuracy_min, accuracy_max], is dropped
  whole and, up to `max_resample_batches`, replaced by a fresh draw. ZeroTIR keeps a group when
  0.05 < mean answer reward < 0.8 (openrlhf/trainer/ppo_trainer_async.py:355-380, with
  `--dynamic_filtering_reward_range 0.05 0.8`, README.md:151-152); its answer reward is the
  format-gated correctness, tirlab's `correct`.
- **Samples** (`StepFilter.train_on`): in a kept group, a sample that is truncated and unsolved,
  highly repetitive without an answer, or a "shortcut" (correct, but its code and outputs do not
  match) is removed from the loss. ZeroTIR's `exp_filter_fn` (env/math/math_tir_filter_fn_utils.py:18-36)
  flags it after the group's advantages are computed (reinforce_baseline: reward minus the mean of
  all n samples, openrlhf/trainer/ppo_utils/experience_maker.py:823-827, called from
  make_experience_batch, :553), so a flagged sample still counts in its group's baseline, and in the
  group's accuracy, which the group filter read before (ppo_trainer_async.py:356). With the README's
  flags (`--use_filter_sample --use_loss_mask --use_adv_mask_after`, README.md:184-187) its loss mask
  is zeroed (ppo_trainer_async.py:534-541) and it is then left out of the update (:578-584).
  tirlab does the same: advantages come from all G rewards (trainer.grpo.group_advantages), and a
  dropped sample's loss mask is zeroed, so none of its tokens is trained on or counted in a
  token-mean (trainer.grpo.aggregate). A group whose every sample is dropped stays kept, as in
  ZeroTIR, and simply contributes no token.

ZeroTIR's three sample filters, each a `FilterConfig` field:

- truncated unsolved (`drop_truncated_unsolved`): cut at the response limit and not correct
  (`overlong_filter`, math_tir_filter_fn_utils.py:12-16,22: length >= generate_max_len or
  finish_reason 'length', and not gold). tirlab's rollout marks a response truncated when
  generated and tool-output tokens together reach max_response_tokens, ZeroTIR's own accounting.
- repetitive (`repeatness_max`, `trigram_repetition_max`): no answer was accepted and the text
  repeats itself (`void_filter`, :25: format_answer > 0.5 and (repeatness > 0.2 or
  repetition_penalty > 0.6)). format_answer is 1 unless the format check passed and generation
  stopped normally (env/math/math_reward_tir.py:193-196, :245); tirlab reads that as "not correct and
  the reward found no answer" (`details["answer"]` empty), which is the same for the zerotir reward.
  ZeroTIR also computes a filter of correct repetitive samples (:23) but does not apply it (:36).
  The scores are of the whole response, tool outputs included (math_reward_tir.py:99,101).
- shortcut (`drop_shortcut`): correct, but the ```python blocks opened, the ones closed, the
  ```output blocks in the text and the code runs differ in number (`shorcut_filter`, :24,26):
  an answer reached with output the model wrote itself, or with code that never ran.

Not ported: `truncated_filter` (:33, generation ended neither by a stop string nor by length, a
vLLM finish state tirlab's engines do not have), `code_valid_filter` (:32) and `large_ppl` (:28-31,
the base model's perplexity, which the README's run does not compute).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence

from trainer.config import FilterConfig
from trainer.protocols.python_markdown import PythonMarkdown
from trainer.rollout.multi_turn import Trajectory
from trainer.trajectory import Completion, RewardResult

# Rewards computed the same way can still differ in the last bits (0.1 + 0.2 vs 0.3).
_SAME_REWARD_TOLERANCE = 1e-9
# ZeroTIR's patterns (env/math/extract_code.py:31-32) and its count of opened blocks (math_reward_tir.py:210).
_CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_OUTPUT_BLOCK = re.compile(r"```output\n(.*?)```", re.DOTALL)
_CODE_OPENING = "```python\n"
# Words as ZeroTIR's multilingual_tokenization leaves them (env/common/repetition_penalty_reward.py:18-61):
# XLM-R pieces merged back at each whitespace, every CJK character a word of its own.
_WORD = re.compile(r"[\u4e00-\u9fff]|[^\s\u4e00-\u9fff]+")
_TRIGRAM = 3  # COMMON_METRIC['repetition_penalty']([response], 3, -1.0), math_reward_tir.py:101

# The metric name of each drop reason: group rules, then sample filters.
DROPPED_GROUPS_SAME_REWARD = "filter/dropped_groups_same_reward"
DROPPED_GROUPS_ACCURACY_MIN = "filter/dropped_groups_accuracy_min"
DROPPED_GROUPS_ACCURACY_MAX = "filter/dropped_groups_accuracy_max"
DROPPED_TRUNCATED_UNSOLVED = "filter/dropped_truncated_unsolved"
DROPPED_REPETITIVE = "filter/dropped_repetitive"
DROPPED_SHORTCUT = "filter/dropped_shortcut"
# Samples removed from the loss by any sample filter (one sample may match several).
DROPPED_SAMPLES = "filter/dropped_samples"


def repeatness(text: str) -> float:
    """ZeroTIR's repeatness (env/common/repeatness.py:14-54): the sum of the suffix array's LCPs over
    n(n+1)/2, i.e. the share of the text's substring occurrences that repeat an earlier-sorted
    one, 0 for a text without repeats, near 1 for one character repeated. The LCP sum equals
    n(n+1)/2 minus the number of distinct substrings, counted here with a suffix automaton in
    linear time (equal to ZeroTIR's on every string; tests/trainer/test_filters.py checks it)."""
    n = len(text)
    if n <= 1:
        return 0.0
    total = n * (n + 1) // 2
    return (total - _distinct_substrings(text)) / total


def _distinct_substrings(text: str) -> int:
    # Suffix automaton: a state stands for the substrings of lengths (length[link], length]; summed over
    # the states, every distinct substring counts once.
    length, link, moves = [0], [-1], [{}]
    last = 0
    for char in text:
        current = len(length)
        length.append(length[last] + 1)
        link.append(0)
        moves.append({})
        state = last
        while state != -1 and char not in moves[state]:
            moves[state][char] = current
            state = link[state]
        if state != -1:
            target = moves[state][char]
            if length[state] + 1 == length[target]:
                link[current] = target
            else:
                clone = len(length)
                length.append(length[state] + 1)
                link.append(link[target])
                moves.append(dict(moves[target]))
                while state != -1 and moves[state].get(char) == target:
                    moves[state][char] = clone
                    state = link[state]
                link[target] = link[current] = clone
        last = current
    return sum(length[v] - length[link[v]] for v in range(1, len(length)))


def trigram_repetition(text: str) -> float:
    """ZeroTIR's repetition_penalty score (env/common/repetition_penalty_reward.py:66-100, negated by
    math_reward_tir.py:181): 1 - distinct word 3-grams / all word 3-grams, 0 under three words."""
    words = _WORD.findall(text)
    if len(words) < _TRIGRAM:
        return 0.0
    trigrams = list(zip(*(words[i:] for i in range(_TRIGRAM)), strict=False))
    return 1.0 - len(set(trigrams)) / len(trigrams)


def is_shortcut(completion: Completion, reward: RewardResult) -> bool:
    """A correct answer whose code and outputs do not match: ZeroTIR's shorcut_filter
    (math_tir_filter_fn_utils.py:24,26), its counts made as math_reward_tir.py:138-139,208-210 does."""
    if not reward.correct:
        return False
    text = completion.text
    code, outputs = len(_CODE_BLOCK.findall(text)), len(_OUTPUT_BLOCK.findall(text))
    return not (code == outputs == text.count(_CODE_OPENING) == len(completion.executions))


def _answered(reward: RewardResult) -> bool:
    details = reward.details if isinstance(reward.details, dict) else {}
    return reward.correct or bool(details.get("answer"))


def sample_drop_reasons(completion: Completion, reward: RewardResult, rules: FilterConfig) -> list[str]:
    """The metric names of the sample filters that drop this sample from the loss (empty: trained on)."""
    reasons = []
    if rules.drop_truncated_unsolved and completion.truncated and not reward.correct:
        reasons.append(DROPPED_TRUNCATED_UNSOLVED)
    if (rules.repeatness_max is not None or rules.trigram_repetition_max is not None) and not _answered(reward):
        text = completion.text
        if (rules.trigram_repetition_max is not None and trigram_repetition(text) > rules.trigram_repetition_max) or (
            rules.repeatness_max is not None and repeatness(text) > rules.repeatness_max
        ):
            reasons.append(DROPPED_REPETITIVE)
    if rules.drop_shortcut:
        if completion.protocol != PythonMarkdown.name:
            raise ValueError(
                f"filtering.drop_shortcut reads python_markdown's code and output blocks, as ZeroTIR does; "
                f"tools.protocol is {completion.protocol!r}"
            )
        if is_shortcut(completion, reward):
            reasons.append(DROPPED_SHORTCUT)
    return reasons


def group_drop_reason(rewards: Sequence[RewardResult], rules: FilterConfig) -> str | None:
    """The metric name of the first group rule that drops this group, or None when it is kept."""
    totals = [r.total for r in rewards]
    if rules.drop_all_same_reward and max(totals) - min(totals) < _SAME_REWARD_TOLERANCE:
        return DROPPED_GROUPS_SAME_REWARD
    accuracy = sum(r.correct for r in rewards) / len(rewards)
    if rules.accuracy_min is not None and accuracy < rules.accuracy_min:
        return DROPPED_GROUPS_ACCURACY_MIN
    if rules.accuracy_max is not None and accuracy > rules.accuracy_max:
        return DROPPED_GROUPS_ACCURACY_MAX
    return None


class StepFilter:
    """One step's filtering: decides what is kept and counts what each rule dropped."""

    def __init__(self, rules: FilterConfig) -> None:
        self.rules = rules
        self.dropped: Counter[str] = Counter()

    def keep(self, rewards: Sequence[RewardResult]) -> bool:
        """Whether a scored group passes the group rules; a drop is counted under its rule."""
        reason = group_drop_reason(rewards, self.rules)
        if reason is not None:
            self.dropped[reason] += 1
        return reason is None

    def train_on(self, trajectories: Sequence[Trajectory], rewards: Sequence[RewardResult]) -> list[Trajectory]:
        """A kept group's trajectories with the loss mask of every dropped sample zeroed; the
        rewards (and so the group's advantages) are left as they are."""
        result = []
        for trajectory, reward in zip(trajectories, rewards, strict=True):
            reasons = sample_drop_reasons(trajectory.completion, reward, self.rules)
            self.dropped.update(reasons)
            if reasons:
                self.dropped[DROPPED_SAMPLES] += 1
                trajectory = dataclasses.replace(trajectory, loss_mask=[0] * len(trajectory.loss_mask))
            result.append(trajectory)
        return result

    def metrics(self) -> dict[str, float]:
        """The drop count of every rule the config turns on (0 when it dropped nothing)."""
        rules = self.rules
        enabled = {
            DROPPED_GROUPS_SAME_REWARD: rules.drop_all_same_reward,
            DROPPED_GROUPS_ACCURACY_MIN: rules.accuracy_min is not None,
            DROPPED_GROUPS_ACCURACY_MAX: rules.accuracy_max is not None,
            DROPPED_TRUNCATED_UNSOLVED: rules.drop_truncated_unsolved,
            DROPPED_REPETITIVE: rules.repeatness_max is not None or rules.trigram_repetition_max is not None,
            DROPPED_SHORTCUT: rules.drop_shortcut,
        }
        sample_filters = (DROPPED_TRUNCATED_UNSOLVED, DROPPED_REPETITIVE, DROPPED_SHORTCUT)
        enabled[DROPPED_SAMPLES] = any(enabled[name] for name in sample_filters)
        return {name: float(self.dropped[name]) for name, on in enabled.items() if on}
