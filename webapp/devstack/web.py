"""The web tier: TIRLAB_WEB_PROCESSES daphne processes accepting on one listening socket.

Daphne runs Django's synchronous code on one core at a time, so one process per core is what uses
the machine; daphne scales that way by handing the same socket to several processes (its `--fd`),
and the kernel spreads the connections among them. A browser's websocket may land on one process
and the trainer's report on another: the Redis channel layer carries the push between them.

`devstack web` runs this tier in its own process group: the daphne processes stay in that group, so
a signal to the group (devstack stopping it, or a SIGKILL) reaches every one of them, and if one
dies the rest are stopped and `devstack web` exits with an error, which stops `devstack run` too.
"""

import socket
import sys
from pathlib import Path

from webapp import settings as tirlab_settings
from webapp.devstack.budget import ConnectionBudget, check, web_processes
from webapp.devstack.processes import DevstackError, Interrupted
from webapp.devstack.supervisor import Supervisor

PY = sys.executable


def daphne_command(listener: socket.socket) -> list[str]:
    """daphne serving on a listening socket it inherits."""
    return [PY, "-m", "daphne", "--fd", str(listener.fileno()), "webapp.asgi:application"]


def serve_web(listener: socket.socket, env: dict[str, str]) -> int:
    """Runs the daphne processes on `listener` until a signal (exit 0) or one of them dies (exit 1)."""
    budget = ConnectionBudget.configured()
    # Plain lines: devstack run prefixes this process's output with "web", as docker compose does with its name.
    print(check(budget, tirlab_settings.DATABASE_URL), flush=True)
    sup = Supervisor(Path(tirlab_settings.BASE_DIR), Path(tirlab_settings.VAR_DIR))
    count = web_processes()
    names = [f"web-{i}" for i in range(1, count + 1)]
    try:
        sup.spawn_together(
            {name: daphne_command(listener) for name in names},
            {name: env for name in names},
            {name: listener for name in names},
            own_session=False,
        )
        listener.close()  # the daphne processes hold it now
        print(f"{count} daphne processes serving (TIRLAB_WEB_PROCESSES)", flush=True)
        sup.watch()
    except Interrupted:
        return 0
    except DevstackError as exc:
        print(f"error: {exc}", flush=True)
        return 1
    finally:
        sup.stop_all()
