"""What `make run` runs, end to end: `python -m webapp.devstack` with real PostgreSQL, Redis, daphne and
Celery processes, brought up, used over HTTP, and stopped by a signal -- or killed -- with nothing left
behind."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import psutil
import psycopg
import pytest
import redis
from psycopg import sql

from webapp.devstack.processes import popen_tied

pytestmark = pytest.mark.timeout(400)

REPO = Path(__file__).resolve().parents[2]
UP_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30


class Devstack:
    """`python -m webapp.devstack` (or `argv`: `make run`, `devstack services -- CMD`) in a subprocess, its
    output collected line by line. It listens on a port the system chooses (TIRLAB_PORT=0), known once it
    says it is up."""

    def __init__(self, var_dir: Path, extra_env: dict[str, str], argv: list[str] | None = None) -> None:
        self.var_dir = var_dir
        self.port: int | None = None
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TIRLAB_HOST")}
        env.update(
            DJANGO_SETTINGS_MODULE="webapp.settings",
            TIRLAB_VAR_DIR=str(var_dir),
            TIRLAB_PORT="0",
            TIRLAB_WORKER_CONCURRENCY="1",
            PYTHONUNBUFFERED="1",
        )
        env.update(extra_env)
        self.lines: list[str] = []
        self.proc = popen_tied(
            argv or [sys.executable, "-m", "webapp.devstack"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def url(self, path: str) -> str:
        assert self.port is not None, "not up yet"
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_healthy(self) -> None:
        """Until devstack says it is up (after its own /healthz check); then /healthz answers here too."""
        deadline = time.monotonic() + UP_TIMEOUT_S
        while not (up := re.search(r"^tirlab is up at http://127\.0\.0\.1:(\d+) ", self.output, re.MULTILINE)):
            assert self.proc.poll() is None, f"devstack exited with {self.proc.returncode}:\n{self.output}"
            if time.monotonic() > deadline:
                pytest.fail(f"devstack was not up within {UP_TIMEOUT_S} s:\n{self.output}")
            time.sleep(0.5)
        self.port = int(up[1])
        with httpx.Client(trust_env=False, timeout=30) as client:
            assert client.get(self.url("/healthz")).status_code == 200, self.output

    def wait_exit(self, why: str) -> int:
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"devstack did not exit within {STOP_TIMEOUT_S} s of {why}:\n{self.output}")
        self._reader.join(timeout=5)
        return code

    def stop(self, sig: signal.Signals) -> int:
        self.proc.send_signal(sig)
        return self.wait_exit(sig.name)

    def ctrl_c(self) -> int:
        """A terminal's Ctrl-C: SIGINT to the foreground process group (`make` and devstack in it)."""
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.wait_exit("Ctrl-C")

    def leftovers(self) -> list[psutil.Process]:
        """Live processes it started: they carry its var dir in their environment, command line or cwd
        (postgres rewrites its environment area, but its cwd is the data directory)."""
        marker = str(self.var_dir)
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.pid == self.proc.pid or proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                if (
                    proc.environ().get("TIRLAB_VAR_DIR") == marker
                    or marker in " ".join(proc.cmdline())
                    or proc.cwd().startswith(marker)
                ):
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def wait_no_leftovers(self, timeout: float = 10) -> list[psutil.Process]:
        deadline = time.monotonic() + timeout
        while (left := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def kill_everything(self) -> None:
        """After a failed test: nothing it started may outlive the test."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for proc in self.leftovers():
            try:
                proc.kill()
            except psutil.Error:
                continue


@pytest.fixture
def var_dir() -> Iterator[Path]:
    # Short, so the embedded servers' unix sockets fit in sun_path.
    path = Path(tempfile.mkdtemp(prefix="tirlab-e2e-"))
    yield path / "var"
    shutil.rmtree(path, ignore_errors=True)


def describe(procs: list[psutil.Process]) -> list[str]:
    described = []
    for proc in procs:
        try:
            described.append(f"{proc.pid} {' '.join(proc.cmdline())}")
        except psutil.Error:
            described.append(str(proc.pid))
    return described


def check_pages(stack: Devstack) -> None:
    with httpx.Client(trust_env=False, timeout=30) as client:
        for path in ("/healthz", "/accounts/login/", "/api/docs/", "/api/schema/"):
            response = client.get(stack.url(path))
            assert response.status_code == 200, f"{path} answered {response.status_code}"


def test_make_run_brings_embedded_services_up_and_a_kill_leaves_nothing_behind(var_dir: Path) -> None:
    # A home where Ray has been used before: any local ray.init() leaves ~/.ray/auth_token, which
    # turns token authentication on for every later `ray start` (make run once never came up then).
    home = var_dir.parent / "home"
    (home / ".ray").mkdir(parents=True, exist_ok=True)
    (home / ".ray" / "auth_token").write_text("a" * 64)
    stack = Devstack(var_dir, {"HOME": str(home)}, ["make", "--no-print-directory", "run"])
    try:
        stack.wait_healthy()
        check_pages(stack)
        assert re.search(r"Created admin account '\w+' with password: \S+", stack.output), stack.output
        assert f"tirlab is up at http://127.0.0.1:{stack.port} (admin: /admin/, API docs: /api/docs/)" in stack.output
        running = " ".join(" ".join(proc.cmdline()) for proc in stack.leftovers())
        # The local Ray head (its GCS server among its daemons) runs the trainers; beat is a celery process.
        for program in ("postgres", "redis-server", "daphne", "celery", "gcs_server", " beat"):
            assert program in running, f"no {program} among the processes started: {running}"
        # Ray Client's server wants a port Ray cannot choose itself; tirlab does not use it (ray_start_hook.py).
        assert "ray.util.client.server" not in running, running

        # `make run` SIGKILLed (an OOM killer, `kill -9`, a supervisor out of patience): make runs no
        # handler, but devstack dies with its parent -- it gets SIGTERM -- and stops everything it started.
        stack.proc.kill()
        stack.wait_exit("SIGKILL")
        assert stack.wait_no_leftovers(STOP_TIMEOUT_S) == [], describe(stack.leftovers())
        assert not (var_dir / "postgres" / "postmaster.pid").exists()
        assert not (var_dir / "redis" / "redis.sock").exists()
    finally:
        stack.kill_everything()


def log_in(stack: Devstack, username: str, password: str) -> str:
    """Logs in through the login form as a browser does; returns the page it lands on."""
    with httpx.Client(trust_env=False, timeout=30, follow_redirects=True) as client:
        page = client.get(stack.url("/accounts/login/"))
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        home = client.post(
            stack.url("/accounts/login/"),
            data={"username": username, "password": password, "csrfmiddlewaretoken": csrf},
            headers={"Referer": stack.url("/accounts/login/")},
        )
        assert home.status_code == 200 and home.url.path != "/accounts/login/", f"login as {username} failed"
        return home.text


def up_index(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith("tirlab is up at "))


def test_make_run_shows_the_login_last_keeps_it_and_stops_on_ctrl_c_without_sigkill(var_dir: Path) -> None:
    stack = Devstack(var_dir, {}, ["make", "--no-print-directory", "run"])
    try:
        stack.wait_healthy()
        time.sleep(2)  # anything late from the processes just started would come by now
        lines = list(stack.lines)
        up = up_index(lines)
        # The login a new user needs is next to "tirlab is up", under the last line of the worker's and
        # beat's banners: nothing of theirs scrolls it away.
        late = [line for line in lines[up:] if line.startswith(("worker", "beat", "ray", "redis", "postgres"))]
        assert late == [], "\n".join(lines[up - 3 :])
        shown = r" +log in as (\w+) with password (\S+) \(kept in (\S+) until you change it\)"
        login = re.fullmatch(shown, lines[up + 1] if up + 1 < len(lines) else "")
        assert login, "\n".join(lines[up - 5 :])
        username, password, kept_in = login.groups()
        assert any(re.search(r"celery@\S+ ready\.$", line) for line in lines[:up]), stack.output
        assert any("maxinterval ->" in line for line in lines[:up]), stack.output
        kept = var_dir / "admin-login"
        assert Path(REPO, kept_in).resolve() == kept.resolve(), kept_in
        assert kept.stat().st_mode & 0o777 == 0o600
        assert password in kept.read_text()
        assert username in log_in(stack, username, password)

        # Ctrl-C stops everything within seconds, Ray's daemons included, and nothing had to be
        # SIGKILLed: devstack says which process it had to kill ("<name> | still running; sending SIGKILL").
        running = " ".join(" ".join(proc.cmdline()) for proc in stack.leftovers())
        assert "gcs_server" in running and "raylet" in running, running
        interrupted = len(stack.lines)
        started = time.monotonic()
        stack.ctrl_c()
        assert stack.wait_no_leftovers(5) == [], describe(stack.leftovers())
        took = time.monotonic() - started
        stopping = "\n".join(stack.lines[interrupted:])
        assert "still running" not in stopping and "SIGKILL" not in stopping, stopping
        assert took < 20, f"{took:.1f} s to stop:\n{stopping}"  # 8 s on 2 idle cores; 17.5 s when Ray was killed
        assert "devstack | SIGINT: shutting down" in stopping, stopping

        # A later start says where the password is kept, and prints it no more.
        again = Devstack(var_dir, {})
        try:
            again.wait_healthy()
            time.sleep(1)
            lines = list(again.lines)
            up = up_index(lines)
            where = rf" +log in as {username}: its password is in \S+/admin-login"
            assert re.fullmatch(where, lines[up + 1] if up + 1 < len(lines) else ""), lines[up:]
            assert password not in again.output
            assert again.stop(signal.SIGTERM) == 0, again.output
            assert again.wait_no_leftovers() == [], describe(again.leftovers())
        finally:
            again.kill_everything()
    finally:
        stack.kill_everything()


def test_a_taken_port_fails_before_anything_starts(var_dir: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        stack = Devstack(var_dir, {"TIRLAB_PORT": str(port)})
        try:
            assert stack.wait_exit("a taken port") == 1, stack.output
        finally:
            stack.kill_everything()
    assert f"cannot listen on 127.0.0.1:{port}" in stack.output, stack.output
    assert "starting the embedded" not in stack.output, stack.output


def _with_path(url: str, path: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=path))


def _redis_db9(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "unix":  # urlunsplit would drop the empty netloc's "//"
        return f"unix://{parts.path}?{urlencode(dict(parse_qsl(parts.query)) | {'db': '9'})}"
    return urlunsplit(parts._replace(path="/9"))


@pytest.fixture
def external_services() -> Iterator[tuple[str, str]]:
    """A fresh database on the PostgreSQL the suite uses (the machine's, or `make test`'s embedded one),
    and Redis db 9 there; dropped afterwards."""
    server = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"
    redis_url = _redis_db9(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    try:
        admin = psycopg.connect(server, autocommit=True, connect_timeout=5)
        redis.Redis.from_url(redis_url, socket_timeout=5).ping()
    except (psycopg.Error, redis.RedisError) as exc:
        pytest.skip(f"no PostgreSQL/Redis to point devstack at: {exc}")
    name = f"tirlab_e2e_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield _with_path(server, f"/{name}"), redis_url
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_given_urls_start_no_embedded_server(var_dir: Path, external_services: tuple[str, str]) -> None:
    database_url, redis_url = external_services
    stack = Devstack(var_dir, {"DATABASE_URL": database_url, "REDIS_URL": redis_url})
    try:
        stack.wait_healthy()
        check_pages(stack)
        assert "starting the embedded postgres" not in stack.output, stack.output
        assert "starting the embedded redis" not in stack.output, stack.output
        assert not (var_dir / "postgres").exists() and not (var_dir / "redis").exists()
        running = " ".join(" ".join(proc.cmdline()) for proc in stack.leftovers())
        assert "postgres" not in running and "redis-server" not in running, running
        with psycopg.connect(database_url) as conn:  # the children got the URL: migrated and bootstrapped there
            assert conn.execute("SELECT count(*) FROM auth_user WHERE is_superuser").fetchone() == (1,)

        assert stack.stop(signal.SIGTERM) == 0, stack.output
        assert stack.wait_no_leftovers() == [], describe(stack.leftovers())
    finally:
        stack.kill_everything()


def test_a_child_dying_stops_the_rest(var_dir: Path, external_services: tuple[str, str]) -> None:
    database_url, redis_url = external_services
    stack = Devstack(var_dir, {"DATABASE_URL": database_url, "REDIS_URL": redis_url})
    try:
        stack.wait_healthy()
        workers = [
            p
            for p in stack.leftovers()
            if "celery" in (cmd := " ".join(p.cmdline())) and " worker" in cmd and p.pid == os.getpgid(p.pid)
        ]
        assert len(workers) == 1, describe(stack.leftovers())
        workers[0].kill()

        assert stack.wait_exit("the worker's death") == 1, stack.output
        assert "worker stopped unexpectedly (killed by SIGKILL)" in stack.output, stack.output
        assert stack.wait_no_leftovers() == [], describe(stack.leftovers())
    finally:
        stack.kill_everything()


def test_a_killed_devstack_takes_its_embedded_servers_with_it(var_dir: Path) -> None:
    # SIGKILL runs no handler: the children die with devstack (PR_SET_PDEATHSIG), and the PostgreSQL that
    # pg_ctl detached from it is stopped by its guard, which dies with devstack too.
    command = [sys.executable, "-c", "import time; print('command running', flush=True); time.sleep(3600)"]
    stack = Devstack(var_dir, {}, [sys.executable, "-m", "webapp.devstack", "services", "--", *command])
    try:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while "command running" not in stack.output:
            assert stack.proc.poll() is None and time.monotonic() < deadline, stack.output
            time.sleep(0.2)
        running = " ".join(" ".join(proc.cmdline()) for proc in stack.leftovers())
        assert "postgres" in running and "redis-server" in running, running

        stack.proc.kill()
        stack.proc.wait()
        assert stack.wait_no_leftovers(STOP_TIMEOUT_S) == [], describe(stack.leftovers())
    finally:
        stack.kill_everything()
