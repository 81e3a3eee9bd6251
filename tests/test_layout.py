"""The house's boundaries, read from the code's own imports: what the webapp may import from the trainer is
the list the README gives (ARCHITECTURE.md's), and the trainer and the sandbox know nothing of Django."""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The README's paragraph that lists them, each as `trainer.<name>`.
README_MARKER = "`webapp/` imports from `trainer/` only"


def imported_modules(folder: Path) -> Iterator[tuple[Path, str]]:
    """Every module imported anywhere under `folder` (function-local imports included), by file."""
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module
                for alias in node.names:
                    yield path, f"{node.module}.{alias.name}"


def trainer_packages_the_webapp_imports() -> dict[str, set[str]]:
    """trainer's top-level modules and packages that webapp/ imports, with the files importing each."""
    used: dict[str, set[str]] = {}
    for path, module in imported_modules(REPO / "webapp"):
        root, _, rest = module.partition(".")
        name = rest.split(".")[0]
        is_trainer_module = (REPO / "trainer" / name).is_dir() or (REPO / "trainer" / f"{name}.py").is_file()
        if root == "trainer" and name and is_trainer_module:
            used.setdefault(f"trainer.{name}", set()).add(str(path.relative_to(REPO)))
    return used


def readme_list() -> set[str]:
    """The `trainer.<name>`s of the README's paragraph that starts with the marker."""
    text = (REPO / "README.md").read_text()
    start = text.find(README_MARKER)
    paragraph = text[start : text.find("\n\n", start)] if start >= 0 else ""
    return set(re.findall(r"`(trainer\.\w+)`", paragraph))


def test_the_webapp_imports_from_the_trainer_exactly_what_the_readme_lists() -> None:
    used = trainer_packages_the_webapp_imports()
    listed = readme_list()
    assert listed, f"the README has no line with {README_MARKER!r} listing `trainer.<name>`s"
    unlisted = {name: sorted(files) for name, files in used.items() if name not in listed}
    assert not unlisted, f"the webapp imports trainer modules the README does not list: {unlisted}"
    assert set(used) == listed, f"the README lists modules the webapp does not import: {listed - set(used)}"


def test_the_trainer_and_the_sandbox_never_import_django_or_the_webapp() -> None:
    for folder in ("trainer", "sandbox"):
        offending = [
            f"{path.relative_to(REPO)}: {module}"
            for path, module in imported_modules(REPO / folder)
            if module.split(".")[0] in {"django", "rest_framework", "channels", "celery", "webapp"}
        ]
        assert not offending, offending
