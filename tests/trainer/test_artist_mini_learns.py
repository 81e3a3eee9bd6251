"""ARTIST-mini, run whole: from a model that knows ARTIST's syntax and one multiplication per call,
RL finds how many calls each problem needs, and the problems that need two get solved.

`python -m trainer run --preset artist-mini` starts from 'tirlab/tiny-char-artist' (trainer.models.
tiny_artist: the cold start fine-tuned on the 'artist-mini-sft' traces, which call the tool for a
product on only half of the problems and stop after one call on half of the chains) and trains it
with ARTIST's reward on hard products (one call needed) and three-factor chains (two needed). The
test asserts from the run's own metrics that calls per response settle per kind of problem and that
accuracy rises, on chains too.
"""

import json

import pytest

from tests.trainer._learning import run_preset, window


@pytest.mark.timeout(1800)
def test_calls_settle_near_what_each_problem_needs_and_accuracy_rises(tiny_model_cache, tmp_path):
    # The preset's first 16 of its 20 steps (a constant learning rate: they are the whole run's), by which the
    # calls have settled.
    values = run_preset("artist-mini", tmp_path / "run", tiny_model_cache, max_steps=16)
    assert len(values) == 16
    start, end = slice(0, 3), slice(11, 16)
    hard, chain = "train/hard/tool_calls/mean", "train/chain/tool_calls/mean"
    # After SFT alone (steps 0-2) the policy is undecided: fewer calls than either kind of problem needs
    # (measured, means of steps 0-4 with seeds 0 and 1: 0.72 and 0.69 on hard products, 1.08 and 1.05 on chains).
    assert window(values, hard, start) < 0.9 and window(values, chain, start) < 1.3
    # RL brings hard products to one call and chains to two, each kind its own number (measured over steps
    # 11-15 with seeds 0 and 1: hard 1.08 and 1.09, chains 1.75 and 1.76; over steps 15-19 of the whole run,
    # hard 1.12 and 1.14, chains 1.91 and 1.91).
    assert 0.85 < window(values, hard, end) < 1.35
    assert window(values, chain, end) > 1.6
    assert window(values, chain, end) > window(values, hard, end) + 0.5
    # And accuracy rises with it, on the chains that need both calls as well (measured over steps 0-2 -> 11-15
    # with seeds 0 and 1: 0.48 -> 0.81 and 0.45 -> 0.79 overall, 0.68 -> 0.95 and 0.57 -> 0.92 on hard
    # products, 0.31 -> 0.68 and 0.34 -> 0.62 on chains).
    assert window(values, "accuracy", end) > window(values, "accuracy", start) + 0.15
    assert window(values, "train/hard/accuracy", end) > window(values, "train/hard/accuracy", start) + 0.15
    assert window(values, "train/chain/accuracy", end) > window(values, "train/chain/accuracy", start) + 0.2
    # ARTIST's format: a think block first, <python> calls answered by <output> blocks, then <answer>.
    assert window(values, "reward/format/mean", end) > 0.4
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    calls = [t for t in trajectories if t["tool_call_count"]]
    assert calls and all(t["turns"][1]["text"].startswith("<output>") for t in calls)
    opened = sum(t["turns"][0]["text"].startswith("<think></think>\n<python>\nprint(") for t in calls)
    assert opened >= 0.9 * len(calls)
