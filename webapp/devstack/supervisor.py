"""Start, watch and stop what devstack runs, on signals or when something dies."""

import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import FrameType
from typing import IO, NoReturn, TypeVar

from webapp.devstack.processes import (
    STOP_GRACE_S,
    Child,
    DevstackError,
    Interrupted,
    Managed,
    exit_description,
    popen_tied,
    quiet_for,
    say,
)

START_TIMEOUT_S = 120.0  # for a service or /healthz to answer

T = TypeVar("T")


class Supervisor:
    """Owns everything started, in layers: started together, stopped together, the newest layer first.

    A signal only sets a flag that the waiting loops check, so nothing is left half-registered."""

    def __init__(self, cwd: Path, var_dir: Path) -> None:
        self.cwd = cwd
        self.var_dir = var_dir
        self.layers: list[list[Managed]] = []
        self.requested: str | None = None
        self.stopping = False
        self.force = False
        self.command: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:
            self.force = True  # asked again while stopping: stop waiting
            return
        self.requested = signal.Signals(signum).name
        # Passed on, SIGINT too: a `kill -INT` reaches only us, and a command that is ours to stop must
        # stop (pytest takes a terminal's Ctrl-C, which reaches it twice, as one: tests/interruption.py).
        if self.command is not None:
            self.command.send_signal(signum)

    def check(self) -> None:
        if self.requested and self.command is None:
            raise Interrupted(self.requested)

    def add(self, *managed: Managed) -> None:
        self.layers.append(list(managed))

    def spawn(self, name: str, argv: list[str], env: dict[str, str], *, leader_first: bool = False) -> Child:
        child = Child(name, argv, env, self.cwd, leader_first=leader_first)
        self.add(child)
        return child

    def spawn_together(
        self,
        commands: dict[str, list[str]],
        envs: dict[str, dict[str, str]],
        sockets: dict[str, socket.socket],
        *,
        own_session: bool = True,
        ready_lines: dict[str, str] | None = None,
    ) -> list[Child]:
        """The commands as one layer, each with its environment; each named in `sockets` inherits that socket,
        and each named in `ready_lines` is `ready` once it has written a line that matches."""
        layer: list[Managed] = []
        self.layers.append(layer)  # before any starts: a failed start stops the ones started
        children = []
        for name, argv in commands.items():
            inherited = (sockets[name].fileno(),) if name in sockets else ()
            ready_line = (ready_lines or {}).get(name)
            child = Child(name, argv, envs[name], self.cwd, inherited, own_session=own_session, ready_line=ready_line)
            layer.append(child)
            children.append(child)
        return children

    def wait_until(self, ready: Callable[[], T], watched: Sequence[Managed], what: str) -> T:
        """What `ready()` returns once it is true (polled while the watched processes live)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (value := ready()):
            self.check()
            for managed in watched:
                if (code := managed.exit_code()) is not None:
                    raise DevstackError(f"{managed.name} stopped ({exit_description(code)}) before {what} was ready")
            if time.monotonic() > deadline:
                raise DevstackError(f"{what} was not ready within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)
        return value

    def wait_quiet(self, quiet_s: float, at_most_s: float) -> None:
        """Until no output has come for `quiet_s` from now on (the last lines of what just started), `at_most_s`
        at most."""
        start = time.monotonic()
        while min(quiet_for(), time.monotonic() - start) < quiet_s and time.monotonic() < start + at_most_s:
            self.check()
            time.sleep(0.05)

    def lock_var_dir(self) -> bool:
        """One devstack owns the embedded servers of a var dir; False if another one holds it."""
        self.var_dir.mkdir(parents=True, exist_ok=True)
        lock = open(self.var_dir / "devstack.lock", "a+")  # held open, and so locked, until we exit
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            return False
        self._lock = lock
        self.publish(None)
        return True

    def publish(self, urls: dict[str, str] | None) -> None:
        """Tells other devstacks on this var dir (`services` while `run` is up) where the servers are."""
        assert self._lock is not None
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(json.dumps({"pid": os.getpid(), "env": urls}))
        self._lock.flush()

    def lock_holder(self) -> tuple[str, dict[str, str]]:
        """The pid and published URLs of the devstack that holds the var dir."""
        try:
            holder = json.loads((self.var_dir / "devstack.lock").read_text())
        except (OSError, ValueError):
            holder = {}
        return str(holder.get("pid", "?")), holder.get("env") or {}

    def run_step(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        """A one-off command (migrate, ...), output prefixed; DevstackError if it fails."""
        child = self.spawn(name, argv, env)
        while child.exit_code() is None:
            self.check()
            time.sleep(0.1)
        child.finish(lambda: True)  # drains its output
        self.layers.remove([child])
        if child.proc.returncode != 0:
            raise DevstackError(f"{name} failed ({exit_description(child.proc.returncode)})")

    def run_command(self, argv: list[str], env: dict[str, str]) -> int:
        """A command in the foreground (our process group, our terminal); returns its exit code."""
        self.check()
        try:
            self.command = popen_tied(argv, env=env)
        except OSError as exc:
            say("devstack", f"cannot run {argv[0]}: {exc}")
            return 127
        return self.command.wait()

    def watch(self) -> NoReturn:
        while True:
            self.check()
            for layer in self.layers:
                for managed in layer:
                    if (code := managed.exit_code()) is not None:
                        raise DevstackError(
                            f"{managed.name} stopped unexpectedly ({exit_description(code)}); stopping the rest"
                        )
            time.sleep(0.2)

    def _expired(self, deadline: float) -> bool:
        return self.force or time.monotonic() > deadline

    def stop_all(self) -> None:
        self.stopping = True
        while self.layers:
            layer = self.layers.pop()
            say("devstack", f"stopping {', '.join(managed.name for managed in layer)}")
            expired = partial(self._expired, time.monotonic() + STOP_GRACE_S)
            for managed in layer:
                managed.terminate()
            for managed in layer:
                managed.finish(expired)
        if self._lock is not None:
            self._lock.close()
