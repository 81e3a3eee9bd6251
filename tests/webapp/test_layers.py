"""The webapp's layers, read from its source: core is the floor that every app stands on, and the
metric series have one home."""

import ast
import re
from pathlib import Path

WEBAPP = Path(__file__).resolve().parents[2] / "webapp"
# Everything in webapp/ that stands above core (apps, the pages, the process supervisor).
ABOVE_CORE = ("accounts", "datasets", "rewards", "runs", "tracking", "ui", "devstack")


def imported(path: Path, *, root: Path = WEBAPP.parent) -> set[str]:
    """Every module a file under `root` imports, wherever the import stands (in a function too), as
    full names: `from webapp.runs import models` is webapp.runs.models."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_core_imports_no_app_above_it():
    upward = sorted(
        f"{path.relative_to(WEBAPP)} imports {name}"
        for path in (WEBAPP / "core").rglob("*.py")
        for name in imported(path)
        if name.split(".")[0] == "webapp" and name.split(".")[1] in ABOVE_CORE
    )
    assert upward == []


def test_the_import_reader_sees_relative_imports_and_those_inside_functions(tmp_path):
    source = tmp_path / "webapp" / "core" / "hidden.py"
    source.parent.mkdir(parents=True)
    source.write_text("def late():\n    from ..runs import models\n    import webapp.ui.urls\n")
    assert imported(source, root=tmp_path) == {"webapp.runs.models", "webapp.ui.urls"}


# The metric series' layout: its tables, its models and their reverse accessors on a run.
SERIES_TABLES = re.compile(r"runs_metric(step|series|rollup)|\.(metric_steps|metric_series|rollups)\b")
SERIES_MODELS = {f"webapp.runs.models.{name}" for name in ("MetricStep", "MetricSeries", "MetricRollup")}
# Where the layout is defined (models, their migrations and admin pages) and its one home.
SERIES_HOME = ("runs/models.py", "runs/admin.py", "runs/migrations/", "runs/metric_store/")


def test_only_the_metric_store_knows_the_series_layout():
    knowing = sorted(
        str(path.relative_to(WEBAPP))
        for path in WEBAPP.rglob("*.py")
        if not str(path.relative_to(WEBAPP)).startswith(SERIES_HOME)
        and (SERIES_TABLES.search(path.read_text()) or imported(path) & SERIES_MODELS)
    )
    assert knowing == []
