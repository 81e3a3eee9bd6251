"""ARTIST-mini's data: three-factor chains (trainer.data.arithmetic) and the 'artist-mini-sft' traces
(trainer.sft.traces.artist) that call the tool once per multiplication."""

import re
from collections import Counter

import pytest

from trainer.data.arithmetic import arithmetic_examples
from trainer.data.datasets import DatasetError, load_dataset
from trainer.protocols import get_protocol
from trainer.rewards.artist import format_valid
from trainer.sft.data import load_sft_dataset
from trainer.sft.traces.artist import ARTIST_MINI, artist_traces

CHAIN = re.compile(r"What is (\d{2}) \* (\d{2}) \* (\d{2})\?")


@pytest.fixture(scope="module")
def traces() -> list[dict]:
    return artist_traces()


def test_chains_are_three_two_digit_factors_with_four_digit_steps_and_six_digit_answers() -> None:
    examples = arithmetic_examples(300, seed=2, difficulty="chain")
    for example in examples:
        match = CHAIN.fullmatch(example.prompt[0]["content"])
        assert match, example.prompt
        a, b, c = (int(match[i]) for i in (1, 2, 3))
        assert all(32 <= f <= 99 for f in (a, b, c))
        assert len(str(a * b)) == 4 and example.ground_truth == str(a * b * c)
        assert len(example.ground_truth) == 6 and example.extra_info["difficulty"] == "chain"


def test_multi_mixes_hard_and_chain_and_loads_by_name() -> None:
    counts = Counter(e.extra_info["difficulty"] for e in arithmetic_examples(200, seed=0, difficulty="multi"))
    assert set(counts) == {"hard", "chain"} and 60 < counts["chain"] < 140
    assert {e.extra_info["difficulty"] for e in load_dataset("arithmetic:chain", size=10)} == {"chain"}
    assert load_dataset("arithmetic:multi", size=20, split="test") == arithmetic_examples(
        20, difficulty="multi", split="test"
    )
    with pytest.raises(DatasetError, match="chain"):
        load_dataset("arithmetic:triple")


def test_each_call_prints_one_product_and_the_answer_follows_the_calls(traces) -> None:
    tools = get_protocol("artist")
    assert len(traces) == ARTIST_MINI.traces
    for row in traces:
        response, prompt = row["response"], row["prompt"][0]["content"]
        assert format_valid(response), response  # ARTIST's format reward holds for every trace
        factors = re.findall(r"\d+", prompt)
        calls = re.findall(r"<python>\nprint\((\d+) \* (\d+)\)\n</python>", response)
        outputs = re.findall(r"<output>\n(\d+)\n</output>", response)
        assert len(calls) == len(outputs) == row["tool_outputs"] == tools.count_tool_calls(response)
        for (left, right), output in zip(calls, outputs, strict=True):
            assert int(left) * int(right) == int(output)
        if calls:
            assert list(calls[0]) == factors[:2]
        if row["extra_info"]["difficulty"] == "chain" and len(calls) == 2:
            assert calls[1] == (outputs[0], factors[2])  # the first output times the third factor
        answer = tools.final_answer(response, tool_outputs=row["tool_outputs"])
        expected = str(eval(prompt.removeprefix("What is ").removesuffix("?")))
        assert (answer == expected) == (len(calls) >= len(factors) - 1)  # without every product, a wrong guess


def test_the_mix_leaves_the_number_of_calls_open(traces) -> None:
    counts = Counter((row["extra_info"]["difficulty"], row["tool_outputs"]) for row in traces)
    # Chains that stop at each point, hard problems with none, one and a redundant second call.
    assert all(counts[kind] > 100 for kind in [("chain", 0), ("chain", 1), ("chain", 2), ("hard", 0), ("hard", 1)])
    assert counts[("hard", 2)] > 50 and not any(calls > 2 for _, calls in counts)
    # The weighted choice characters: calling and answering weigh the same at each open choice.
    for row in traces:
        for start, end, weight in row["weighted_spans"]:
            if end - start == 1:
                assert row["response"][start - 1 : start + 1] in ("<p", "<a") and weight > 0


def test_the_builtin_set_loads_in_the_artist_protocol() -> None:
    rows = load_sft_dataset("artist-mini-sft", protocol="artist")
    assert len(rows) == ARTIST_MINI.traces and all(row.response.startswith("<think>") for row in rows)
    assert rows[0].weighted_spans
