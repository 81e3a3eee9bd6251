"""The zygote: a warm process that forks one child per snippet.

It runs as its own process (started by sandbox.pool with a scrubbed environment), isolates itself
once (network and mount namespaces), imports the usual libraries once, and then serves requests
read from fd 0 as length-prefixed JSON frames, answering Results on fd 1. Every snippet runs in a
fresh fork, so nothing one snippet defines or imports reaches the next, and the zygote itself never
runs model code.

Children are forked ahead of time ("spares"): a spare is already in its own session, under the
unique uid of the execution it will serve, with its rlimits, fresh working directory and scrubbed
environment, and waits on a pipe. A request only hands it its code (through a memfd) and wakes it;
the fork, the set-up and, after the Result, the teardown and reaping all happen off the request
path. A spare serves exactly one snippet and then dies, like any other child. Its working directory
is moved out of every snippet's reach before its Result is sent, and deleted once it is reaped.

This module must stay importable without Django, webapp or trainer, and without numpy/sympy (they
are imported in main() only).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import gc
import heapq
import io
import json
import os
import resource
import selectors
import shutil
import signal
import struct
import sys
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any

FRAME = struct.Struct("<I")

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# Where snippets' working directories live; a private tmpfs inside the zygote's mount namespace.
WORK_ROOT = "/tmp/tirlab-sandbox"
# Where a working directory goes when its Result is sent, until its process is reaped and it is
# deleted: a directory only the zygote may enter, so no later snippet can reach it even for that moment.
ANSWERED_ROOT = os.path.join(WORK_ROOT, ".answered")
# Directories every user may write to on a Debian host. They are hidden behind root-owned tmpfs
# mounts (mode 0755) in the zygote's mount namespace, so a snippet's working directory is the only
# place it can write, and /run's Unix sockets (PostgreSQL's among them) are out of reach.
HIDDEN_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run")

# Modules paid for once in the zygote; children inherit them already imported. There are two kinds
# of zygote: a light one with the standard library only, and a full one that also holds numpy and
# sympy. A fork and its exit cost in proportion to the memory mapped (numpy and sympy take a 10 MB
# process to 65 MB), so snippets that do not name those libraries are forked from the light one.
PRELOAD = ("math", "cmath", "fractions", "decimal", "itertools", "functools", "collections", "statistics",
           "random", "re", "json", "heapq", "bisect", "string")
HEAVY = ("numpy", "sympy")
# The zygotes' allocator (set in their environment by the pool): Python objects on glibc's heap,
# which glibc backs with transparent huge pages; a fork then copies a few hundred page-table entries
# instead of ~16,000, roughly halving fork + exit cost.
ALLOCATOR_ENV = {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}

_libc = ctypes.CDLL(None, use_errno=True)


def _libc_call(name: str, *args: Any) -> None:
    if getattr(_libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


@dataclass
class Config:
    uids: list[int]
    slots: int
    output_limit: int
    file_size_mb: int
    open_files: int
    processes: int
    tmpfs_mb: int
    spares: int = 8
    heavy: bool = True  # also preload HEAVY (numpy, sympy)


def isolate(cfg: Config) -> dict[str, Any]:
    """Enter new network and mount namespaces; report what worked instead of assuming it."""
    info: dict[str, Any] = {"network_isolated": False, "fs_isolated": False, "problems": []}
    try:
        # A fresh network namespace holds only a loopback device that is down: no route anywhere,
        # not even to services listening on the host's 127.0.0.1.
        _libc_call("unshare", CLONE_NEWNET)
        info["network_isolated"] = True
    except OSError as exc:
        info["problems"].append(f"network namespace unavailable ({exc}); snippets can reach the network")
    try:
        _libc_call("unshare", CLONE_NEWNS)
        # Private propagation first, so the tmpfs mounts below never show up on the host.
        _libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
        interpreter = _interpreter_dirs()
        for path in HIDDEN_DIRS:
            if os.path.isdir(path) and not os.path.islink(path):
                # A virtualenv or checkout under /tmp (a CI clone, say) must stay importable.
                inside = [p for p in interpreter if p.startswith(path + "/")]
                _cover(path, inside, size_mb=cfg.tmpfs_mb if path == "/tmp" else 1)
        _expose_interpreter(interpreter)
        info["fs_isolated"] = True
    except OSError as exc:
        info["problems"].append(f"mount namespace unavailable ({exc}); /tmp and /run stay shared with the host")
    os.makedirs(WORK_ROOT, mode=0o711, exist_ok=True)
    os.makedirs(ANSWERED_ROOT, mode=0o700, exist_ok=True)
    return info


def _interpreter_dirs() -> list[str]:
    """The interpreter's directories (prefixes and import paths), outermost only."""
    wanted = sorted({os.path.realpath(p) for p in [sys.base_prefix, sys.prefix, *sys.path] if p and os.path.isdir(p)})
    targets: list[str] = []
    for path in wanted:
        if not any(path == t or path.startswith(t + "/") for t in targets):
            targets.append(path)
    return targets


def _cover(directory: str, keep: list[str], *, size_mb: int) -> None:
    """Mount an empty root-owned tmpfs over `directory`, then bind-mount `keep` (paths inside it)
    back at their usual places."""
    fds = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep}
    try:
        opts = f"size={size_mb}m,mode=0755".encode()
        _libc_call("mount", b"tmpfs", directory.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts)
        for path, fd in fds.items():
            os.makedirs(path, mode=0o755, exist_ok=True)
            _libc_call("mount", f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None)
    finally:
        for fd in fds.values():
            os.close(fd)


def _expose_interpreter(targets: list[str]) -> None:
    """Make the interpreter's own files readable by the unprivileged snippet uids.

    A Python installed under a private home (pyenv in /root, mode 0700) is unreadable to them, so
    a snippet could not import anything the zygote had not. Inside this mount namespace only, such
    a blocking directory is covered by an empty root-owned tmpfs and just the interpreter's
    directories are bind-mounted back at their usual paths, which also keeps the rest of that home
    (keys, credentials) out of sight.
    """
    blocked: dict[str, list[str]] = {}
    for path in targets:
        parts = path.split("/")
        for i in range(2, len(parts) + 1):
            ancestor = "/".join(parts[:i])
            if not os.stat(ancestor).st_mode & 0o001:
                blocked.setdefault(ancestor, []).append(path)
                break
    for ancestor, paths in blocked.items():
        _cover(ancestor, paths, size_mb=1)


def _pwrite_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)


def _close_from(lowfd: int) -> None:
    # os.closerange is one close_range(2) system call where the kernel has it (Linux 5.9+); closing
    # 65,536 descriptors one by one costs milliseconds.
    os.closerange(lowfd, 0x7FFFFFFF)


def _vm_size() -> int:
    # os.read rather than open(): no file objects, so few pages of the zygote's heap are touched.
    fd = os.open("/proc/self/status", os.O_RDONLY)
    try:
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    start = data.find(b"VmSize:")
    if start < 0:
        return 0
    return int(data[start + 7:data.index(b"kB", start)]) * 1024


def _exit_code_of(exc: SystemExit) -> tuple[int, str]:
    # Mirrors the interpreter: None -> 0, int -> itself, anything else is printed and gives 1.
    code = exc.code
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code, ""
    return 1, f"{code}\n"


def child_main(uid: int | None, workdir: str, fds: tuple[int, int, int, int, int, int], cfg: Config) -> None:
    """Runs in the forked child; never returns.

    Everything but the request-dependent address-space cap is set up before the child learns its
    code: it then blocks on fd 4 (the go pipe) until the zygote hands it a request in fd 5 (a
    memfd), closes both and runs the snippet.
    """
    try:
        zygote_pid = os.getppid()
        os.setsid()  # its own session and process group, so a timeout can kill the group at once
        # Moved above every target number first, so that no dup2 below overwrites a source.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 16) for fd in fds]
        for target, fd in enumerate(high):  # 0 stdin, 1 stdout, 2 stderr, 3 status, 4 go, 5 request
            os.dup2(fd, target, inheritable=target < 4)
        # Nothing of the zygote (its request pipe, other snippets' pipes) may stay reachable.
        _close_from(6)
        os.chdir(workdir)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        fsize = cfg.file_size_mb << 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_NOFILE, (cfg.open_files, cfg.open_files))
        if uid is not None:
            # RLIMIT_NPROC counts processes per real uid; the uid is this execution's alone, so the
            # limit is per snippet and a fork bomb cannot starve other snippets or the host.
            resource.setrlimit(resource.RLIMIT_NPROC, (cfg.processes, cfg.processes))
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        # setuid binaries (su, ping...) must not hand the snippet its privileges back.
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        # Set after the uid change, which clears it: if the zygote dies, its snippets die with it.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != zygote_pid:  # the zygote died before the line above took effect
            os._exit(125)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ["HOME"] = workdir
        os.environ["TMPDIR"] = workdir
        sys.argv = [""]
        # Like `python -c`: the working directory first (the zygote's sys.path has no repository in it).
        sys.path.insert(0, "")
        # Fresh stream objects: nothing buffered in the zygote's can leak into this child's output.
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", write_through=False)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        # The fork already maps the interpreter, numpy and sympy: the address-space cap goes on top of
        # what is mapped now, set up and ready (measured here, off the request path).
        base_vm = _vm_size()
        # Ready: wait for the one request this child will ever serve (EOF: the zygote gave it up).
        if not os.read(4, 1):
            os._exit(0)
        size = os.fstat(5).st_size
        data = bytearray()
        while len(data) < size:
            chunk = os.pread(5, size - len(data), len(data))
            if not chunk:
                break
            data += chunk
        os.close(4)
        os.close(5)
        req = json.loads(bytes(data))
        del data
        address_space = base_vm + (int(req.get("memory_mb", 1024)) << 20)
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        code = req["code"]
        del req
    except BaseException:  # noqa: BLE001 - a child that cannot be set up must still exit, not return
        with contextlib.suppress(BaseException):
            os.write(2, traceback.format_exc().encode())
        os._exit(125)
    _run_snippet(code)


def _print_snippet_traceback() -> None:
    # Starts at the snippet's frame, as `python -c` would print it: the runner is not its business.
    with contextlib.suppress(BaseException):
        etype, exc, tb = sys.exc_info()
        traceback.print_exception(etype, exc, tb.tb_next if tb is not None else None)


def _run_snippet(code: str) -> None:
    kind = "exit"
    exit_code = 0
    import builtins

    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
    except SystemExit as exc:
        exit_code, message = _exit_code_of(exc)
        if message:
            with contextlib.suppress(BaseException):
                sys.stderr.write(message)
    except MemoryError:
        kind = "memory"
        exit_code = 1
        _print_snippet_traceback()
    except BaseException:  # noqa: BLE001 - the snippet's exception is its result, printed as Python would
        exit_code = 1
        _print_snippet_traceback()
    # Like the interpreter at exit, wait for non-daemon threads (a thread that never ends becomes a
    # timeout, as it would with `python -c`). Only a snippet that imported threading can have any:
    # the zygote does not import it (its at-fork hook alone doubled the cost of a fork).
    threading = sys.modules.get("threading")
    if threading is not None:
        with contextlib.suppress(BaseException):
            threading._shutdown()  # type: ignore[attr-defined]
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    # Written after the flush: once the zygote reads this, all output is already in the pipes, so
    # it can answer without waiting for the kernel to tear the process down.
    with contextlib.suppress(BaseException):
        os.write(3, f"{kind} {exit_code}\n".encode())
    os._exit(exit_code & 0xFF)


@dataclass
class Execution:
    uid: int | None
    workdir: str
    pid: int
    pidfd: int
    fds: dict[int, str]  # read fd -> "out" | "err" | "st"
    hand_over: list[int]  # the zygote's ends for the request: stdin memfd, request memfd, go pipe
    req_id: int | None = None  # None while it is a spare waiting for its request
    req: dict[str, Any] | None = None
    started: float = 0.0
    deadline: float = 0.0
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    st: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    forced: str | None = None  # status we imposed by killing it (timeout, output_limit)
    answered: bool = False
    wait_status: int | None = None


class Zygote:
    def __init__(self, cfg: Config, info: dict[str, Any], in_fd: int, out_fd: int) -> None:
        self.cfg = cfg
        self.info = info
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.root = bool(os.geteuid() == 0)
        self.free_uids: deque[int] = deque(cfg.uids)
        self.queue: deque[tuple[int, dict[str, Any]]] = deque()
        self.running: dict[int, Execution] = {}  # pid -> execution (until reaped and swept)
        self.by_fd: dict[int, Execution] = {}
        self.deadlines: list[tuple[float, int, int]] = []  # (deadline, pid, req_id)
        self.sel = selectors.DefaultSelector()
        self.inbuf = bytearray()
        self.seq = 0
        self.closing = False
        self.spares: deque[Execution] = deque()  # forked, set up, waiting for a request (oldest first)
        self.spare_target = max(0, cfg.spares)
        self.spare_failures = 0

    # --- protocol ---------------------------------------------------------------------------

    def send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode()
        buf = memoryview(FRAME.pack(len(data)) + data)
        while buf:
            n = os.write(self.out_fd, buf)
            buf = buf[n:]

    def on_request_bytes(self) -> None:
        chunk = os.read(self.in_fd, 1 << 20)
        if not chunk:
            self.closing = True
            self.sel.unregister(self.in_fd)
            return
        self.inbuf += chunk
        while len(self.inbuf) >= 4:
            (n,) = FRAME.unpack_from(self.inbuf)
            if len(self.inbuf) < 4 + n:
                break
            msg = json.loads(bytes(self.inbuf[4:4 + n]))
            del self.inbuf[:4 + n]
            self.queue.append((msg["id"], msg))
        self.start_queued()

    # --- executions -------------------------------------------------------------------------

    def slots_busy(self) -> int:
        return sum(1 for ex in self.running.values() if ex.req_id is not None and not ex.answered)

    def start_queued(self) -> None:
        while self.queue and (self.spares or self.free_uids) and self.slots_busy() < self.cfg.slots:
            req_id, req = self.queue.popleft()
            try:
                ex = self.spares.popleft() if self.spares else self.fork_child()
                self.assign(ex, req_id, req)
            except Exception as exc:  # noqa: BLE001 - a failed start is answered, never lost
                self.send({"id": req_id, "result": {"status": "killed", "stderr": f"sandbox could not start: {exc}"}})

    def refill(self) -> None:
        """Once no more than a third of `spare_target` wait, fork spares back to back up to it.

        In batches, because every fork write-protects all of the zygote's memory and the zygote's
        own Python then copies each page it touches again: the pages of the main loop (answering,
        reaping) are copied once per batch, not once per fork (~230 → ~160 faults per execution).
        """
        if len(self.spares) > self.spare_target // 3:
            return
        while not self.closing and len(self.spares) < self.spare_target and self.free_uids:
            if any(ex.answered and ex.wait_status is None for ex in self.running.values()):
                # Reaping (and removing the working directory of) what has answered comes first; the
                # pidfd event wakes the loop again, and the spares are forked after it.
                return
            try:
                self.spares.append(self.fork_child())
            except Exception as exc:  # noqa: BLE001 - no spare now; requests fork on demand instead
                self.spare_target = 0
                self.info["problems"].append(f"cannot fork spare children ahead ({exc}); forking per request")
                return

    def fork_child(self) -> Execution:
        """Fork a child that sets itself up (session, uid, rlimits, working dir) and waits for its request."""
        uid = self.free_uids.popleft()
        self.seq += 1
        workdir = os.path.join(WORK_ROOT, f"{uid}-{self.seq}")
        opened: list[int] = []
        try:
            os.mkdir(workdir, 0o700)
            if self.root:
                os.chown(workdir, uid, uid)
            opened.append(os.memfd_create("stdin", 0))
            opened.append(os.memfd_create("request", 0))
            opened.extend(os.pipe())  # go: read end for the child, write end for us
            for _ in range(3):
                opened.extend(os.pipe())
        except BaseException:
            for fd in opened:
                os.close(fd)
            self.free_uids.append(uid)
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        stdin_fd, req_fd, go_r, go_w, out_r, out_w, err_r, err_w, st_r, st_w = opened
        pid = os.fork()
        if pid == 0:
            child_main(uid if self.root else None, workdir, (stdin_fd, out_w, err_w, st_w, go_r, req_fd), self.cfg)
        for fd in (out_w, err_w, st_w, go_r):
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        ex = Execution(uid, workdir, pid, pidfd, {out_r: "out", err_r: "err", st_r: "st"}, [stdin_fd, req_fd, go_w])
        self.running[pid] = ex
        for fd in (out_r, err_r, st_r):
            os.set_blocking(fd, False)
            self.by_fd[fd] = ex
            self.sel.register(fd, selectors.EVENT_READ, "pipe")
        self.by_fd[pidfd] = ex
        self.sel.register(pidfd, selectors.EVENT_READ, "pidfd")
        return ex

    @staticmethod
    def close_hand_over(ex: Execution) -> None:
        for fd in ex.hand_over:
            with contextlib.suppress(OSError):
                os.close(fd)
        ex.hand_over = []

    def assign(self, ex: Execution, req_id: int, req: dict[str, Any]) -> None:
        """Hand a ready child its request; from here on its clock runs."""
        ex.req_id = req_id
        ex.req = req
        ex.started = time.monotonic()
        ex.deadline = ex.started + float(req.get("timeout_s", 10))
        try:
            for rel, content in (req.get("files") or {}).items():
                path = os.path.join(ex.workdir, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(bytes.fromhex(content))
            if self.root and req.get("files"):
                for dirpath, dirnames, filenames in os.walk(ex.workdir):
                    for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                        os.chown(name, ex.uid, ex.uid)
            stdin_fd, req_fd, go_w = ex.hand_over
            _pwrite_all(stdin_fd, req.get("stdin", "").encode())
            _pwrite_all(req_fd, json.dumps({"code": req["code"], "memory_mb": req.get("memory_mb", 1024)}).encode())
        except BaseException:
            # This child will never run anything: it goes, and the request is answered by the caller.
            ex.req_id = None
            self.close_hand_over(ex)
            self.kill(ex, "killed")
            raise
        try:
            os.write(go_w, b"\0")
        except OSError:
            pass  # it died while waiting: its exit (and stderr) become the Result, through on_exit
        self.close_hand_over(ex)
        heapq.heappush(self.deadlines, (ex.deadline, ex.pid, req_id))

    def read_pipe(self, fd: int, ex: Execution, max_reads: int = 64) -> None:
        """Read what is there now (bounded, so a writer that outlives a kill cannot pin us here).

        Enforces the output cap: past it, bytes are read and dropped, never held.
        """
        kind = ex.fds[fd]
        for _ in range(max_reads):
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                self.drop_fd(fd, ex)
                return
            if kind == "st":
                ex.st += chunk[:256]
                continue
            if ex.answered:
                continue
            buf = ex.out if kind == "out" else ex.err
            room = self.cfg.output_limit - len(buf)
            if len(chunk) > room:
                buf += chunk[:max(room, 0)]
                ex.truncated = True
                if ex.forced is None:
                    self.kill(ex, "output_limit")
                continue
            buf += chunk

    def drop_fd(self, fd: int, ex: Execution) -> None:
        self.sel.unregister(fd)
        os.close(fd)
        del ex.fds[fd]
        del self.by_fd[fd]

    def drain(self, ex: Execution) -> None:
        for fd in list(ex.fds):
            self.read_pipe(fd, ex)

    def kill(self, ex: Execution, status: str) -> None:
        """Stop it now; the Result follows from on_exit, once the whole tree is gone."""
        if ex.answered or ex.forced is not None:
            return
        ex.forced = status
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(ex.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(ex.pid, signal.SIGKILL)

    def answer(self, ex: Execution) -> None:
        """Send the Result as soon as it is known; cleanup of the processes continues afterwards."""
        if ex.answered or ex.req_id is None:
            return
        self.drain(ex)
        ex.answered = True
        duration_ms = (time.monotonic() - ex.started) * 1000
        exit_code: int | None = None
        status: str
        st = ex.st.decode(errors="replace").split()
        if ex.forced is not None:
            status = ex.forced
            exit_code = -signal.SIGKILL
        elif len(st) == 2:
            kind, code = st[0], int(st[1])
            exit_code = code
            status = "memory_exceeded" if kind == "memory" else ("ok" if code == 0 else "error")
        elif ex.wait_status is not None:
            if os.WIFSIGNALED(ex.wait_status):
                exit_code = -os.WTERMSIG(ex.wait_status)
                status = "killed"
            else:
                exit_code = os.waitstatus_to_exitcode(ex.wait_status)
                status = "ok" if exit_code == 0 else "error"
        else:
            status = "killed"
        stderr = ex.err.decode("utf-8", errors="replace")
        if status == "error" and "MemoryError" in stderr.rstrip().rsplit("\n", 1)[-1]:
            # A MemoryError raised in a thread or re-raised by a library still means the cap was hit.
            status = "memory_exceeded"
        self.retire_workdir(ex)
        self.send({"id": ex.req_id, "result": {
            "status": status,
            "stdout": ex.out.decode("utf-8", errors="replace"),
            "stderr": stderr,
            "exit_code": exit_code,
            "duration_ms": duration_ms,
            "truncated": ex.truncated,
            "network_isolated": self.info["network_isolated"],
            "unprivileged": self.root,
        }})
        # The slot is free for the next request now, even though the uid is not until reaped.
        self.start_queued()

    @staticmethod
    def retire_workdir(ex: Execution) -> None:
        """Take the working directory off its path before the Result goes out (one rename, where
        deleting it would first wait for the process to exit); on_exit deletes it once reaped."""
        retired = os.path.join(ANSWERED_ROOT, os.path.basename(ex.workdir))
        try:
            os.rename(ex.workdir, retired)
        except OSError:
            return  # deleted from where it is, all the same
        ex.workdir = retired

    def on_status(self, ex: Execution) -> None:
        if (ex.req_id is not None and len(ex.st.decode(errors="replace").split()) == 2 and not ex.answered
                and ex.forced is None):
            self.spare_failures = 0
            self.answer(ex)
            # It is only os._exit() away from gone; make sure no thread of it lingers.
            with contextlib.suppress(ProcessLookupError):
                os.kill(ex.pid, signal.SIGKILL)

    def on_exit(self, ex: Execution) -> None:
        # WNOHANG: a readiness event is only a hint (fd numbers get reused within one batch), and a
        # blocking wait on a live snippet would stall every other execution.
        pid, wait_status = os.waitpid(ex.pid, os.WNOHANG)
        if pid == 0:
            return
        ex.wait_status = wait_status
        self.sel.unregister(ex.pidfd)
        del self.by_fd[ex.pidfd]
        os.close(ex.pidfd)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(ex.pid, signal.SIGKILL)
        # Leftovers die before the Result of a killed or crashed snippet goes out, so a caller that
        # sees "timeout" can rely on nothing of it running any more.
        self.sweep(ex)
        if ex.req_id is None:
            # A spare that died before it got a request (set-up failure, or shut down): no Result.
            with contextlib.suppress(ValueError):
                self.spares.remove(ex)
            self.close_hand_over(ex)
            if ex.forced is None and not self.closing:
                self.spare_failures += 1
                if self.spare_failures >= 3 and self.spare_target:
                    # Requests then fork their child on demand, and see why set-up fails.
                    self.spare_target = 0
                    self.info["problems"].append("spare children keep dying before their request; forking "
                                                 f"per request (last stderr: {ex.err[-500:].decode(errors='replace')})")
        elif not ex.answered:
            self.answer(ex)
        for fd in list(ex.fds):
            self.drop_fd(fd, ex)
        del self.running[ex.pid]
        shutil.rmtree(ex.workdir, ignore_errors=True)
        if ex.uid is not None:
            self.free_uids.append(ex.uid)
        self.start_queued()

    # --- killing whole trees ----------------------------------------------------------------

    def orphans(self) -> list[int]:
        """Our direct children that are not a running snippet's main process.

        The zygote is a child subreaper, so anything a snippet left behind (even after setsid or a
        double fork) is re-parented here, not to init, and shows up in this list.
        """
        pids: list[int] = []
        with contextlib.suppress(OSError):
            with open(f"/proc/self/task/{os.getpid()}/children") as f:
                pids = [int(p) for p in f.read().split()]
        return [p for p in pids if p not in self.running or self.running[p].wait_status is not None]

    @staticmethod
    def uid_of(pid: int) -> int | None:
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def sweep(self, ex: Execution) -> None:
        """Kill and reap every leftover process of this execution, however it got detached."""
        for _ in range(10000):
            pids = self.orphans()
            if ex.uid is not None and self.root:
                pids = [p for p in pids if self.uid_of(p) == ex.uid]
            pids = [p for p in pids if p != ex.pid]
            if not pids:
                return
            for p in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            for p in pids:
                # Killed leftovers' own children are re-parented to us before waitpid returns, so the
                # next round sees them.
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(p, 0)

    # --- main loop --------------------------------------------------------------------------

    def expire(self) -> float | None:
        now = time.monotonic()
        while self.deadlines:
            deadline, pid, req_id = self.deadlines[0]
            ex = self.running.get(pid)
            if ex is None or ex.req_id != req_id or ex.answered:
                heapq.heappop(self.deadlines)
                continue
            if deadline > now:
                return deadline - now
            heapq.heappop(self.deadlines)
            self.kill(ex, "timeout")
        return None

    def serve(self) -> None:
        self.sel.register(self.in_fd, selectors.EVENT_READ, "requests")
        self.send({"hello": True, "pid": os.getpid(), **self.info, "unprivileged": self.root})
        self.refill()
        while not (self.closing and not self.running):
            if self.closing:
                for ex in list(self.running.values()):
                    self.kill(ex, "killed")
            timeout = self.expire()
            for key, _ in self.sel.select(timeout):
                fd = key.fd
                if key.data == "requests":
                    self.on_request_bytes()
                    continue
                # Resolve by the current tables, not key.data: an earlier event of this batch may
                # have closed this fd and a new execution reused its number.
                ex = self.by_fd.get(fd)
                if ex is None:
                    continue
                if fd == ex.pidfd:
                    self.on_exit(ex)
                elif fd not in ex.fds:
                    continue
                elif ex.fds[fd] == "st":
                    self.read_pipe(fd, ex)
                    self.on_status(ex)
                else:
                    self.read_pipe(fd, ex)
            # Answers and new requests first; then the spares, all in one batch.
            self.refill()


def _warm_up(info: dict[str, Any]) -> None:
    # sympy imports its solvers and fills its caches on first use, numpy sets up BLAS on its first
    # product: done here once, every child starts with them warm instead of paying ~100 ms each.
    try:
        import numpy
        import sympy

        x = sympy.Symbol("x")
        sympy.solve(x**2 - 5 * x + 6, x)
        sympy.simplify(sympy.sin(x) ** 2 + sympy.cos(x) ** 2)
        # numpy.random is loaded on first use (with secrets and hashlib): ~15 ms per snippet otherwise.
        a = numpy.random.default_rng(0).random((8, 8)) + numpy.random.rand(8, 8)
        _ = a @ a
    except Exception as exc:  # noqa: BLE001 - a cold library is slower, not broken
        info["problems"].append(f"warm-up failed: {exc}")


def main() -> None:
    cfg = Config(**json.loads(sys.argv[1]))
    # The request/response pipes move off fds 0/1, which become harmless, so that a stray print in
    # this process can never corrupt the protocol.
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    info = isolate(cfg)
    try:
        _libc_call("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except OSError as exc:
        info["problems"].append(f"cannot become a child subreaper ({exc}); detached processes may escape")
    for name in PRELOAD + (HEAVY if cfg.heavy else ()):
        try:
            __import__(name)
        except ImportError as exc:
            info["problems"].append(f"cannot preload {name}: {exc}")
    if cfg.heavy:
        _warm_up(info)
    # Snippets see the interpreter's own import paths, not the repository this module came from nor
    # the zygote's working directory (they get their own, first, as with `python -c`).
    repository = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
    sys.path[:] = [p for p in (os.path.abspath(p) for p in sys.path if p) if p != repository]
    # Objects that exist now are never collected again; the children then do not touch (and so
    # copy) these pages when their own garbage collector runs.
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        Zygote(cfg, info, in_fd, out_fd).serve()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise


if __name__ == "__main__":
    main()
