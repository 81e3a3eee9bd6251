"""The things devstack starts and must stop: child processes, and pgserver's daemonized PostgreSQL.

Every child dies with devstack, SIGKILL included: it is started with PR_SET_PDEATHSIG (Linux), so
the kernel sends it SIGTERM when devstack's process goes, and it stops as it would on Ctrl-C. The
PostgreSQL that pg_ctl detaches is no child: a guard process (guard.py) that dies with devstack
stops it.
"""

import concurrent.futures
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol

STOP_GRACE_S = 10.0  # SIGTERM first; whatever is left after this gets SIGKILL
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> None:
    """Have the kernel send this process `sig` when the process that started it dies, however it dies
    (Linux; elsewhere nothing). Kept across exec. For a child, use `popen_tied`, not this as a
    `preexec_fn`: the kernel ties the child to the *thread* that forked it, not to its process."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


# PR_SET_PDEATHSIG fires when the thread that forked the child ends. A child started from a short-lived
# thread (a fault drill restarting a server, a watcher) would be killed when that thread returns, so
# such children are forked by one thread that lives as long as the process.
_forker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="popen-tied")


def popen_tied(argv: list[str], *, death_signal: signal.Signals = signal.SIGTERM, **kwargs) -> subprocess.Popen:
    """subprocess.Popen(argv, **kwargs) for a child that gets `death_signal` when this process dies,
    however it dies (Linux), whichever thread asks."""

    def fork() -> subprocess.Popen:
        return subprocess.Popen(argv, preexec_fn=partial(die_with_parent, death_signal), **kwargs)

    if threading.current_thread() is threading.main_thread():
        return fork()
    return _forker.submit(fork).result()


class DevstackError(Exception):
    """Something failed to start or died; the message names it."""


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP asked us to stop."""


_say_lock = threading.Lock()
_said_at = time.monotonic()


def say(name: str, text: str) -> None:
    """One line of output, prefixed by the name of the process it is about."""
    global _said_at
    with _say_lock:
        sys.stdout.write(f"{name:<9}| {text}\n")
        sys.stdout.flush()
        _said_at = time.monotonic()


def announce(text: str) -> None:
    """Lines of devstack's own for the user, unprefixed and in one piece."""
    with _say_lock:
        sys.stdout.write(f"{text}\n")
        sys.stdout.flush()


def quiet_for() -> float:
    """Seconds since the last line `say` wrote (a child's, or devstack's own)."""
    return time.monotonic() - _said_at


def catches(pid: int, sig: signal.Signals) -> bool:
    """Whether process `pid` has a handler for `sig` installed yet (Linux: /proc; elsewhere assumed)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return sys.platform != "linux"
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (int(sig) - 1) & 1)


def group_members(pgid: int) -> list[str]:
    """'PID NAME' of each live process in process group `pgid` (Linux: /proc; elsewhere none)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(f"{stat.parent.name} {name}")
    return members


def exit_description(code: int) -> str:
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"


class Managed(Protocol):
    """Something devstack started and must stop."""

    name: str

    def exit_code(self) -> int | None: ...  # None while it runs

    def terminate(self) -> None: ...  # ask it to stop, without waiting

    def finish(self, expired: Callable[[], bool]) -> None: ...  # wait until it is gone; kill it once expired()


class Child:
    """A process in its own session (one signal reaches its whole tree), its output prefixed by its name.

    With `own_session=False` it stays in our process group and writes to our output as it is: for the
    web processes of `devstack web`, which a signal to that group must reach along with it (SIGKILL too).
    With `leader_first`, stopping it signals the process started alone, which stops the rest of its tree
    in its own order (`ray start --block`); whatever of its group outlives it is signalled after.
    `ready` is set once a line of its output matches `ready_line`.
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        pass_fds: tuple[int, ...] = (),
        *,
        own_session: bool = True,
        leader_first: bool = False,
        ready_line: str | None = None,
    ) -> None:
        self.name = name
        self.own_session = own_session
        self.leader_first = leader_first and own_session
        self.ready = threading.Event()
        self._ready_line = re.compile(ready_line) if ready_line else None
        self.proc = popen_tied(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if own_session else None,
            stderr=subprocess.STDOUT if own_session else None,
            start_new_session=own_session,
            pass_fds=pass_fds,
        )
        self._reader: threading.Thread | None = None
        if own_session:
            self._reader = threading.Thread(target=self._pump, name=f"{name}-output", daemon=True)
            self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            say(self.name, line)
            if self._ready_line is not None and self._ready_line.search(line):
                self.ready.set()

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def _group_alive(self) -> bool:
        self.proc.poll()  # reap the leader, so that only live members keep the group
        if not self.own_session:
            return self.proc.returncode is None
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            if self.own_session:
                os.killpg(self.proc.pid, sig)
            elif self.proc.returncode is None:
                self.proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    def terminate(self) -> None:
        if self.leader_first and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        elif self._group_alive():
            self._signal_group(signal.SIGTERM)

    def finish(self, expired: Callable[[], bool]) -> None:
        if self.leader_first:
            while self.proc.poll() is None and not expired():
                time.sleep(0.05)
            if self._group_alive() and not expired():
                self._signal_group(signal.SIGTERM)  # what it left behind
        while self._group_alive() and not expired():
            time.sleep(0.05)
        if self._group_alive():
            left = ", ".join(group_members(self.proc.pid)) if self.own_session else str(self.proc.pid)
            say(self.name, f"still running; sending SIGKILL to {left or 'its process group'}")
            self._signal_group(signal.SIGKILL)
        self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=2)


class EmbeddedPostgres:
    """pgserver's PostgreSQL on a data directory. pg_ctl daemonizes it: it is watched through postmaster.pid."""

    name = "postgres"

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self.started = False
        self.stale_pid = self._pid()  # a postmaster.pid left by a crash names no process of ours

    def _pid(self) -> int | None:
        try:
            return int((self.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def start(self) -> str:
        """Starts it (initializing the data directory the first time) and returns its URL; `guard()`
        then gives the argv of the process that stops it if devstack dies."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
            import pgserver
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: we stop it ourselves, whatever pgserver's per-process handle count says.
        uri = pgserver.get_server(self.pgdata, cleanup_mode=None).get_uri()
        self.started = True
        say(self.name, f"ready ({uri}; log: {self.pgdata / 'log'})")
        return uri

    def guard(self) -> list[str]:
        """The guard of the running server (guard.py): a fast shutdown once devstack is gone."""
        pid = self._running_pid()
        if pid is None:
            raise DevstackError("the embedded postgres is not running")
        return [sys.executable, str(Path(__file__).with_name("guard.py")), str(pid), signal.SIGINT.name]

    def _running_pid(self) -> int | None:
        pid = self._pid()
        if pid is None or (pid == self.stale_pid and not self.started):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return pid

    def exit_code(self) -> int | None:
        return None if self._running_pid() else 1

    def terminate(self) -> None:
        if pid := self._running_pid():
            os.kill(pid, signal.SIGINT)  # "fast" shutdown: what `pg_ctl stop -m fast` sends

    def finish(self, expired: Callable[[], bool]) -> None:
        pid = self._running_pid()
        while pid and self._running_pid() and not expired():
            time.sleep(0.05)
        for sig in (signal.SIGQUIT, signal.SIGKILL):  # "immediate" shutdown, then no more asking
            if not (pid and self._running_pid()):
                return
            say(self.name, f"still running; sending {sig.name}")
            os.kill(pid, sig)
            time.sleep(3)


def redis_command(sock: Path, command: str) -> str:
    """One inline command over a unix socket; '' when nothing answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(2)
            conn.connect(str(sock))
            conn.sendall(command.encode() + b"\r\n")
            return conn.recv(64).decode(errors="replace").strip()
    except OSError:
        return ""
