"""A retrieval corpus in Search-R1's jsonl format, read whole or refused whole.

One JSON object per line, `{"id": "...", "contents": "\\"Title\\"\\ntext"}`: the title in double quotes on the
first line of `contents`, the passage after it (Search-R1's wiki-18 corpus; its retrieval server reads these rows
with `datasets.load_dataset('json', ...)`, PeterGriffinJin/Search-R1 search_r1/search/retrieval_server.py:18-25).
Other keys of a row are allowed and dropped. Blank lines are skipped (they still count for line numbers).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class CorpusError(ValueError):
    """A corpus file that cannot be served; the message names the 1-based line and what is wrong with it."""


def split_title_text(contents: str) -> tuple[str, str]:
    """(title, text) as Search-R1 splits a passage: the first line, and the lines after it joined by newlines
    (search_r1/llm_agent/generation.py:465-466). The title keeps its double quotes."""
    lines = contents.split("\n")
    return lines[0], "\n".join(lines[1:])


def passages_to_string(documents: Sequence[dict[str, Any]]) -> str:
    """Search-R1's rendering of one query's results inside `<information>`: `Doc {i}(Title: {title}) {text}` per
    passage, each line ended by a newline (search_r1/llm_agent/generation.py:460-469). Takes the items of one
    query's list in a `/retrieve` answer, scored (`{"document": ..., "score": ...}`) or not."""
    out = ""
    for idx, item in enumerate(documents):
        document = item["document"] if "document" in item else item
        title, text = split_title_text(document["contents"])
        out += f"Doc {idx + 1}(Title: {title}) {text}\n"
    return out


@dataclass(frozen=True)
class Corpus:
    """The rows of a corpus file in file order; a document's index is its row number among the documents."""

    path: Path
    sha256: str
    ids: tuple[str, ...]
    contents: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of_rows(cls, rows: Sequence[tuple[str, str]]) -> Corpus:
        """A corpus held only in memory, from `(id, contents)` rows: its digest is that of the jsonl file the rows
        would make."""
        lines = "".join(json.dumps({"id": i, "contents": c}, ensure_ascii=False) + "\n" for i, c in rows)
        digest = hashlib.sha256(lines.encode()).hexdigest()
        return cls(
            path=Path("<memory>"), sha256=digest, ids=tuple(i for i, _ in rows), contents=tuple(c for _, c in rows)
        )

    def document(self, index: int) -> dict[str, str]:
        """The row as `/retrieve` returns it: the corpus row (`id`, `contents`), as Search-R1's server returns rows
        it reads from the corpus file (retrieval_server.py:188, 235), with the `title` (quotes stripped) and
        `text` its BM25 retriever adds for passages stored in the index (retrieval_server.py:179-186)."""
        contents = self.contents[index]
        title, text = split_title_text(contents)
        return {"id": self.ids[index], "contents": contents, "title": title.strip('"'), "text": text}


def _row(raw: bytes, number: int) -> tuple[str, str]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"line {number}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise CorpusError(f"line {number}: a JSON object is expected, got {type(row).__name__}")
    for key in ("id", "contents"):
        if key not in row:
            raise CorpusError(f"line {number}: missing {key!r}")
        if not isinstance(row[key], str):
            raise CorpusError(f"line {number}: {key!r} must be a string, got {type(row[key]).__name__}")
    return row["id"], row["contents"]


def load_corpus(path: str | Path) -> Corpus:
    """Reads and checks every line of `path`; the first bad line raises CorpusError and nothing is returned."""
    path = Path(path)
    digest = hashlib.sha256()
    ids: list[str] = []
    contents: list[str] = []
    first_line: dict[str, int] = {}
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            digest.update(raw)
            if not raw.strip():
                continue
            doc_id, text = _row(raw, number)
            if doc_id in first_line:
                raise CorpusError(f"line {number}: duplicate id {doc_id!r} (first on line {first_line[doc_id]})")
            first_line[doc_id] = number
            ids.append(doc_id)
            contents.append(text)
    if not ids:
        raise CorpusError(f"{path}: no documents")
    return Corpus(path=path, sha256=digest.hexdigest(), ids=tuple(ids), contents=tuple(contents))
