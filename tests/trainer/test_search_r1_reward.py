"""Search-R1's reward (trainer/rewards/search_r1.py) on hand cases from PeterGriffinJin/Search-R1 @a14dc3a:
exact match after qa_em.py's normalize_answer, and v0.3's format-aware score (qa_em_format.py:154-197)
with the values of its scripts (structure 0.2, final 0.1), each branch once."""

import pytest

from trainer.rewards import RewardParamsError, score, score_group, validate_reward_params
from trainer.rewards.search_r1 import normalize_answer, valid_sequence

GOLD = {"target": ["Marie Curie", "Maria Skłodowska-Curie"]}
INFO = '\n\n<information>Doc 1(Title: "Polonium") Polonium was discovered by Marie Curie in 1898.</information>\n\n'
INFO_WITHOUT = '\n\n<information>Doc 1(Title: "Radium") Radium is a chemical element.</information>\n\n'
SEARCHED = "<think>Who found polonium?</think>\n<search> polonium discovery </search>"
FORMAT = {"format": True, "structure_format_score": 0.2, "final_format_score": 0.1, "retrieval_score": 0.1}


def valid(answer: str, info: str = INFO) -> str:
    return f"{SEARCHED}{info}<think>The passage names her.</think>\n<answer> {answer} </answer>"


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  an   apple,\tpie! ", "apple pie"),
        ("U.S.A.", "usa"),
        ("Theatre a la carte", "theatre la carte"),  # whole words only: "Theatre" keeps its "the"
        ("rock-n-roll", "rocknroll"),
    ],
)
def test_normalize_answer_as_qa_em(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_a_right_answer_scores_one_against_any_golden_answer() -> None:
    for answer in ("marie curie!", "MARIA SKŁODOWSKA-CURIE.", "the Marie  Curie"):
        result = score("search_r1", valid(answer), GOLD)
        assert (result.total, result.correct, result.components["em"]) == (1.0, True, 1.0), answer
        assert result.details["answer"] == answer


def test_a_wrong_answer_scores_zero() -> None:
    result = score("search_r1", valid("Pierre Curie"), GOLD)
    assert (result.total, result.correct) == (0.0, False)


def test_a_hyphen_is_dropped_not_spaced() -> None:
    # "Skłodowska-Curie" normalises to "skłodowskacurie": the spaced spelling does not match it.
    assert score("search_r1", valid("Maria Skłodowska Curie"), GOLD).total == 0.0


def test_the_last_answer_counts() -> None:
    assert score("search_r1", "<answer>Pierre</answer> then <answer>Marie Curie</answer>", GOLD).total == 1.0
    assert score("search_r1", "<answer>Marie Curie</answer> then <answer>Pierre</answer>", GOLD).total == 0.0


def test_no_complete_answer_scores_zero() -> None:
    for text in ("Marie Curie", "<answer>Marie Curie", f"{SEARCHED}{INFO}"):
        result = score("search_r1", text, GOLD)
        assert (result.total, result.details["answer"]) == (0.0, None)


def test_ground_truth_forms() -> None:
    text = valid("Paris")
    for truth in ({"target": ["Paris"]}, ["Lyon", "paris"], "Paris", '{"target": ["Paris"]}', ("Paris",)):
        assert score("search_r1", text, truth).total == 1.0, truth


@pytest.mark.parametrize(
    ("truth", "message"),
    [
        ({"answers": ["Paris"]}, "under 'target'"),
        ({"target": []}, "at least one golden answer"),
        ({"target": [1898]}, "all strings"),
        (42, "all strings"),
        ("{not json", "not valid JSON"),
    ],
)
def test_other_ground_truths_are_refused(truth: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score("search_r1", valid("Paris"), truth)


def test_em_alone_ignores_the_structure() -> None:
    assert score("search_r1", "Marie Curie, I think: <answer>Marie Curie</answer>", GOLD).total == 1.0
    assert score("search_r1", valid("Pierre"), GOLD).total == 0.0


def test_format_right_answer_in_a_valid_structure_scores_one() -> None:
    result = score("search_r1", valid("Marie Curie"), GOLD, params=FORMAT)
    assert result.total == 1.0 and result.components == {"em": 1.0, "format": 1.0, "retrieval": 1.0}


def test_format_right_answer_in_a_broken_structure_scores_one_minus_structure() -> None:
    result = score("search_r1", "Sure. <answer>Marie Curie</answer>", GOLD, params=FORMAT)
    assert result.total == pytest.approx(0.8) and result.correct
    assert result.details["format"] == "Unexpected content 'Sure.' between tags (state: start)"


def test_format_wrong_answer_in_a_valid_structure_scores_structure_plus_retrieval() -> None:
    assert score("search_r1", valid("Pierre Curie"), GOLD, params=FORMAT).total == pytest.approx(0.3)
    result = score("search_r1", valid("Pierre Curie", INFO_WITHOUT), GOLD, params=FORMAT)
    assert result.total == pytest.approx(0.2) and result.components["retrieval"] == 0.0


def test_format_retrieval_bonus_is_paid_only_in_a_valid_structure() -> None:
    broken = valid("Pierre Curie").replace("<think>The passage", "<think><think>The passage")
    result = score("search_r1", broken, GOLD, params=FORMAT)
    assert result.components == {"em": 0.0, "format": 0.0, "retrieval": 1.0}
    assert result.total == pytest.approx(0.1)  # final_format_score, as for any wrong answer in a broken structure


def test_format_no_answer_scores_zero_unless_the_structure_is_valid() -> None:
    assert score("search_r1", f"{SEARCHED}{INFO}<think>still unsure</think>", GOLD, params=FORMAT).total == 0.0


def test_format_scripts_values_are_the_defaults() -> None:
    # v0.3's train_grpo_format.sh:81-83: structure 0.2, final 0.1, retrieval 0.
    assert validate_reward_params("search_r1", {"format": True}) == {
        "format": True,
        "structure_format_score": 0.2,
        "final_format_score": 0.1,
        "retrieval_score": 0.0,
    }
    assert score("search_r1", valid("Pierre Curie"), GOLD, params={"format": True}).total == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("<think>a</think><answer>b</answer>", "Valid sequence format"),
        (f"{SEARCHED}{INFO}{SEARCHED}{INFO}<think>x</think><answer>b</answer>", "Valid sequence format"),
        ("<think>a</think><answer>b</answer><answer>c", "Mismatch in answer tags: 2 opening vs 1 closing tags"),
        ("<answer>b</answer>", "Unexpected tag <answer> in state start"),
        (f"{SEARCHED}{INFO}<answer>b</answer>", "Unexpected tag <answer> in state information"),
        ("<think>a</think>", "Incomplete sequence, ended in state after_think"),
        ("<think>a</think><answer>b</answer> done", "Unexpected content in state end"),
    ],
)
def test_valid_sequence_as_qa_em_format(text: str, why: str) -> None:
    assert valid_sequence(text) == (why == "Valid sequence format", why)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"format": "sometimes"}, "params.format"),
        ({"structure_format_score": -0.1}, "params.structure_format_score"),
        ({"final_format_score": 1.5}, "params.final_format_score"),
        ({"retrieval_score": float("nan")}, "params.retrieval_score"),
        ({"score": 2}, "params.score"),
    ],
)
def test_bad_params_are_refused_by_field(params: dict[str, object], field: str) -> None:
    with pytest.raises(RewardParamsError) as info:
        validate_reward_params("search_r1", params)
    assert list(info.value.errors) == [field]


def test_a_search_r1_parquet_row_loads_and_is_scored_against_its_targets(tmp_path):
    # Search-R1's rows (scripts/data_process/nq_search.py:65-79): the golden answers in
    # reward_model.ground_truth.target, written to parquet as its script does; tirlab's verl-style loader reads them.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trainer.data.datasets import load_examples

    row = {
        "data_source": "nq",
        "prompt": [{"role": "user", "content": "Answer the given question. … Question: capital of france?\n"}],
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": {"target": ["Paris", "Paris, France"]}},
        "extra_info": {"split": "test", "index": 0},
    }
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "test.parquet")
    (example,) = load_examples(tmp_path / "test.parquet")
    assert example.data_source == "nq" and example.ground_truth == {"target": ["Paris", "Paris, France"]}
    answers = ["<answer> the paris </answer>", "<answer> Lyon </answer>"]
    right, wrong = score_group("search_r1", answers, example.ground_truth)
    assert (right.total, right.correct, wrong.total) == (1.0, True, 0.0)
