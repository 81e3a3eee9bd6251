"""A test run stopped from outside tears down what it started.

SIGTERM (a CI timeout, `kill`), SIGHUP (a closed terminal) and SIGINT (Ctrl-C, `kill -INT`) end a pytest
process as Ctrl-C does: a KeyboardInterrupt, after which pytest still runs every fixture's teardown
(stacks of processes stopped, databases dropped). Python's default for SIGTERM and SIGHUP is to die at
once, teardown never run. Under xdist the controller runs no test: it passes the signal on to its
workers, which tear down and stop, and it ends when they have. A process takes one such signal: a
second one (a terminal's Ctrl-C reaches the controller and the workers, and the controller passes it on
too) does not interrupt the teardown under way.

Every pytest process also dies with its parent (PR_SET_PDEATHSIG, Linux): a SIGKILLed controller's
workers get SIGTERM and tear down; a SIGKILLed `make test` or devstack reaches pytest the same way. The
processes a test starts are started with `popen_tied` (webapp/devstack/processes.py) too, so they end
with the worker that started them even if it cannot run its teardown.
"""

import ctypes
import signal
import sys
from types import FrameType

import pytest

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1
_interrupted: list[int] = []


def _die_with_parent() -> None:
    """SIGTERM to this process when its parent dies (Linux). webapp.devstack.processes has the same for
    the children it starts; importing it here would import Django into every pytest process, the
    trainer's and sandbox's included (tests/test_tiers.py holds them to no Django)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if _interrupted:
        return  # tearing down already
    _interrupted.append(signum)
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _pass_to_workers(signum: int, frame: FrameType | None) -> None:
    import psutil  # the controller's only use of it; a test dependency (requirements-dev.txt)

    for worker in psutil.Process().children():
        try:
            worker.send_signal(signum)
        except psutil.NoSuchProcess:
            pass


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    controller = not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
    for sig in SIGNALS:
        signal.signal(sig, _pass_to_workers if controller else _interrupt)
    _die_with_parent()
