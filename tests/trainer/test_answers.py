import threading

import pytest

from trainer.answers import answers_equivalent, boxed_answers, last_boxed, last_complete_boxed, unwrap


def test_last_boxed_keeps_nested_braces() -> None:
    assert last_boxed(r"so \boxed{\frac{1}{2}}.") == r"\frac{1}{2}"


def test_last_boxed_takes_the_last_of_several() -> None:
    assert last_boxed(r"\boxed{1} then \boxed{2} finally \boxed{3}") == "3"


def test_last_boxed_reads_fbox() -> None:
    assert last_boxed(r"\fbox{x^{2}}") == "x^{2}"


def test_last_boxed_reads_the_unbraced_form() -> None:
    assert last_boxed(r"$\boxed 5$") == "5"


def test_last_boxed_ignores_escaped_braces() -> None:
    assert last_boxed(r"\boxed{\{1, 2\}}") == r"\{1, 2\}"


def test_last_boxed_is_none_when_the_last_box_is_cut_off() -> None:
    assert last_boxed(r"\boxed{1} and then \boxed{\frac{2}{") is None


def test_last_boxed_is_none_without_a_box() -> None:
    assert last_boxed("the answer is 4") is None


def test_boxed_is_not_matched_inside_longer_commands() -> None:
    assert boxed_answers(r"\boxedx{1} \boxed{2}") == ["2"]


@pytest.mark.parametrize(
    ("pred", "gt"),
    [
        (r"\frac{1}{2}", "0.5"),
        ("0.5", r"\frac12"),
        (r"\dfrac{3}{4}", "0.75"),
        ("1,000", "1000"),
        ("1000.0", "1000"),
        ("x=3", "3"),
        (r"\frac{\sqrt{2}}{2}", r"\sqrt{2}/2"),
    ],
)
def test_latex_and_decimal_forms_are_equivalent(pred: str, gt: str) -> None:
    assert answers_equivalent(pred, gt)


def test_gsm8k_integer_ground_truth_matches_itself() -> None:
    assert answers_equivalent("72", "72")


def test_different_numbers_are_not_equivalent() -> None:
    assert not answers_equivalent("2", "3")


def test_missing_or_empty_prediction_is_wrong() -> None:
    assert not answers_equivalent(None, "3")
    assert not answers_equivalent("  ", "3")


def test_unparseable_prediction_is_wrong_not_an_error() -> None:
    assert not answers_equivalent("{", "1")


def test_verifier_exception_counts_as_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    import trainer.answers as answers

    def explode(*args: object, **kwargs: object) -> bool:
        raise RuntimeError("sympy blew up")

    monkeypatch.setattr(answers, "verify", explode)
    assert not answers_equivalent(r"\frac{1}{2}", "0.5")


def test_verifier_timeout_off_the_main_thread_counts_as_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import trainer.answers as answers

    def slow(*args: object, **kwargs: object) -> bool:
        time.sleep(2)
        return True

    monkeypatch.setattr(answers, "verify", slow)
    out: list[bool] = []
    worker = threading.Thread(target=lambda: out.append(answers_equivalent(r"\frac{1}{2}", "0.5", timeout_s=0.2)))
    worker.start()
    worker.join()
    assert out == [False]


def test_equivalence_works_off_the_main_thread() -> None:
    out: list[bool] = []
    worker = threading.Thread(target=lambda: out.append(answers_equivalent(r"\frac{1}{2}", "0.5")))
    worker.start()
    worker.join()
    assert out == [True]


def test_unwrap_removes_wrappers_around_the_whole_answer_only() -> None:
    assert unwrap(r"\textbf{\text{1.25}}") == "1.25"
    assert unwrap(r"\textbf{1}+\textbf{2}") == r"\textbf{1}+\textbf{2}"
    assert unwrap(r"5\text{ cm}") == r"5\text{ cm}"


def test_a_wrapped_answer_equals_its_content_either_side() -> None:
    assert answers_equivalent(r"\mathbf{1.25}", "1.25")
    assert answers_equivalent("1.25", r"\textbf{1.25}")
    assert not answers_equivalent(r"\textbf{1.26}", "1.25")


def test_last_complete_boxed_skips_a_box_that_never_closes() -> None:
    assert last_complete_boxed(r"\boxed{1} and then \boxed{\frac{2}{") == "1"


def test_last_complete_boxed_reads_boxes_without_overlap() -> None:
    assert last_complete_boxed(r"\boxed{\boxed{1}+2}") == r"\boxed{1}+2"
    assert last_complete_boxed(r"$\boxed 5$ then \fbox{6}") == "6"
    assert last_complete_boxed("no box") is None
