"""The README's presets section names every preset the registry holds (trainer.presets): a preset added
without a word in the README fails here, and so does a name the README keeps after its preset is gone.
Each mini's '<mini>-async' twin (registered with `with_async`) is named once for all, as `<mini>-async`."""

import re
from pathlib import Path

from trainer.presets import PRESETS_REGISTRY

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## The minis at a glance"
ASYNC_TWINS = "<mini>-async"


def presets_section() -> str:
    text = README.read_text()
    assert SECTION in text, f"README.md has no section {SECTION!r}: update tests/test_readme_presets.py"
    section = text.split(SECTION, 1)[1]
    return section.split("\n## ", 1)[0]


def named_in_backticks(text: str) -> set[str]:
    return set(re.findall(r"`([^`\s]+)`", text))


def test_every_preset_is_named_in_the_readmes_presets_section() -> None:
    named = named_in_backticks(presets_section())
    twins = {f"{name}-async" for name, preset in PRESETS_REGISTRY.items() if preset.with_async}
    missing = sorted(name for name in PRESETS_REGISTRY.names() if name not in named and name not in twins)
    assert not missing, f"README.md's presets section ({SECTION!r}) does not name: {', '.join(missing)}"
    if twins:
        assert ASYNC_TWINS in named, f"README.md's presets section does not mention the `{ASYNC_TWINS}` twins"


def test_the_presets_section_names_no_preset_that_is_gone() -> None:
    # The table's presets (each a link into docs/presets.md) and the paragraph that lists the others.
    section = presets_section()
    listed = set(re.findall(r"\[`([^`]+)`\]\(docs/presets\.md", section))
    others = re.search(r"^The other presets:.*?(?:\n\n|\Z)", section, flags=re.M | re.S)
    assert others, "README.md's presets section has no paragraph 'The other presets: ...'"
    listed |= named_in_backticks(others.group(0))
    gone = sorted(listed - set(PRESETS_REGISTRY.names()))
    assert not gone, f"README.md's presets section names presets the registry does not have: {', '.join(gone)}"
