"""Reading a response's tag blocks in order, for the format rewards that check them (ARTIST's two)."""

import re


def tag_blocks(text: str, tag: re.Pattern[str]) -> list[str] | None:
    """The names of `text`'s blocks in order, read with `tag` (a pattern whose group 1 is the tag's
    name, matching `<name>` and `</name>`); None when a block opens inside another, is closed by
    another's tag, or is left open."""
    blocks: list[str] = []
    open_tag: str | None = None
    for match in tag.finditer(text):
        name, closing = match.group(1), match.group(0).startswith("</")
        if closing:
            if open_tag != name:
                return None
            blocks.append(name)
            open_tag = None
        elif open_tag is not None:
            return None  # a block opened inside another
        else:
            open_tag = name
    return None if open_tag is not None else blocks
