"""HTTP service answering `POST /retrieve` in both shapes that search-agent trainers send.

- Search-R1's form, which verl's SearchTool also posts: `{"queries": [...], "topk": k | null, "return_scores": b}`
  (PeterGriffinJin/Search-R1 search_r1/search/retrieval_server.py:318-321; search_r1/llm_agent/generation.py:452-458;
  volcengine/verl v0.7.1 verl/tools/utils/search_r1_like_utils.py:60).
- SkyRL-gym's form, one query: `{"query": "...", "topk": k, "return_scores": b}` (NovaSky-AI/SkyRL
  skyrl-gym/skyrl_gym/tools/search.py:48, served by its examples/train/search/retriever/retrieval_server.py:304-345).

Both answer `{"result": [one list per query]}`; each list holds `{"document": {...}, "score": s}` items when
`return_scores` is true, else the documents themselves (retrieval_server.py:348-358). A `topk` of null or 0 means
the server's default (retrieval_server.py:337-338).

Threads, not asyncio, as in sandbox/server.py: a search is a short numpy computation and the stdlib server keeps
this dependency-free. Bound to loopback unless a token guards it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from retrieval.index import BM25Index

log = logging.getLogger(__name__)

MAX_BODY = 4 << 20
MAX_QUERIES = 4096
MAX_TOPK = 1000
DEFAULT_TOPK = 3


class BadRequest(ValueError):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (an unresolvable name is not)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def refusal(host: str) -> str:
    return (
        f"refusing to serve the retrieval service on {host!r} without a token: bind to 127.0.0.1, or pass --token "
        "(or set TIRLAB_RETRIEVAL_TOKEN) so that every request must carry 'Authorization: Bearer <token>'"
    )


def parse_request(req: Any, default_topk: int) -> tuple[list[str], int, bool]:
    """(queries, topk, return_scores) of either form, or BadRequest naming the field at fault."""
    if not isinstance(req, dict):
        raise BadRequest(None, "the body must be a JSON object")
    if ("queries" in req) == ("query" in req):
        raise BadRequest("queries", "give either 'queries' (a list of strings) or 'query' (a string)")
    if "query" in req:
        if not isinstance(req["query"], str):
            raise BadRequest("query", "'query' must be a string")
        queries = [req["query"]]
    else:
        queries = req["queries"]
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise BadRequest("queries", "'queries' must be a list of strings")
        if len(queries) > MAX_QUERIES:
            raise BadRequest("queries", f"at most {MAX_QUERIES} queries per request, got {len(queries)}")
    topk = req.get("topk")
    if topk is not None and (isinstance(topk, bool) or not isinstance(topk, int) or not 0 <= topk <= MAX_TOPK):
        raise BadRequest("topk", f"'topk' must be null or an integer from 0 to {MAX_TOPK} (0 or null: the default)")
    return_scores = req.get("return_scores", False)
    if not isinstance(return_scores, bool):
        raise BadRequest("return_scores", "'return_scores' must be true or false")
    return queries, topk or default_topk, return_scores


def parse_body(body: bytes, default_topk: int) -> tuple[list[str], int, bool]:
    """(queries, topk, return_scores) of a request body in either form, or BadRequest (field None: the body)."""
    try:
        req = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(None, f"the body is not JSON: {exc}") from None
    return parse_request(req, default_topk)


def retrieve(index: BM25Index, queries: list[str], topk: int, return_scores: bool) -> dict[str, Any]:
    """The answer to a parsed request: `{"result": [one list per query]}`, scored items or the documents."""
    result = []
    for query in queries:
        hits = index.search(query, topk)
        documents = [index.corpus.document(hit.index) for hit in hits]
        if return_scores:
            result.append([{"document": doc, "score": hit.score} for doc, hit in zip(documents, hits, strict=True)])
        else:
            result.append(documents)
    return {"result": result}


class RetrievalServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(
        self, address: tuple[str, int], index: BM25Index, *, token: str | None = None, topk: int = DEFAULT_TOPK
    ) -> None:
        host = address[0]
        if not token and not is_loopback(host):
            raise ValueError(refusal(host))
        if not 1 <= topk <= MAX_TOPK:
            raise ValueError(f"the default topk must be from 1 to {MAX_TOPK}, got {topk}")
        super().__init__(address, Handler)
        self.index = index
        self.token = token
        self.topk = topk

    def retrieve(self, queries: list[str], topk: int, return_scores: bool) -> dict[str, Any]:
        return retrieve(self.index, queries, topk, return_scores)


class Handler(BaseHTTPRequestHandler):
    server: RetrievalServer
    protocol_version = "HTTP/1.1"
    server_version = "tirlab-retrieval"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        log.debug("%s " + format, self.address_string(), *args)

    def send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def authorized(self) -> bool:
        token = self.server.token
        if not token:
            return True
        scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return True
        self.close_connection = True
        self.send_json(401, {"detail": "a valid 'Authorization: Bearer <token>' header is required"},
                       {"WWW-Authenticate": 'Bearer realm="tirlab-retrieval"'})
        return False

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if not self.authorized():
            return
        if self.path in ("/health", "/healthz"):
            index = self.server.index
            self.send_json(200, {"status": "ok", "documents": len(index.corpus), "corpus_sha256": index.corpus.sha256,
                                 "topk": self.server.topk})
        else:
            self.send_json(404, {"detail": f"no route GET {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        if not self.authorized():
            return
        if self.path.rstrip("/") != "/retrieve":
            self.send_json(404, {"detail": f"no route POST {self.path}"})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            self.send_json(400, {"detail": "bad Content-Length", "field": None})
            return
        if length > MAX_BODY or length < 0:
            self.close_connection = True
            self.send_json(413, {"detail": f"request body over {MAX_BODY} bytes", "field": None})
            return
        body = self.rfile.read(length)
        try:
            queries, topk, return_scores = parse_body(body, self.server.topk)
        except BadRequest as exc:
            self.send_json(400, {"detail": str(exc), "field": exc.field})
            return
        self.send_json(200, self.server.retrieve(queries, topk, return_scores))


def serve(index: BM25Index, host: str, port: int, *, token: str | None = None, topk: int = DEFAULT_TOPK) -> None:
    server = RetrievalServer((host, port), index, token=token, topk=topk)
    log.warning("tirlab retrieval on http://%s:%d/retrieve (%d documents, default topk %d, %s)", host,
                server.server_port, len(index.corpus), topk, "token required" if token else "no token: loopback only")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
