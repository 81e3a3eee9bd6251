"""How many processes of each kind tirlab runs, how many database connections each may hold, and
whether the sum fits the PostgreSQL server.

Each process that uses the database borrows from a pool of its own (webapp/settings.py): a web
process's pool holds at most TIRLAB_DB_POOL_SIZE connections, while a Celery process (each worker
process runs one task at a time; beat only schedules) is given a pool of one. So tirlab as a whole
holds at most

    web processes × TIRLAB_DB_POOL_SIZE + worker processes + 1 (beat)

connections, plus one for a setup step (migrate, bootstrap), which runs before the others start.
"""

import os
from dataclasses import dataclass

import psycopg

from webapp import settings as tirlab_settings
from webapp.env import env_int

# What devstack gives each Celery process as its TIRLAB_DB_POOL_SIZE.
CELERY_POOL_SIZE = 1


def web_processes() -> int:
    """TIRLAB_WEB_PROCESSES, by default one per core up to 4: a web process runs Python on one core at a
    time, so fewer leaves cores idle under load and more only adds connections and memory."""
    return env_int("TIRLAB_WEB_PROCESSES", max(1, min(4, os.cpu_count() or 1)), minimum=1)


def worker_processes() -> int:
    """TIRLAB_WORKER_CONCURRENCY, by default Celery's own: one per core."""
    return env_int("TIRLAB_WORKER_CONCURRENCY", os.cpu_count() or 1, minimum=1)


@dataclass(frozen=True)
class ConnectionBudget:
    web_processes: int
    pool_size: int
    worker_processes: int

    @classmethod
    def configured(cls) -> "ConnectionBudget":
        return cls(web_processes(), tirlab_settings.DB_POOL_SIZE, worker_processes())

    @property
    def total(self) -> int:
        return self.web_processes * self.pool_size + self.worker_processes * CELERY_POOL_SIZE + CELERY_POOL_SIZE

    def describe(self) -> str:
        return (
            f"database connections: at most {self.total} ({self.web_processes} web processes x pool "
            f"{self.pool_size}, {self.worker_processes} Celery worker processes x {CELERY_POOL_SIZE}, beat "
            f"x {CELERY_POOL_SIZE})"
        )


def server_room(database_url: str) -> tuple[int, int]:
    """What the server allows ordinary clients (max_connections less the superuser reserve) and how
    many connections other clients hold now."""
    with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as conn:
        limit = int(conn.execute("SHOW max_connections").fetchone()[0])
        reserved = int(conn.execute("SHOW superuser_reserved_connections").fetchone()[0])
        others = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    return limit - reserved, others


def check(budget: ConnectionBudget, database_url: str) -> str:
    """One line for the log: the budget, the server's room, and a warning when it does not fit."""
    try:
        allowed, others = server_room(database_url)
    except psycopg.Error as exc:
        return f"{budget.describe()}; the server's limit could not be read ({exc})"
    line = f"{budget.describe()}; the server allows {allowed}, {others} in use by others now"
    if budget.total > allowed - others:
        line += (
            " -- WARNING: that does not fit; lower TIRLAB_WEB_PROCESSES or TIRLAB_DB_POOL_SIZE, or raise the "
            "server's max_connections"
        )
    return line
