"""Where the search environment's queries go: a corpus searched in-process with tirlab's BM25 index (the retrieval
package, which `python -m retrieval serve` answers with), or a retrieval server's `POST /retrieve`, asked as
Search-R1 asks it: `{"queries": [...], "topk": k, "return_scores": true}` (PeterGriffinJin/Search-R1 @a14dc3a
search_r1/llm_agent/generation.py:450-458).

Either way one query's results are the items of one query's list in a `/retrieve` answer,
`{"document": {"id", "contents", ...}, "score": s}`, which the protocol renders (SearchR1.information).
"""

from __future__ import annotations

import functools
import json
import os
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from retrieval import BM25Index, CorpusError, load_corpus
from trainer.data.corpora import corpus_file, index_dir

# A server that answers 5xx or cannot be reached is asked again, as verl's SearchTool does (3 tries, backoff).
TRIES, BACKOFF_S, TIMEOUT_S = 3, 1.0, 60.0
TOKEN_ENV = "TIRLAB_RETRIEVAL_TOKEN"


class RetrievalError(RuntimeError):
    """A search that could not be answered: the server's refusal, a bad answer, or a corpus that cannot be read."""


class Retriever(ABC):
    def __init__(self, topk: int) -> None:
        self.topk = topk

    @abstractmethod
    def search(self, query: str) -> list[dict[str, Any]]:
        """The `topk` best passages for `query`, best first, as one query's list in a `/retrieve` answer."""


class LocalRetriever(Retriever):
    """BM25 over a corpus file, indexed once (cached by the file's sha256, retrieval.BM25Index)."""

    def __init__(self, index: BM25Index, topk: int) -> None:
        super().__init__(topk)
        self.index = index

    @classmethod
    def open(cls, path: Path, topk: int) -> LocalRetriever:
        try:
            corpus = load_corpus(path)
        except (CorpusError, OSError) as exc:
            raise RetrievalError(f"the search corpus {path} cannot be searched: {exc}") from exc
        return cls(BM25Index.load(corpus, index_dir()), topk)

    def search(self, query: str) -> list[dict[str, Any]]:
        hits = self.index.search(query, self.topk)
        return [{"document": self.index.corpus.document(hit.index), "score": hit.score} for hit in hits]


class HttpRetriever(Retriever):
    """A retrieval server's `/retrieve` (Search-R1's, or tirlab's), with $TIRLAB_RETRIEVAL_TOKEN as its bearer token."""

    def __init__(self, url: str, topk: int, *, token: str | None = None) -> None:
        super().__init__(topk)
        self.url = url
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def search(self, query: str) -> list[dict[str, Any]]:
        body = json.dumps({"queries": [query], "topk": self.topk, "return_scores": True}).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(TRIES):
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - the run's URL
                    answer = json.loads(response.read())
                break
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == TRIES - 1:
                    detail = exc.read().decode(errors="replace")[:500]
                    raise RetrievalError(f"{self.url} answered {exc.code}: {detail}") from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt == TRIES - 1:
                    raise RetrievalError(f"{self.url} could not be reached: {exc}") from exc
            except ValueError as exc:
                raise RetrievalError(f"{self.url} answered something that is not JSON: {exc}") from exc
            time.sleep(BACKOFF_S * 2**attempt)
        try:
            results = answer["result"][0]
            for item in results:
                item["document"]["contents"]  # noqa: B018 - what the protocol renders must be there
        except (KeyError, IndexError, TypeError) as exc:
            raise RetrievalError(
                f"{self.url} did not answer as /retrieve does ({{'result': [[{{'document': {{'contents'}}}}]]}})"
            ) from exc
        return results


@functools.lru_cache(maxsize=8)
def retriever_for(*, corpus: str | None, url: str | None, topk: int) -> Retriever:
    """The retriever of a run's tools.search_corpus or tools.search_url, one per process for the same pair (an
    index is loaded once)."""
    if url is not None:
        return HttpRetriever(url, topk)
    if corpus is None:
        raise RetrievalError("the search environment needs tools.search_corpus or tools.search_url")
    return LocalRetriever.open(corpus_file(corpus), topk)
