"""Benchmark: what a fork-per-snippet sandbox cannot go below on this machine.

The sandbox runs each snippet in a fresh fork of a warm Python process. This measures, on the same
machine and in the same run, the pieces that bound how fast that can ever be, with no isolation,
no pipes and no bookkeeping at all:

- one copy-on-write page fault (a forked child writing one page of its parent's memory);
- fork + exit of a Python process with the light zygote's modules imported;
- fork + compile and exec of `print(2**10)` + exit (the least a snippet run can cost);
- one fresh `python -c "print(2**10)"` (the sandbox benchmark's baseline);
- and, for comparison, what one trivial execution costs in tirlab's pool, split by process.

The last line divides the baseline by the fork floor: the largest throughput ratio any
fork-per-snippet design could reach on trivial snippets here, before it isolates anything.

    .venv/bin/python bench/fork_floor.py            # 5 repeats, about 30 s

It runs under the zygotes' allocator settings (PYTHONMALLOC, GLIBC_TUNABLES), re-executing itself
with them when they are not set.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import time
from pathlib import Path

# The zygote module alone, as the pool starts it: importing the sandbox package would bring in
# threading, whose at-fork hook the zygotes do not pay.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sandbox"))

from _zygote import ALLOCATOR_ENV, PRELOAD  # noqa: E402 - after the path set-up above

del sys.path[0]

SNIPPET = "print(2**10)"


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt


def cow_fault_us(pages: int = 4096) -> float:
    """Microseconds per copy-on-write fault, measured in a child writing one byte per page."""
    buf = bytearray(pages * 4096)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        started = time.perf_counter()
        for i in range(0, len(buf), 4096):
            buf[i] = 2
        os.write(w, repr((time.perf_counter() - started) / pages * 1e6).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(w)
    value = float(os.read(r, 64))
    os.close(r)
    return value


def fork_loop(n: int, run_snippet: bool) -> tuple[float, float]:
    """CPU ms per fork (+ snippet) + exit, and page faults per child."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    code = compile(SNIPPET, "<string>", "exec")  # compiled once here: the compiler is warm in the parent
    exec(compile("x = 1", "<string>", "exec"), {})
    cpu0, faults0 = _cpu(), _faults()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            if run_snippet:
                os.dup2(devnull, 1)
                exec(compile(SNIPPET, "<string>", "exec"), {"__name__": "__main__"})
                sys.stdout.flush()
            os._exit(0)
        os.waitpid(pid, 0)
    del code
    os.close(devnull)
    return (_cpu() - cpu0) / n * 1e3, (_faults() - faults0) / n


def python_c_ms(n: int) -> float:
    # posix_spawn, as subprocess does, without importing subprocess (and its threading).
    cpu0 = _cpu()
    for _ in range(n):
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", SNIPPET], dict(os.environ),
                             file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"python -c failed with status {status}")
    return (_cpu() - cpu0) / n * 1e3


def pool_cost(n: int = 2000, concurrency: int = 8) -> dict[str, float]:
    """CPU ms and page faults per trivial execution in the tirlab pool, split by process."""
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from sandbox import SandboxPool

    tick = os.sysconf("SC_CLK_TCK")

    def stat(pid: int) -> list[float]:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        # utime, stime, cutime, cstime (ticks) and minflt, cminflt
        return [int(x) / tick for x in fields[11:15]] + [int(fields[7]), int(fields[8])]

    with SandboxPool(size=32) as pool, ThreadPoolExecutor(concurrency) as ex:
        pids = [z.info["pid"] for z in pool._zygotes]
        list(ex.map(lambda _: pool.run(SNIPPET), range(100)))
        before = [stat(p) for p in pids]
        own = os.times()
        results = list(ex.map(lambda _: pool.run(SNIPPET), range(n)))
        own_after = os.times()
        after = [stat(p) for p in pids]
    if any(r.status != "ok" for r in results):
        raise RuntimeError(next(r for r in results if r.status != "ok"))

    def delta(i: int) -> float:
        return sum(a[i] - b[i] for a, b in zip(after, before, strict=True))

    parent = own_after.user + own_after.system - own.user - own.system
    return {"parent_ms": parent / n * 1e3, "zygotes_ms": (delta(0) + delta(1)) / n * 1e3,
            "children_ms": (delta(2) + delta(3)) / n * 1e3, "zygote_faults": delta(4) / n,
            "child_faults": delta(5) / n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    # The zygotes' allocator settings change what a fork costs: measure under the same ones.
    if any(os.environ.get(k) != v for k, v in ALLOCATOR_ENV.items()):
        env = {**os.environ, **ALLOCATOR_ENV}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    for name in PRELOAD:
        __import__(name)
    gc.collect()
    gc.freeze()
    assert "threading" not in sys.modules
    print(f"# cores={os.cpu_count()} loadavg(before)={os.getloadavg()[0]:.2f} python={sys.version.split()[0]}",
          file=sys.stderr)
    rows: dict[str, list[float]] = {"cow": [], "bare": [], "bare_faults": [], "snippet": [], "snippet_faults": [],
                                    "python_c": []}
    for _ in range(args.repeats):
        rows["cow"].append(cow_fault_us())
        ms, faults = fork_loop(400, run_snippet=False)
        rows["bare"].append(ms)
        rows["bare_faults"].append(faults)
        ms, faults = fork_loop(400, run_snippet=True)
        rows["snippet"].append(ms)
        rows["snippet_faults"].append(faults)
        rows["python_c"].append(python_c_ms(40))
    med = {k: statistics.median(v) for k, v in rows.items()}
    # Last: it imports the sandbox package (and threading), which the floor above must not have.
    pool = pool_cost()
    print(f"loadavg(after)={os.getloadavg()[0]:.2f}  (medians of {args.repeats} repeats; CPU time, parent + child)")
    print("| what | median |")
    print("|---|---:|")
    print(f"| one copy-on-write page fault | {med['cow']:.1f} µs |")
    print(f"| fork + exit of a warm Python (light modules) | {med['bare']:.2f} ms CPU, "
          f"{med['bare_faults']:.0f} faults in the child |")
    print(f"| fork + compile/exec `{SNIPPET}` + exit | {med['snippet']:.2f} ms CPU, "
          f"{med['snippet_faults']:.0f} faults in the child |")
    print(f"| fresh `python -c` (baseline) | {med['python_c']:.2f} ms CPU |")
    print(f"| ceiling of a fork-per-snippet sandbox on trivial snippets | x{med['python_c'] / med['snippet']:.1f} "
          "the baseline's throughput |")
    total = pool["parent_ms"] + pool["zygotes_ms"] + pool["children_ms"]
    print(f"| tirlab pool, 2,000 trivial snippets at concurrency 8 | {total:.2f} ms CPU per execution: caller "
          f"{pool['parent_ms']:.2f}, zygotes {pool['zygotes_ms']:.2f} ({pool['zygote_faults']:.0f} faults), "
          f"children {pool['children_ms']:.2f} ({pool['child_faults']:.0f} faults) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
