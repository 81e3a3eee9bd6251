"""The rewards page's worked examples (webapp/ui/reward_examples.py): every registered reward has one,
and with the reward's default parameters its completion scores as correct against its ground truth,
the ground truth given as the text the *try it* box sends."""

import pytest

from trainer.rewards import REWARD_NAMES, TEXT_REWARD_NAMES, RewardState, score
from webapp.ui.reward_examples import EXAMPLES


def test_every_registered_reward_has_an_example() -> None:
    # swe scores a trajectory's graded patch, not a text: it has no example to try.
    assert sorted(EXAMPLES) == sorted(TEXT_REWARD_NAMES) and set(REWARD_NAMES) - set(TEXT_REWARD_NAMES) == {"swe"}


@pytest.mark.parametrize("reward", TEXT_REWARD_NAMES)
def test_the_example_scores_as_correct(reward: str) -> None:
    example = EXAMPLES[reward]
    result = score(reward, example.completion, example.ground_truth, state=RewardState())
    assert result.correct, (reward, result)
    assert result.total > 0
    assert example.ground_truth_hint.startswith("e.g. ") and len(example.ground_truth_hint) <= 95
