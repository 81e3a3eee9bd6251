"""Children forked ahead of time (spares) keep every per-snippet guarantee."""

import time

from sandbox import SandboxPool


def test_a_spare_serves_one_snippet_with_its_own_uid_dir_and_descriptors(pool):
    time.sleep(0.2)  # let spares be forked and wait
    seen = set()
    for _ in range(6):
        result = pool.run("import os; print(os.getuid(), os.getcwd(), sorted(os.listdir('/proc/self/fd')))")
        assert result.status == "ok", result
        uid, cwd, fds = result.stdout.split(" ", 2)
        assert (uid, cwd) not in seen
        seen.add((uid, cwd))
        # stdin, stdout, stderr, the status pipe (and listdir's own): nothing of the hand-over stays open.
        assert fds.strip() == "['0', '1', '2', '3', '4']"
    if result.unprivileged:
        assert len({uid for uid, _ in seen}) == len(seen)


def test_the_timeout_clock_starts_with_the_request_not_the_fork(pool):
    time.sleep(1.2)  # a spare that waited longer than the timeout must still get all of it
    result = pool.run("import time; time.sleep(0.3); print('done')", timeout_s=1)
    assert result.status == "ok", result


def test_without_spares_each_request_forks_on_demand():
    with SandboxPool(size=2, spares=0) as p:
        result = p.run("print(input())", stdin="x\n", files={"a.txt": b"y"}, timeout_s=5)
        assert (result.status, result.stdout) == ("ok", "x\n"), result
        assert p.run("while True: pass", timeout_s=0.3).status == "timeout"


def test_a_plain_snippet_forks_from_a_lean_zygote(pool):
    # What the light zygote holds, every fork copies and every child re-initialises: the sandbox
    # package's own imports (asyncio, subprocess, logging, threading and its at-fork hook) stay out.
    result = pool.run("import sys; print(sorted({'asyncio', 'logging', 'subprocess', 'threading', 'sandbox'}"
                      " & set(sys.modules)))")
    assert (result.status, result.stdout) == ("ok", "[]\n"), result


def test_spares_are_forked_in_batches_and_each_still_serves_one_snippet():
    with SandboxPool(size=2, zygotes=1, spares=6) as p:
        results = [p.run("import os; print(os.getpid(), os.getcwd())") for _ in range(20)]
    assert all(r.status == "ok" for r in results), results
    assert len({r.stdout for r in results}) == 20
