"""HTTP service shaped like Sandbox Fusion's `POST /run_code`, so verl's tool and the
`sandbox-fusion` client work against it unchanged.

Threads, not asyncio: each request thread only waits on a pool future, and the stdlib server keeps
this dependency-free. Admission is bounded: past `size + queue` requests in flight, new ones get 429
at once (and 503 while the pool is unavailable) instead of queueing without bound.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sandbox.pool import SandboxPool, decode_files
from sandbox.result import Result

log = logging.getLogger(__name__)

MAX_BODY = 16 << 20
DEFAULT_MEMORY_MB = 1024
# Sandbox Fusion's run_result.status for each of our statuses.
RUN_STATUS = {
    "ok": "Finished",
    "error": "Finished",
    "memory_exceeded": "Finished",
    "output_limit": "Finished",
    "killed": "Finished",
    "timeout": "TimeLimitExceeded",
}
MESSAGES = {
    "ok": "",
    "error": "",
    "memory_exceeded": "memory limit exceeded",
    "output_limit": "output limit exceeded: output truncated and the process killed",
    "killed": "process killed by a signal",
    "timeout": "time limit exceeded",
}


def to_fusion(result: Result) -> dict[str, Any]:
    return {
        "status": "Success" if result.status == "ok" else "Failed",
        "message": MESSAGES[result.status],
        "compile_result": None,
        "run_result": {
            "status": RUN_STATUS[result.status],
            "execution_time": result.duration_ms / 1000,
            "return_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
        },
        "executor_pod_name": None,
        "files": {},
        # Extras a Sandbox Fusion client ignores and a tirlab caller can use.
        "tirlab": {"status": result.status, "truncated": result.truncated,
                   "network_isolated": result.network_isolated},
    }


def sandbox_error(message: str) -> dict[str, Any]:
    return {"status": "SandboxError", "message": message, "compile_result": None, "run_result": None,
            "executor_pod_name": None, "files": {}}


class SandboxServer(ThreadingHTTPServer):
    daemon_threads = True
    # A burst of clients should meet 429s, not refused connections.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], pool: SandboxPool, *, queue: int | None = None) -> None:
        super().__init__(address, Handler)
        self.pool = pool
        self.limit = pool.size + (queue if queue is not None else 2 * pool.size)
        self.inflight = 0
        self.lock = threading.Lock()

    def admit(self) -> bool:
        with self.lock:
            if self.inflight >= self.limit:
                return False
            self.inflight += 1
            return True

    def release(self) -> None:
        with self.lock:
            self.inflight -= 1


class Handler(BaseHTTPRequestHandler):
    server: SandboxServer
    protocol_version = "HTTP/1.1"
    server_version = "tirlab-sandbox"

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

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path == "/v1/ping":
            # Sandbox Fusion answers its ping with the JSON string "pong".
            self.send_json(200, "pong")
        elif self.path in ("/health", "/healthz"):
            pool = self.server.pool
            healthy = not pool.closed
            self.send_json(200 if healthy else 503, {
                "status": "ok" if healthy else "closed",
                "inflight": self.server.inflight,
                "limit": self.server.limit,
                **pool.info,
            })
        else:
            self.send_json(404, {"detail": f"no route GET {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") != "/run_code":
            self.send_json(404, {"detail": f"no route POST {self.path}"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            self.send_json(413, sandbox_error(f"request body over {MAX_BODY} bytes"))
            return
        body = self.rfile.read(length)
        try:
            req = json.loads(body or b"{}")
            if not isinstance(req, dict) or not isinstance(req.get("code"), str):
                raise ValueError("'code' (a string) is required")
            language = req.get("language", "python")
            timeout_s = float(req.get("run_timeout") or 10)
            memory = req.get("memory_limit_MB")
            memory_mb = int(memory) if memory is not None and int(memory) > 0 else DEFAULT_MEMORY_MB
            files = decode_files(req.get("files") or {})
            stdin = req.get("stdin") or ""
        except (ValueError, TypeError) as exc:
            self.send_json(400, sandbox_error(f"bad request: {exc}"))
            return
        if language != "python":
            self.send_json(400, sandbox_error(
                f"language {language!r} is not supported: tirlab's sandbox runs only 'python'"))
            return
        if self.server.pool.closed:
            self.send_json(503, sandbox_error("the sandbox pool is shutting down"), {"Retry-After": "1"})
            return
        if not self.server.admit():
            self.send_json(429, sandbox_error(
                f"sandbox busy: {self.server.limit} executions already running or queued"), {"Retry-After": "1"})
            return
        try:
            result = self.server.pool.run(req["code"], timeout_s=timeout_s, memory_mb=memory_mb, stdin=stdin,
                                          files=files)
        finally:
            self.server.release()
        self.send_json(200, to_fusion(result))


def serve(host: str, port: int, *, workers: int | None = None, queue: int | None = None) -> None:
    with SandboxPool(size=workers) as pool:
        server = SandboxServer((host, port), pool, queue=queue)
        info = pool.info
        log.warning("tirlab sandbox on http://%s:%d (workers=%d, network isolated=%s%s)", host, server.server_port,
                    pool.size, info["network_isolated"],
                    "".join(f"; {p}" for p in info["problems"]))
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
