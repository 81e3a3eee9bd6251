"""SandboxPool: warm zygote processes that fork one isolated child per snippet.

The pool runs in the caller's process (the trainer, the HTTP server). It only starts zygotes,
writes requests to them and reads Results back on a reader thread per zygote; model code never
runs here. A zygote that dies is replaced, and every call it had in flight still gets its one
Result (status "killed").
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import itertools
import json
import logging
import math
import os
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from sandbox._zygote import ALLOCATOR_ENV, FRAME
from sandbox.result import Result

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_LIMIT = 1 << 20  # bytes per stream
# Uids for snippets are drawn per pool from a range no login account uses, so two pools on one
# host (tests, a server and a trainer) practically never share one.
UID_SPACE = (1_000_000_000, 4_000_000_000)
UIDS_PER_ZYGOTE = 256
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The zygote runs with this environment only: no DATABASE_URL, SECRET_KEY, tokens, proxies.
# One BLAS thread: the pool's parallelism is across snippets, and a BLAS thread pool in a process
# that forks is both wasted and fragile.
_ZYGOTE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    **ALLOCATOR_ENV,
}
# Snippets naming one of these are forked from a zygote that has numpy and sympy imported; the rest
# from a light one (standard library only), whose much smaller forks are several times cheaper. A
# snippet that reaches numpy without naming it still works on the light one: it imports it itself.
_HEAVY_NAMES = re.compile(r"\b(?:numpy|sympy|mpmath)\b")
# No -E: the environment is ours (scrubbed above) and PYTHONMALLOC in it matters. The zygote
# module is imported on its own, not as part of this package: `import sandbox` would bring this
# module's asyncio, subprocess, logging and threading into every zygote, and each fork then copies
# (and each child re-initialises) all of that.
_BOOTSTRAP = (f"import sys; sys.path.insert(0, {os.path.join(_PACKAGE_PARENT, 'sandbox')!r}); import _zygote; "
              "del sys.path[0]; _zygote.main()")


def default_workers() -> int:
    env = os.environ.get("TIRLAB_SANDBOX_WORKERS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            log.warning("TIRLAB_SANDBOX_WORKERS=%r is not an integer; using the machine's size", env)
    # Snippets often wait (sleep, I/O) rather than compute, and a forked child costs little until it
    # writes memory, so a few concurrent executions per core keep the cores busy.
    return 4 * (os.cpu_count() or 1)


def _failure(message: str) -> Result:
    return Result(status="killed", stderr=message)


class _Zygote:
    """One zygote process and the reader thread that routes its answers to futures."""

    def __init__(self, pool: SandboxPool, index: int, uids: list[int], slots: int, heavy: bool) -> None:
        self.pool = pool
        self.index = index
        self.name = f"{'full' if heavy else 'light'}-{index}"
        self.config = json.dumps({
            "uids": uids,
            "slots": slots,
            "output_limit": pool.output_limit,
            "file_size_mb": pool.file_size_mb,
            "open_files": pool.open_files,
            "processes": pool.processes,
            "tmpfs_mb": pool.tmpfs_mb,
            "spares": pool.spares,
            "heavy": heavy,
        })
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.inflight: dict[int, concurrent.futures.Future[Result]] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.restarts = 0
        self.start()

    def start(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-s", "-c", _BOOTSTRAP, self.config],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_ZYGOTE_ENV, cwd="/",
            # Its own session: a Ctrl-C meant for the caller's terminal does not reach it; it ends
            # when its request pipe closes instead.
            start_new_session=True,
        )
        assert proc.stdout is not None
        hello = self._read_frame(proc)
        if hello is None or not hello.get("hello"):
            proc.kill()
            proc.wait()
            raise RuntimeError("sandbox zygote failed to start (see its stderr above)")
        for problem in hello.get("problems", []):
            log.warning("sandbox: %s", problem)
        self.info = hello
        self.proc = proc
        threading.Thread(target=self._reader, args=(proc,), name=f"sandbox-zygote-{self.name}",
                         daemon=True).start()

    @staticmethod
    def _read_frame(proc: subprocess.Popen[bytes]) -> dict[str, Any] | None:
        assert proc.stdout is not None
        head = proc.stdout.read(4)
        if len(head) < 4:
            return None
        (n,) = FRAME.unpack(head)
        body = proc.stdout.read(n)
        if len(body) < n:
            return None
        return json.loads(body)

    def _reader(self, proc: subprocess.Popen[bytes]) -> None:
        while True:
            msg = self._read_frame(proc)
            if msg is None:
                break
            with self.lock:
                fut = self.inflight.pop(msg["id"], None)
            if fut is not None and not fut.done():
                fut.set_result(Result.from_dict(msg["result"]))
        proc.wait()
        with self.lock:
            lost = list(self.inflight.values())
            self.inflight.clear()
            if self.proc is proc:
                self.proc = None
        for fut in lost:
            if not fut.done():
                fut.set_result(_failure(f"the sandbox worker died (exit status {proc.returncode}) while this "
                                        "snippet ran; it has been replaced"))
        if not self.pool.closed:
            log.warning("sandbox zygote %s exited with %s; starting a new one", self.name, proc.returncode)
            self.ensure_started()

    def ensure_started(self) -> None:
        with self.lock:
            if self.proc is None and not self.pool.closed:
                self.restarts += 1
                self.start()

    def submit(self, req_id: int, request: dict[str, Any], fut: concurrent.futures.Future[Result]) -> None:
        data = json.dumps(request).encode()
        frame = FRAME.pack(len(data)) + data
        with self.lock:
            if self.proc is None:
                self.restarts += 1
                self.start()
            proc = self.proc
            assert proc is not None and proc.stdin is not None
            self.inflight[req_id] = fut
        # Written outside self.lock: the reader thread needs that lock to hand out answers, and a
        # zygote blocked on sending answers stops reading requests, so holding it here could deadlock.
        with self.write_lock:
            try:
                proc.stdin.write(frame)
                proc.stdin.flush()
            except (OSError, ValueError):
                # The reader thread sees the same death and answers every in-flight call.
                proc.kill()

    def close(self) -> None:
        with self.lock:
            proc = self.proc
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


class SandboxPool:
    """A pool of warm zygotes running up to `size` snippets at once of each kind (light: standard
    library only; full: numpy and sympy too); more calls wait in line.

    Every call returns exactly one Result and never raises because of what the snippet did.
    """

    def __init__(self, size: int | None = None, *, zygotes: int | None = None, output_limit: int = DEFAULT_OUTPUT_LIMIT,
                 file_size_mb: int = 64, open_files: int = 256, processes: int = 64, tmpfs_mb: int = 1024,
                 spares: int = 8) -> None:
        self.size = max(1, size if size is not None else default_workers())
        # One zygote of each kind per core: forks and result handling spread over the cores.
        n = max(1, min(self.size, zygotes if zygotes is not None else (os.cpu_count() or 1)))
        self.output_limit = output_limit
        self.file_size_mb = file_size_mb
        self.open_files = open_files
        self.processes = processes
        self.tmpfs_mb = tmpfs_mb
        # Children each zygote keeps forked and set up ahead (own session, uid, rlimits, working
        # dir), waiting for a request: the fork and set-up are then off the request path.
        self.spares = max(0, spares)
        self.closed = False
        self._ids = itertools.count(1)
        slots = math.ceil(self.size / n)
        uid_range = UIDS_PER_ZYGOTE * 2 * n
        base = UID_SPACE[0] + secrets.randbelow((UID_SPACE[1] - UID_SPACE[0]) // uid_range) * uid_range
        self._zygotes: list[_Zygote] = []
        self._light: list[_Zygote] = []
        self._full: list[_Zygote] = []
        try:
            for heavy, kind in ((False, self._light), (True, self._full)):
                for i in range(n):
                    start = base + len(self._zygotes) * UIDS_PER_ZYGOTE
                    # Twice the slots: a uid is reused only after its previous snippet is fully reaped.
                    uids = list(range(start, start + min(UIDS_PER_ZYGOTE, 2 * slots)))
                    kind.append(_Zygote(self, i, uids, slots, heavy))
                    self._zygotes.append(kind[-1])
        except BaseException:
            self.close()
            raise

    @property
    def network_isolated(self) -> bool:
        return all(z.info.get("network_isolated") for z in self._zygotes)

    @property
    def info(self) -> dict[str, Any]:
        first = self._zygotes[0].info if self._zygotes else {}
        return {
            "size": self.size,
            "zygotes": len(self._zygotes),
            "network_isolated": self.network_isolated,
            "fs_isolated": all(z.info.get("fs_isolated") for z in self._zygotes),
            "unprivileged": bool(first.get("unprivileged")),
            "problems": sorted({p for z in self._zygotes for p in z.info.get("problems", [])}),
            "restarts": sum(z.restarts for z in self._zygotes),
        }

    def submit(self, code: str, *, timeout_s: float = 10, memory_mb: int = 1024, stdin: str = "",
               files: Mapping[str, bytes] | None = None) -> concurrent.futures.Future[Result]:
        fut: concurrent.futures.Future[Result] = concurrent.futures.Future()
        try:
            if self.closed:
                fut.set_result(_failure("the sandbox pool is closed"))
                return fut
            request = {
                "code": str(code),
                "timeout_s": float(timeout_s),
                "memory_mb": int(memory_mb),
                "stdin": str(stdin or ""),
                "files": {_safe_relpath(k): bytes(v).hex() for k, v in (files or {}).items()},
            }
            req_id = next(self._ids)
            request["id"] = req_id
            kind = self._full if _HEAVY_NAMES.search(request["code"]) else self._light
            zygote = min(kind, key=lambda z: len(z.inflight))
            zygote.submit(req_id, request, fut)
        except Exception as exc:  # noqa: BLE001 - the contract is one Result per call, whatever happens
            if not fut.done():
                fut.set_result(_failure(f"sandbox error: {type(exc).__name__}: {exc}"))
        return fut

    def run(self, code: str, *, timeout_s: float = 10, memory_mb: int = 1024, stdin: str = "",
            files: Mapping[str, bytes] | None = None) -> Result:
        return self.submit(code, timeout_s=timeout_s, memory_mb=memory_mb, stdin=stdin, files=files).result()

    async def arun(self, code: str, *, timeout_s: float = 10, memory_mb: int = 1024, stdin: str = "",
                   files: Mapping[str, bytes] | None = None) -> Result:
        fut = self.submit(code, timeout_s=timeout_s, memory_mb=memory_mb, stdin=stdin, files=files)
        return await asyncio.wrap_future(fut)

    def close(self) -> None:
        self.closed = True
        for z in self._zygotes:
            z.close()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _safe_relpath(path: str) -> str:
    norm = os.path.normpath(path)
    if os.path.isabs(norm) or norm.startswith(".."):
        raise ValueError(f"file path {path!r} must stay inside the working directory")
    return norm


def decode_files(files: Mapping[str, str | None]) -> dict[str, bytes]:
    """Sandbox Fusion's files: path -> base64 content (None meaning an empty file)."""
    return {path: base64.b64decode(content) if content else b"" for path, content in files.items()}


_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = SandboxPool()
            atexit.register(_default.close)
        return _default


def run(code: str, *, timeout_s: float = 10, memory_mb: int = 1024, stdin: str = "") -> Result:
    """Run one snippet on the lazily started default pool."""
    try:
        pool = default_pool()
    except Exception as exc:  # noqa: BLE001 - even a pool that cannot start answers with a Result
        return _failure(f"sandbox error: cannot start the pool: {exc}")
    return pool.run(code, timeout_s=timeout_s, memory_mb=memory_mb, stdin=stdin)


async def arun(code: str, *, timeout_s: float = 10, memory_mb: int = 1024, stdin: str = "") -> Result:
    """The async twin of run(): many concurrent calls share the default pool."""
    try:
        # Starting the pool imports numpy and sympy in the zygotes (about a second): off the loop.
        pool = _default if _default is not None and not _default.closed else await asyncio.to_thread(default_pool)
    except Exception as exc:  # noqa: BLE001
        return _failure(f"sandbox error: cannot start the pool: {exc}")
    return await pool.arun(code, timeout_s=timeout_s, memory_mb=memory_mb, stdin=stdin)
