"""The README and the docs/ pages it links hold together: every relative link reaches a file of the
repository (and, with an anchor, a heading of that page), every repository path or `trainer.…` /
`webapp.…` name they quote in backticks exists, and every section the code sends a reader to
(`README, "Section"`, `docs/x.md, "Section"`) is a heading there. The docs moved out of one long README,
and the trainer was restructured into packages: a page or a module that moves without its references
fails here."""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "bench" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# The project's own top folders: a backticked path under one of them names a file of this repository
# (docs/fidelity.md also quotes other repositories' paths, which start elsewhere: `verl/…`, `retool/…`).
OWN_FOLDERS = ("trainer", "webapp", "sandbox", "tests", "bench", "data", "integrations", "docs", "templates", "static")
OWN_PATH = re.compile(rf"^(?:{'|'.join(OWN_FOLDERS)})/[\w./*-]*$")
# Data files the paper presets read and tirlab cannot ship: the docs say where the user puts them.
DOWNLOADED = re.compile(r"^data/.*\.parquet$")
OWN_NAME = re.compile(r"^(?:trainer|webapp|sandbox)(?:\.\w+)+$")
# `README, "Many trainers"`, `docs/presets.md ("quickstart"`: a page and the start of one of its headings.
SECTION_REFERENCE = re.compile(r"\b(README|docs/[\w-]+\.md)(?:\.md)?,? \(?(['\"])([^'\"]+)\2")
CODE_SUFFIXES = {".py", ".yml", ".html", ".js", ".css", ".sh"}
FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1 (a link in a code block is not a link).
    As in CommonMark, a line of backticks followed by more backticks is inline code, not a fence, and
    a fence closes only on a line of its own character at least as long."""
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line.strip())
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not match.group(2):
                fence = ""
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
        else:
            yield number, line


def headings(page: Path) -> list[str]:
    """A page's headings as they read: link targets and backticks dropped."""
    return [
        re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2)).replace("`", "")
        for _, line in prose_lines(page.read_text())
        if (match := HEADING.match(line))
    ]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading that reads so: lower-cased, every character but letters, digits,
    '_', '-' and spaces removed, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, repeated ones numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for heading in headings(page):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> Iterator[tuple[int, str]]:
    for number, line in prose_lines(page.read_text()):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            yield number, match.group(1)


def quoted(page: Path) -> Iterator[tuple[int, str]]:
    for number, line in prose_lines(page.read_text()):
        for match in INLINE_CODE.finditer(line):
            yield number, match.group(2).strip()


def broken_link(page: Path, target: str) -> str | None:
    """Why a link does not resolve, or None when it does."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None  # http(s), mailto: outside the repository, not checked (no network here)
    path_part, _, anchor = target.partition("#")
    destination = (page.parent / path_part).resolve() if path_part else page
    if not destination.is_relative_to(REPO) or not destination.exists():
        return "no such file"
    if anchor and (destination.suffix != ".md" or anchor not in anchors(destination)):
        return f"no heading with anchor #{anchor} in {destination.relative_to(REPO)}"
    return None


def defines(module: Path, name: str) -> bool:
    """Whether a module's top level defines or imports `name`."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names):
                return True
    return False


def module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    return next((path for path in (base / "__init__.py", base.with_suffix(".py")) if path.is_file()), None)


def missing_name(dotted: str) -> bool:
    """Whether `trainer.a.b.C` names nothing: its longest prefix that is a module must define the next part.
    A name whose second part is no module of ours is another program's (verl's `trainer.project_name`)."""
    parts = dotted.split(".")
    if module_file(parts[:2]) is None:
        return False
    length = max(n for n in range(2, len(parts) + 1) if module_file(parts[:n]))
    module = module_file(parts[:length])
    return length < len(parts) and module is not None and not defines(module, parts[length])


def section_references() -> Iterator[tuple[str, str, str]]:
    """(file:line, page, quoted section) for every `README, "Section"` or `docs/x.md ("Section"` in the code,
    its comments and its messages to users."""
    code = ("trainer", "webapp", "sandbox", "tests", "bench", "integrations", "templates", "static")
    sources = [
        path
        for folder in code
        for path in sorted((REPO / folder).rglob("*"))
        if path.suffix in CODE_SUFFIXES and "vendor" not in path.parts  # vendored: not ours to point anywhere
    ]
    sources += [REPO / name for name in ("Makefile", "Dockerfile", "docker-compose.yml", "manage.py")]
    for path in sources:
        if path == Path(__file__).resolve():
            continue  # its own examples
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            for match in SECTION_REFERENCE.finditer(line):
                yield f"{path.relative_to(REPO)}:{number}", match.group(1), match.group(3)


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = [
        f"{page.relative_to(REPO)}:{number}: ({target}) {why}"
        for page in PAGES
        for number, target in links(page)
        if (why := broken_link(page, target))
    ]
    assert not broken, "\n".join(broken)


def test_every_quoted_repository_path_and_module_exists() -> None:
    missing = []
    for page in PAGES:
        for number, code in quoted(page):
            if OWN_PATH.match(code) and not DOWNLOADED.match(code) and not any(REPO.glob(code.rstrip("/"))):
                missing.append(f"{page.relative_to(REPO)}:{number}: `{code}`")
            elif OWN_NAME.match(code) and missing_name(code):
                missing.append(f"{page.relative_to(REPO)}:{number}: `{code}`")
    assert not missing, "the docs name paths or modules that do not exist:\n" + "\n".join(missing)


def test_the_slugs_are_githubs() -> None:
    assert slug("Many trainers, many viewers") == "many-trainers-many-viewers"
    assert slug("bench/ingest.py: metric ingest") == "benchingestpy-metric-ingest"
    assert slug("Launch → first GRPO metric") == "launch--first-grpo-metric"


def test_the_sections_the_code_points_readers_to_exist() -> None:
    dangling = []
    for where, page, section in section_references():
        target = REPO / ("README.md" if page == "README" else page)
        texts = headings(target) if target.is_file() else []
        if not any(text.startswith(section) for text in texts):
            dangling.append(f'{where}: {page}, "{section}"')
    assert not dangling, "the code sends readers to sections that do not exist:\n" + "\n".join(dangling)
