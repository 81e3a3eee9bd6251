"""Retrieval corpora a run's search environment may name (tools.search_corpus): a corpus tirlab generates
(`BUILTIN_CORPORA`), or a jsonl file in Search-R1's format.

A generated corpus is written once under the var folder ($TIRLAB_VAR_DIR, else ./var) as
`retrieval/corpora/<name>-<sha256 prefix>.jsonl`, beside the indexes the retrieval package caches there.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from trainer.contract import DATASET_REF_PREFIX


class CorpusRefError(ValueError):
    """A tools.search_corpus that names no corpus this process can read."""


def _search_mini() -> list[dict]:
    from trainer.data.search_mini import corpus_rows

    return corpus_rows()


GENERATED: dict[str, Callable[[], list[dict]]] = {"search-mini": _search_mini}
# Their names, which tools.search_corpus may give (trainer.config).
BUILTIN_CORPORA = tuple(GENERATED)


def var_dir() -> Path:
    return Path(os.environ.get("TIRLAB_VAR_DIR") or "var")


def index_dir() -> Path:
    """Where BM25 indexes are cached (retrieval.BM25Index.load), as `python -m retrieval serve` caches them."""
    return var_dir() / "retrieval"


def corpus_file(ref: str) -> Path:
    """The jsonl file of corpus `ref`: a generated corpus written out (once), else the file at that path."""
    if ref in GENERATED:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in GENERATED[ref]())
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        path = index_dir() / "corpora" / f"{ref}-{digest}.jsonl"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written beside its place and renamed there: a reader never sees half a corpus.
            fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
            with os.fdopen(fd, "w") as out:
                out.write(text)
            os.replace(partial, path)
        return path
    if ref.startswith(DATASET_REF_PREFIX):
        raise CorpusRefError(f"'{ref}' names a dashboard upload; resolve it to the uploaded file's path first")
    path = Path(ref).expanduser()
    if not path.is_file():
        names = ", ".join(BUILTIN_CORPORA)
        raise CorpusRefError(f"no corpus '{ref}': expected a built-in corpus ({names}) or the path of a jsonl file")
    return path
