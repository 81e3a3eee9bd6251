"""The results table (webapp.runs.results) and its exports (webapp.runs.results_export), from runs whose metric
steps went through the real ingest."""

import pytest

from tests.webapp.results_data import BASE, STEP_100, STEP_200, evaluation, paper_runs, run_with_steps
from webapp.runs.results import ResultsError, results_runs, results_table
from webapp.runs.results_export import format_value, results_csv, results_latex, results_markdown

pytestmark = pytest.mark.django_db


@pytest.fixture
def torl(owner):
    """One training run, evaluated after 100 and 200 steps (training steps between carry no benchmark)."""
    return run_with_steps(
        owner,
        "ToRL-1.5B",
        {
            50: {"accuracy": 0.4},
            100: evaluation(STEP_100, accuracy=0.45),
            150: {"accuracy": 0.5},
            200: evaluation(STEP_200, accuracy=0.52),
        },
    )


def test_columns_are_the_benchmarks_and_cells_the_metric_at_the_last_step(torl):
    table = results_table(runs=[torl], metric="accuracy")
    assert table.columns == ["aime24", "aime25", "math500"]
    [row] = table.rows
    assert (row.run_id, row.step, row.label, row.url) == (torl.pk, 200, "ToRL-1.5B", f"/runs/{torl.pk}/")
    assert row.cells == pytest.approx(STEP_200)
    assert row.mean == pytest.approx(sum(STEP_200.values()) / 3)


def test_the_metrics_offered_are_those_reported_on_benchmarks_and_accuracy_is_the_default(owner):
    run = run_with_steps(owner, "r", {10: evaluation(BASE) | evaluation(BASE, "tool_call_ratio")})
    table = results_table(runs=[run], metric=None)
    assert table.metrics == ["accuracy", "tool_call_ratio"]
    assert table.metric == "accuracy"


def test_at_step_takes_that_step_and_labels_the_row_with_it(torl):
    [row] = results_table(runs=[torl], metric="accuracy", at="step", step=100).rows
    assert (row.step, row.label) == (100, "ToRL-1.5B · step 100")
    assert row.cells == pytest.approx(STEP_100)


def test_a_run_without_the_step_is_left_out_saying_why(torl):
    table = results_table(runs=[torl], metric="accuracy", at="step", step=150)
    assert table.rows == [] and table.columns == []
    assert [(left.run_id, left.reason) for left in table.left_out] == [(torl.pk, "has no accuracy at step 150")]


def test_at_best_takes_the_step_best_on_a_benchmark_or_on_the_mean(torl):
    on_aime25 = results_table(runs=[torl], metric="accuracy", at="best", best_on="aime25").rows[0]
    assert on_aime25.step == 100 and on_aime25.cells == pytest.approx(STEP_100)
    assert results_table(runs=[torl], metric="accuracy", at="best", best_on="mean").rows[0].step == 200
    assert results_table(runs=[torl], metric="accuracy", at="best").best_on == "mean"


def test_at_best_on_a_lower_is_better_metric_takes_the_lowest_step(owner):
    bfcl = {"bfcl_simple": 0.2, "bfcl_multiple": 0.3}
    run = run_with_steps(
        owner,
        "ToolRL",
        {
            10: evaluation(bfcl, "calls/format_error_ratio"),
            20: evaluation({"bfcl_simple": 0.05, "bfcl_multiple": 0.1}, "calls/format_error_ratio"),
            30: evaluation({"bfcl_simple": 0.1, "bfcl_multiple": 0.2}, "calls/format_error_ratio"),
        },
    )
    assert results_table(runs=[run], metric="calls/format_error_ratio", at="best").rows[0].step == 20


def test_the_mean_is_left_empty_for_a_row_without_every_column(owner, torl):
    partial = run_with_steps(owner, "no aime25", {10: evaluation({"aime24": 0.9, "math500": 0.9})})
    table = results_table(runs=[torl, partial], metric="accuracy")
    assert table.columns == ["aime24", "aime25", "math500"]
    assert table.rows[1].mean is None
    # Its higher cells are the best of their columns; aime25 and the mean, with one value each, mark nothing.
    assert table.best == pytest.approx({"aime24": 0.9, "math500": 0.9})


def test_the_best_of_each_column_is_marked_the_lower_where_lower_is_better(owner):
    first = run_with_steps(owner, "a", {5: evaluation({"simple": 0.10, "multiple": 0.20}, "calls/format_error_ratio")})
    second = run_with_steps(owner, "b", {5: evaluation({"simple": 0.05, "multiple": 0.30}, "calls/format_error_ratio")})
    table = results_table(runs=[first, second], metric="calls/format_error_ratio")
    assert table.better == "lower"
    assert table.best == pytest.approx({"simple": 0.05, "multiple": 0.20, "mean": 0.15})
    assert table.is_best("simple", table.rows[1].cells["simple"]) and not table.is_best("simple", 0.10)


def test_nothing_is_marked_where_neither_way_is_better_or_with_one_row(owner, torl):
    other = run_with_steps(owner, "b", {5: evaluation(BASE, "tool_calls/mean")})
    mine = run_with_steps(owner, "a", {5: evaluation(STEP_100, "tool_calls/mean")})
    assert results_table(runs=[mine, other], metric="tool_calls/mean").best == {}
    assert results_table(runs=[torl], metric="accuracy").best == {}


def test_a_column_where_every_row_ties_marks_nothing(owner):
    # An evaluation of a base model and of a checkpoint that both fail every chain (seen on the tiny model).
    base = run_with_steps(owner, "base", {0: evaluation({"sums": 1.0, "chains": 0.0})})
    step = run_with_steps(owner, "step 3", {3: evaluation({"sums": 0.95, "chains": 0.0})})
    assert results_table(runs=[base, step], metric="accuracy").best == pytest.approx({"sums": 1.0, "mean": 0.5})


def test_verl_validation_keys_and_tirlab_benchmark_keys_fill_the_same_columns(owner, torl):
    verl = run_with_steps(
        owner, "verl GRPO", {40: {"val-core/aime24/acc/mean@1": 0.3, "val-core/math500/acc/mean_at_1": 0.7}}
    )
    table = results_table(runs=[torl, verl], metric="accuracy")
    assert table.columns == ["aime24", "aime25", "math500"]
    assert table.rows[1].cells == pytest.approx({"aime24": 0.3, "math500": 0.7})


def test_bad_input_is_refused_by_field(torl):
    with pytest.raises(ResultsError) as refused:
        results_table(runs=[torl], metric="nope", at="best", best_on="gsm8k")
    assert set(refused.value.errors) == {"metric", "best_on"}
    assert "they report accuracy" in refused.value.errors["metric"][0]
    with pytest.raises(ResultsError) as refused:
        results_table(runs=[torl], metric="accuracy", at="step")
    assert set(refused.value.errors) == {"step"}


def test_runs_the_user_may_not_see_are_named(owner, stranger, staff, torl):
    theirs = run_with_steps(stranger, "theirs", {})
    runs, errors = results_runs(user=owner, run_ids=[torl.pk, theirs.pk, 999_999])
    assert runs == [torl]
    assert errors == {"runs": [f"runs #{theirs.pk}, #999999 are not visible to you or do not exist"]}
    assert results_runs(user=staff, run_ids=[theirs.pk, torl.pk]) == ([theirs, torl], {})


def test_an_experiment_gives_its_runs_in_the_order_they_were_made(owner, stranger, experiment):
    runs = paper_runs(owner, experiment=experiment)
    training = runs[0].parent  # made first, in the experiment too
    assert results_runs(user=owner, experiment_id=experiment.pk) == ([training, *runs], {})
    assert results_runs(user=stranger, experiment_id=experiment.pk) == (
        [],
        {"experiment": [f"experiment {experiment.pk} is not visible to you or does not exist"]},
    )


def test_more_runs_than_a_table_holds_are_cut_to_the_first_and_said(owner, experiment, monkeypatch):
    monkeypatch.setattr("webapp.runs.results.MAX_RUNS", 2)
    made = [run_with_steps(owner, f"r{index}", {}, experiment=experiment) for index in range(3)]
    assert results_runs(user=owner, run_ids=[run.pk for run in made]) == (
        made[:2],
        {"runs": ["at most 2 runs fit a table"]},
    )
    assert results_runs(user=owner, experiment_id=experiment.pk) == (
        made[:2],
        {"experiment": [f"experiment {experiment.pk} has more runs than a table holds (2): choose some"]},
    )


def test_a_table_of_many_runs_takes_three_queries(owner, experiment, django_assert_max_num_queries):
    for index in range(4):
        paper_runs(owner, experiment=experiment)
        run_with_steps(owner, f"sft {index}", {1: {"accuracy": 0.1}}, experiment=experiment)
    with django_assert_max_num_queries(3):  # the experiment, its runs, their metric steps
        runs, _ = results_runs(user=owner, experiment_id=experiment.pk)
        table = results_table(runs=runs, metric="accuracy", at="best")
    assert len(table.rows) == 12 and len(table.left_out) == 8  # 4 training runs (no benchmark) and 4 sft runs


@pytest.fixture
def paper_table(owner):
    return results_table(runs=paper_runs(owner), metric="accuracy")


def test_markdown_is_a_github_table_with_the_best_in_bold(paper_table):
    assert results_markdown(paper_table) == (
        "| Model | aime24 | aime25 | math500 | Avg. |\n"
        "|:---|---:|---:|---:|---:|\n"
        "| Qwen2.5-Math-1.5B | 10.0 | 6.7 | 55.2 | 24.0 |\n"
        "| ToRL-1.5B · step 100 | 23.3 | **16.7** | 74.2 | 38.1 |\n"
        "| ToRL-1.5B · step 200 | **26.7** | 13.3 | **75.8** | **38.6** |\n"
    )


def test_latex_is_a_booktabs_tabular_with_the_best_in_textbf(paper_table):
    assert results_latex(paper_table) == (
        "% accuracy (%); needs \\usepackage{booktabs}\n"
        "\\begin{tabular}{lrrrr}\n"
        "\\toprule\n"
        "Model & aime24 & aime25 & math500 & Avg. \\\\\n"
        "\\midrule\n"
        "Qwen2.5-Math-1.5B & 10.0 & 6.7 & 55.2 & 24.0 \\\\\n"
        "ToRL-1.5B · step 100 & 23.3 & \\textbf{16.7} & 74.2 & 38.1 \\\\\n"
        "ToRL-1.5B · step 200 & \\textbf{26.7} & 13.3 & \\textbf{75.8} & \\textbf{38.6} \\\\\n"
        "\\bottomrule\n"
        "\\end{tabular}\n"
    )


def test_latex_escapes_names_and_markdown_escapes_pipes(owner):
    named = run_with_steps(owner, "torl_c3 & 50% #2 | a", {5: evaluation({"openai/gsm8k": 0.5, "math500": 0.25})})
    table = results_table(runs=[named], metric="accuracy")
    assert "torl\\_c3 \\& 50\\% \\#2 | a & 25.0 & 50.0 & 37.5 \\\\" in results_latex(table)
    assert "& math500 & openai\\_gsm8k & Avg." in results_latex(table)
    assert "| torl_c3 & 50% #2 \\| a | 25.0 | 50.0 | 37.5 |" in results_markdown(table)


def test_csv_holds_the_values_as_logged_unmarked(paper_table):
    base, step_100, step_200 = (row.run_id for row in paper_table.rows)
    assert results_csv(paper_table) == (
        "run_id,run,step,aime24,aime25,math500,mean\r\n"
        f"{base},Qwen2.5-Math-1.5B,0,0.1,0.06666666666666667,0.552,0.23955555555555555\r\n"
        f"{step_100},ToRL-1.5B · step 100,100,0.23333333333333334,0.16666666666666666,0.742,0.38066666666666665\r\n"
        f"{step_200},ToRL-1.5B · step 200,200,0.26666666666666666,0.13333333333333333,0.758,0.38599999999999995\r\n"
    )


def test_a_partial_mean_and_a_missing_cell_print_as_dashes_and_empty_csv_cells(owner):
    full = run_with_steps(owner, "full", {5: evaluation({"a": 0.5, "b": 0.5})})
    partial = run_with_steps(owner, "partial", {5: evaluation({"a": 0.25})})
    table = results_table(runs=[full, partial], metric="accuracy")
    assert results_markdown(table).splitlines()[-1] == "| partial | 25.0 | – | – |"
    assert results_latex(table).splitlines()[-3] == "partial & 25.0 & -- & -- \\\\"
    assert results_csv(table).splitlines()[-1] == f"{partial.pk},partial,5,0.25,,"


@pytest.mark.parametrize(
    ("metric", "value", "printed"),
    [
        ("accuracy", 0.4333, "43.3"),
        ("pass@8", 0.6, "60.0"),
        ("acc/best@4/mean", 0.5, "50.0"),
        ("tool_call_ratio", 0.875, "87.5"),
        ("response_length/mean", 812.46, "812"),
        ("tool_calls/mean", 1.234, "1.23"),
        ("reward/mean", -0.25, "-0.25"),
    ],
)
def test_shares_print_as_percentages_with_one_decimal_and_other_metrics_as_numbers(metric, value, printed):
    assert format_value(metric, value) == printed
