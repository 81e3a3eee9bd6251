"""python -m retrieval serve --corpus FILE [--host 127.0.0.1] [--port 8000] [--token TOKEN] [--topk 3]"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from retrieval.corpus import CorpusError, load_corpus
from retrieval.index import BM25Index
from retrieval.server import DEFAULT_TOPK, is_loopback, refusal, serve


def default_index_dir() -> Path:
    return Path(os.environ.get("TIRLAB_VAR_DIR") or "var") / "retrieval"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrieval", description="tirlab's BM25 retrieval service")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="POST /retrieve, as Search-R1's retrieval server, verl and SkyRL-gym use it")
    p_serve.add_argument("--corpus", required=True, help="jsonl file, one {\"id\", \"contents\"} object a line")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed at start)")
    p_serve.add_argument("--token", default=os.environ.get("TIRLAB_RETRIEVAL_TOKEN") or None,
                         help="require 'Authorization: Bearer TOKEN' (default: $TIRLAB_RETRIEVAL_TOKEN); "
                              "needed to bind anywhere but loopback")
    p_serve.add_argument("--topk", type=int, default=DEFAULT_TOPK, help="passages per query when a request gives none")
    p_serve.add_argument("--index-dir", type=Path, default=None,
                         help="where indexes are cached (default: $TIRLAB_VAR_DIR/retrieval, else var/retrieval)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if not args.token and not is_loopback(args.host):
        # Before minutes of indexing, not after.
        print(refusal(args.host), file=sys.stderr)
        return 2
    try:
        corpus = load_corpus(args.corpus)
    except CorpusError as exc:
        print(f"corpus {args.corpus}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"corpus {args.corpus}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    index = BM25Index.load(corpus, args.index_dir or default_index_dir())
    logging.getLogger(__name__).warning("index %s (%s)", index.path, "built" if index.built else "cached")
    try:
        serve(index, args.host, args.port, token=args.token, topk=args.topk)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
