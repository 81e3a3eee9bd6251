"""A small hand-written corpus in Search-R1's format, its index, and the service over it on a free loopback port."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from retrieval import BM25Index, load_corpus
from retrieval.server import RetrievalServer

ROWS = [
    {"id": "paris", "contents": '"Paris"\nParis is the capital and largest city of France.'},
    {"id": "zorblat", "contents": '"Zorblat"\nZorblat is a harbour city founded by Quenby Marsh in 1802.'},
    {"id": "france", "contents": '"France"\nFrance is a country in Western Europe. Its capital is Paris.'},
    {"id": "marsh", "contents": '"Quenby Marsh"\nQuenby Marsh was an explorer born in Velloria.\nShe founded a city.'},
    {"id": "velloria-a", "contents": '"Velloria"\nVelloria is a city of bridges.'},
    {"id": "velloria-b", "contents": '"Velloria"\nVelloria is a city of bridges.'},
]


def write_corpus(path: Path, rows: list[dict] = ROWS) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> BM25Index:
    folder = tmp_path_factory.mktemp("retrieval")
    return BM25Index.load(load_corpus(write_corpus(folder / "corpus.jsonl")), folder / "cache")


@contextmanager
def serving(server: RetrievalServer) -> Iterator[str]:
    """`server` answering in a thread; its base URL."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def endpoint(index: BM25Index) -> Iterator[str]:
    with serving(RetrievalServer(("127.0.0.1", 0), index)) as url:
        yield url
