"""`python webapp/devstack/guard.py PID SIGNAL`: stops a server that is no child of devstack when devstack
goes, however it goes.

pg_ctl detaches the embedded PostgreSQL from the process that starts it, so nothing the kernel does for
devstack's children reaches it. Its guard is a child like the others: started with PR_SET_PDEATHSIG,
it gets SIGTERM when devstack dies (SIGKILL included) or stops, and then sends SIGNAL to PID and waits
until PID is gone (SIGKILL after a grace period). It is run as a file and imports nothing of tirlab's,
so that it takes its signals from its first milliseconds on (devstack waits until it does).
"""

import os
import signal
import sys
import time

GRACE_S = 10.0  # as devstack's own STOP_GRACE_S


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(pid: int, sig: signal.Signals) -> None:
    stopping: list[int] = []
    for ours in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(ours, lambda signum, frame: stopping.append(signum))
    while not stopping and _alive(pid):
        time.sleep(0.2)
    if not _alive(pid):
        return
    os.kill(pid, sig)
    deadline = time.monotonic() + GRACE_S
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main(int(sys.argv[1]), signal.Signals[sys.argv[2]])
