"""A test run stopped from outside leaves nothing behind: a pytest (with xdist workers, as `make test` runs
it) stopped by SIGTERM or SIGINT tears down the stack its test started — every process and its database —
and a SIGKILLed one takes its processes with it; `make run` stopped by SIGTERM, or its devstack killed,
leaves no process and no embedded server running. See tests/interruption.py and webapp/devstack/processes.py.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from psycopg import sql

from tests.e2e.lifecycle_stack import REPO
from webapp.devstack.processes import popen_tied

pytestmark = pytest.mark.timeout(600)

PY = sys.executable
UP_TIMEOUT_S = 240
DOWN_TIMEOUT_S = 90
SERVER = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of `procs` still running (a pid reused since is another process: psutil checks)."""
    left = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except psutil.NoSuchProcess:
            continue
    return left


def marked(marker: str) -> list[psutil.Process]:
    """Running processes that carry `marker` (a stack's folder) in their command line, environment or cwd."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == os.getpid() or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            environ = " ".join(proc.environ().values())
            if marker in " ".join(proc.cmdline()) or marker in environ or proc.cwd().startswith(marker):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def describe(procs: list[psutil.Process]) -> list[str]:
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            out.append(str(proc.pid))
    return out


def database_exists(name: str) -> bool:
    with psycopg.connect(SERVER, autocommit=True) as admin:
        return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def wait_until(condition, timeout: float, what: str):  # noqa: ANN001, ANN201 - a predicate and its value
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.5)
    return value


class ChildPytest:
    """`pytest -n 1 tests/e2e/interrupted_stack.py::TEST` in a session of its own, as `make test` runs the suite."""

    def __init__(self, tmp_path: Path, test: str) -> None:
        self.ready = tmp_path / "ready.json"
        self.torn_down = tmp_path / "torn-down"
        self.log = tmp_path / "pytest.log"
        env = {
            **os.environ,
            "TIRLAB_INTERRUPT_READY": str(self.ready),
            "TIRLAB_INTERRUPT_TORN_DOWN": str(self.torn_down),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("PYTEST_XDIST_WORKER", None)
        argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1", "-o", "addopts="]
        argv += [f"tests/e2e/interrupted_stack.py::{test}"]
        with self.log.open("wb") as out:
            self.proc = popen_tied(
                argv,
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self) -> dict:
        def ready() -> dict | None:
            assert self.proc.poll() is None, f"the child pytest ended ({self.proc.returncode}):\n{self.output()}"
            return json.loads(self.ready.read_text()) if self.ready.exists() else None

        return wait_until(ready, UP_TIMEOUT_S, "the child pytest's test ready")

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def wait_exit(self) -> int:
        try:
            return self.proc.wait(timeout=DOWN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the child pytest did not end within {DOWN_TIMEOUT_S} s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill_everything(self, marker: str | None) -> None:
        started = alive(self.descendants()) if self.proc.poll() is None else []
        for proc in [*started, *(marked(marker) if marker else [])]:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def dropped_afterwards() -> Iterator[list[str]]:
    """Databases to drop if a test fails with them still there."""
    names: list[str] = []
    yield names
    with psycopg.connect(SERVER, autocommit=True) as admin:
        for name in names:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_test_run_stopped_by_sigterm_tears_its_stack_down(tmp_path: Path, dropped_afterwards: list[str]) -> None:
    child = ChildPytest(tmp_path, "test_a_stack_waits_to_be_stopped")
    ready: dict = {}
    try:
        ready = child.wait_ready()
        dropped_afterwards.append(ready["database"])
        started = child.descendants()
        # The stack's own processes by their pids: the worker and beat were started just before it said it
        # was ready, and a process's command line reads empty while it is still exec-ing (it once did here,
        # on a loaded machine); what they start in turn by name.
        pids = {proc.pid for proc in started}
        for name in ("web", "worker", "beat", "ray", "redis"):
            assert ready["pids"][name] in pids, f"no {name} among the stack's processes: {describe(started)}"
        names = " ".join(describe(started))
        for program in ("gcs_server", "raylet", "daphne"):
            assert program in names, f"no {program} among the stack's processes: {names}"
        assert database_exists(ready["database"])

        os.kill(child.proc.pid, signal.SIGTERM)
        child.wait_exit()
        left = alive(started) + marked(ready["root"])
        assert left == [], describe(left)
        assert not database_exists(ready["database"]), child.output()
    finally:
        child.kill_everything(ready.get("root"))


def test_a_killed_test_run_takes_its_processes_with_it(tmp_path: Path) -> None:
    # What pytest's SIGKILL leaves no teardown to do: its worker, the Ray head (with its GCS, raylet and
    # dashboard) and the redis-server the test started end with it. (A database it made stays: only a
    # teardown drops one, and a SIGKILL runs none.)
    child = ChildPytest(tmp_path, "test_a_ray_head_waits_to_be_stopped")
    ready: dict = {}
    try:
        ready = child.wait_ready()
        started = child.descendants()
        names = " ".join(describe(started))
        assert "gcs_server" in names and "redis-server" in names, names

        child.proc.kill()
        child.proc.wait()
        wait_until(lambda: not alive(started) and not marked(ready["root"]), DOWN_TIMEOUT_S, "its processes gone")
    finally:
        child.kill_everything(ready.get("root"))


def test_sigint_to_a_test_run_tears_its_fixtures_down(tmp_path: Path) -> None:
    child = ChildPytest(tmp_path, "test_a_fixture_waits_to_be_stopped")
    try:
        ready = child.wait_ready()
        os.kill(child.proc.pid, signal.SIGINT)  # `kill -INT`: the controller alone, which passes it on
        child.wait_exit()
        assert child.torn_down.exists(), f"the fixture's teardown did not run:\n{child.output()}"
        assert not psutil.pid_exists(ready["pid"]), "the worker outlived its run"
    finally:
        child.kill_everything(None)
