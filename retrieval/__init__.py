"""tirlab's retrieval service: BM25 over a corpus in Search-R1's jsonl format, served as the `POST /retrieve` that
Search-R1's trainer, verl's SearchTool and SkyRL-gym's SearchEnv call (docs/retrieval.md).

A standalone package like `sandbox/`: it imports neither Django nor `webapp`.
"""

from retrieval.corpus import Corpus, CorpusError, load_corpus, passages_to_string, split_title_text
from retrieval.index import BM25Index, Hit

__all__ = [
    "BM25Index",
    "Corpus",
    "CorpusError",
    "Hit",
    "load_corpus",
    "passages_to_string",
    "split_title_text",
]
