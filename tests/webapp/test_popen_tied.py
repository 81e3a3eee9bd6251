"""popen_tied: a child that dies with the process that started it, and only then, whichever thread
started it. PR_SET_PDEATHSIG ties a child to the thread that forked it; a fault drill that restarted
the web server from a thread once had that server killed the moment the thread returned."""

import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from webapp.devstack.processes import popen_tied

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_child_started_from_a_thread_outlives_the_thread() -> None:
    started: list[subprocess.Popen] = []
    thread = threading.Thread(target=lambda: started.append(popen_tied(["sleep", "30"])))
    thread.start()
    thread.join()
    child = started[0]
    try:
        time.sleep(0.5)
        assert child.poll() is None, f"the child died with the thread that started it ({child.returncode})"
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("from_thread", [False, True], ids=["main thread", "other thread"])
def test_a_child_dies_when_its_parent_is_killed(from_thread: bool) -> None:
    parent_code = textwrap.dedent(f"""
        import threading, time
        from webapp.devstack.processes import popen_tied
        started = []
        start = lambda: started.append(popen_tied(["sleep", "60"]))
        if {from_thread}:
            t = threading.Thread(target=start); t.start(); t.join()
        else:
            start()
        print(started[0].pid, flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    child_pid = None
    try:
        child_pid = int(parent.stdout.readline())
        assert not _gone(child_pid, 0.5), "the child died while its parent lived"
        parent.kill()
        parent.wait()
        assert _gone(child_pid, 5), "the child outlived its SIGKILLed parent"
    finally:
        parent.kill()
        parent.wait()
        if child_pid is not None and not _gone(child_pid, 0):
            psutil.Process(child_pid).kill()
