r"""The results table (webapp.runs.results) as text for a paper or a notebook: Markdown, LaTeX, CSV.

Numbers, as the papers print them: a share (accuracy, avg@k, pass@k, the ratios and rates, verl's acc/…) as a
percentage with one decimal (0.4333 → 43.3), a response length (tokens) with none, anything else with two. The
best value of a column is bold (**43.3**, \textbf{43.3}); a missing cell is a dash (–, --). A row is labelled
with the run's name, and " · step N" where the row is not at the run's last step (at=step or at=best chose an
earlier one): a row at its last step reads as the model, as a paper's rows do. The mean column ("Avg.") is there
with two benchmarks or more. Markdown is a GitHub table; LaTeX a booktabs tabular (\usepackage{booktabs}), the
metric in a comment above it, names escaped. CSV is for a spreadsheet or pandas: run id, name and step, then
each value as logged (a share as a fraction, full precision), unmarked, a missing cell empty.
"""

import csv
import io
import re

from trainer.contract import (
    ACCURACY,
    CALL_METRICS,
    CODE_IN_CORRECT,
    SEQUENCE_MATCH,
    SWE_FINISH_RATIO,
    SWE_RESOLVE_RATE,
    TOOL_CALL_RATIO,
)
from webapp.runs.results import MEAN, ResultsRow, ResultsTable

_SHARES = frozenset(
    {ACCURACY, TOOL_CALL_RATIO, CODE_IN_CORRECT, SEQUENCE_MATCH, SWE_RESOLVE_RATE, SWE_FINISH_RATIO, *CALL_METRICS}
)
_SHARE = re.compile(r"^(?:(?:avg|pass)@\d+|acc/.+|.*_ratio)$")
MEAN_HEADER = "Avg."
MODEL_HEADER = "Model"


def is_share(metric: str) -> bool:
    """Whether a metric is a share of responses (0 to 1), printed as a percentage."""
    return metric in _SHARES or bool(_SHARE.match(metric))


def metric_title(metric: str) -> str:
    return f"{metric} (%)" if is_share(metric) else metric


def format_value(metric: str, value: float | None) -> str:
    if value is None:
        return "–"
    if is_share(metric):
        return f"{100 * value:.1f}"
    if metric.startswith("response_length/"):
        return f"{value:.0f}"
    return f"{value:.2f}"


def row_cells(table: ResultsTable, row: ResultsRow) -> list[tuple[str, bool]]:
    """The row's cells as printed, each with whether it is its column's best: one per column, then the mean."""
    metric = table.metric or ""
    cells = [(column, row.cells.get(column)) for column in table.columns]
    if table.has_mean:
        cells.append((MEAN, row.mean))
    return [(format_value(metric, value), table.is_best(column, value)) for column, value in cells]


def _headers(table: ResultsTable) -> list[str]:
    return [MODEL_HEADER, *table.columns, *([MEAN_HEADER] if table.has_mean else [])]


def _markdown_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def results_markdown(table: ResultsTable) -> str:
    headers = _headers(table)
    lines = [
        "| " + " | ".join(_markdown_text(header) for header in headers) + " |",
        "|" + "|".join([":---", *["---:"] * (len(headers) - 1)]) + "|",
    ]
    for row in table.rows:
        cells = [f"**{text}**" if best else text for text, best in row_cells(table, row)]
        lines.append("| " + " | ".join([_markdown_text(row.label), *cells]) + " |")
    return "\n".join(lines) + "\n"


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)


def results_latex(table: ResultsTable) -> str:
    headers = _headers(table)
    lines = [
        f"% {metric_title(table.metric or '')}; needs \\usepackage{{booktabs}}",
        "\\begin{tabular}{l" + "r" * (len(headers) - 1) + "}",
        "\\toprule",
        " & ".join(latex_escape(header) for header in headers) + " \\\\",
        "\\midrule",
    ]
    for row in table.rows:
        cells = [f"\\textbf{{{text}}}" if best else text.replace("–", "--") for text, best in row_cells(table, row)]
        lines.append(" & ".join([latex_escape(row.label), *cells]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def results_csv(table: ResultsTable) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["run_id", "run", "step", *table.columns, MEAN])
    for row in table.rows:
        values = [row.cells.get(column) for column in table.columns] + [row.mean]
        writer.writerow([row.run_id, row.name, row.step, *("" if value is None else value for value in values)])
    return out.getvalue()


RESULTS_FORMATS = {"markdown": results_markdown, "latex": results_latex, "csv": results_csv}
