"""BM25 over a corpus with `bm25s` (numpy only), built once per corpus file and cached on disk.

Search-R1's BM25 retriever is pyserini's LuceneSearcher (search_r1/search/retrieval_server.py:146-205), which needs
a JDK this machine lacks. This index scores as it does where it matters to a trainer:
- Lucene's BM25 (`bm25s` method "lucene": idf = ln(1 + (N - df + 0.5) / (df + 0.5))) with pyserini's default
  parameters k1 = 0.9, b = 0.4 (castorini/pyserini, `LuceneSearcher.set_bm25(k1=0.9, b=0.4)`);
- only documents sharing at least one term with the query are hits (Lucene returns no others), so a query can get
  fewer than k passages, or none (retrieval_server.py:162-172);
- text is lower-cased, split into word characters, and Lucene's English stop words are dropped. Unlike pyserini's
  DefaultEnglishAnalyzer it does not Porter-stem, so "cities" does not match "city".
Ties are broken by corpus order (the earlier row first), so a ranking never depends on the platform's sort.

The cache lives in `<cache_root>/bm25-<corpus sha256>-<params>/`: the same file content is indexed once, a changed
file (or changed scoring parameters) gets a new index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from retrieval.corpus import Corpus

log = logging.getLogger(__name__)

K1 = 0.9
B = 0.4
# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the stop words of pyserini's default analyzer.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)
_WORD = re.compile(r"\w+")
# Everything that changes the index built from the same corpus; part of the cache key.
PARAMS = {"k1": K1, "b": B, "method": "lucene", "tokenizer": "lower-\\w+-lucene-english-stop", "version": 1}
PARAMS_TAG = hashlib.sha256(json.dumps(PARAMS, sort_keys=True).encode()).hexdigest()[:12]
_META = "tirlab-index.json"


def tokenize(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in STOP_WORDS]


@dataclass(frozen=True)
class Hit:
    """A retrieved document: its row in the corpus and its BM25 score."""

    index: int
    score: float


class BM25Index:
    """A corpus and its BM25 scores. `built` says whether this load indexed the corpus (False: read from cache)."""

    def __init__(self, corpus: Corpus, model: bm25s.BM25, *, path: Path, built: bool) -> None:
        self.corpus = corpus
        self.model = model
        self.path = path
        self.built = built

    @classmethod
    def load(cls, corpus: Corpus, cache_root: str | Path) -> BM25Index:
        """The index of `corpus` from `cache_root`, built and saved there first when it is not yet."""
        cache_root = Path(cache_root)
        path = cache_root / f"bm25-{corpus.sha256}-{PARAMS_TAG}"
        if _cached(path, corpus):
            model = bm25s.BM25.load(str(path), mmap=True, show_progress=False)
            return cls(corpus, model, path=path, built=False)
        model = _build(corpus)
        _save(model, path, corpus)
        return cls(corpus, model, path=path, built=True)

    @classmethod
    def in_memory(cls, corpus: Corpus) -> BM25Index:
        """The index of `corpus`, built and never saved (a small corpus, searched once)."""
        return cls(corpus, _build(corpus), path=Path("<memory>"), built=True)

    def search(self, query: str, k: int) -> list[Hit]:
        """The `k` best documents sharing a term with `query`, best first; equal scores in corpus order."""
        ids = self.model.get_tokens_ids(tokenize(query))
        if not ids or k <= 0:
            return []
        scores = np.asarray(self.model.get_scores_from_ids(ids))
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            kth = np.partition(scores[candidates], -k)[-k]
            candidates = candidates[scores[candidates] >= kth]
        # lexsort's last key is the primary one: score descending, then row ascending.
        ranked = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
        return [Hit(index=int(i), score=float(scores[i])) for i in ranked]


def _build(corpus: Corpus) -> bm25s.BM25:
    model = bm25s.BM25(k1=K1, b=B, method="lucene", backend="numpy", csc_backend="numpy")
    model.index([tokenize(text) for text in corpus.contents], show_progress=False)
    return model


def _cached(path: Path, corpus: Corpus) -> bool:
    try:
        meta = json.loads((path / _META).read_text())
    except (OSError, ValueError):
        return False
    return meta.get("corpus_sha256") == corpus.sha256 and meta.get("documents") == len(corpus)


def _save(model: bm25s.BM25, path: Path, corpus: Corpus) -> None:
    """Writes the index beside its final place and renames it there, so a reader never sees half an index; when
    another process finished the same index first, its copy stays."""
    path.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}-"))
    try:
        model.save(str(building), show_progress=False)
        meta = {"corpus_sha256": corpus.sha256, "corpus_path": str(corpus.path), "documents": len(corpus), **PARAMS}
        (building / _META).write_text(json.dumps(meta, indent=2))
        if path.exists():
            shutil.rmtree(path)
        os.rename(building, path)
    except OSError:
        if not _cached(path, corpus):
            raise
        log.info("index %s was saved by another process meanwhile", path)
    finally:
        shutil.rmtree(building, ignore_errors=True)
