"""Split a model turn into prose and the code it wrote, for the rollouts page.

The text is kept exactly as the model wrote it (fences and tags included, since format rewards
judge them); only the bodies of code blocks are marked as code so the page can highlight them.
Every part is rendered escaped: this module never produces markup.
"""

import re
from dataclasses import dataclass

# ```lang\n…``` (ToRL, ZeroTIR, OTC), <code>…</code> (ReTool), <tool_call>…</tool_call> (ToolRL,
# Nemotron-Tool-N1). An unclosed block (a truncated response) runs to the end of the text.
_BLOCK = re.compile(
    r"(?P<open>```(?P<lang>[A-Za-z0-9_+-]*)[^\n]*\n|<code>\n?|<tool_call>\n?)"
    r"(?P<body>.*?)"
    r"(?P<close>```|</code>|</tool_call>|\Z)",
    re.DOTALL,
)

_LANGS = {"python": "python", "py": "python", "python3": "python", "json": "json"}


@dataclass(frozen=True)
class Part:
    kind: str  # "text" or "code"
    text: str
    lang: str = ""  # for code: "python", "json", or "" when unknown


def _lang(opening: str, fence_lang: str | None) -> str:
    if opening.startswith("<code>"):
        return "python"
    if opening.startswith("<tool_call>"):
        return "json"
    return _LANGS.get((fence_lang or "").lower(), "")


def split_model_text(text: str) -> list[Part]:
    """Prose and code parts whose texts, joined, give back `text` exactly."""
    parts: list[Part] = []
    position = 0
    for match in _BLOCK.finditer(text):
        if match.group("lang") == "output":
            continue  # an output fence in model text is prose (e.g. the stop sequence echoed)
        prose = text[position : match.end("open")]
        if prose:
            parts.append(Part("text", prose))
        if match.group("body"):
            parts.append(Part("code", match.group("body"), _lang(match.group("open"), match.group("lang"))))
        if match.group("close"):
            parts.append(Part("text", match.group("close")))
        position = match.end()
    if position < len(text):
        parts.append(Part("text", text[position:]))
    # Merge neighbouring prose so the page renders fewer elements.
    merged: list[Part] = []
    for part in parts:
        if merged and part.kind == "text" and merged[-1].kind == "text":
            merged[-1] = Part("text", merged[-1].text + part.text)
        else:
            merged.append(part)
    return merged
