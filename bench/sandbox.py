"""Benchmark: tirlab's sandbox pool against one fresh `python -c` subprocess per call.

Four workloads (trivial, sympy, numpy, sleepy) at concurrency 1, 8 and 32. Both sides run in the
same process and the same run, each call from its own thread (as a rollout loop's executor would),
so the ratios compare like with like on whatever load the machine has. The baseline is the approach
of skyrl-gym's python tool and qwen-agent's executor: `subprocess.run([python, "-c", code],
timeout=...)` with the project's interpreter, so it imports sympy/numpy itself when the snippet does.
The pool runs with every isolation guarantee on (network namespace, per-run uid, rlimits).

    .venv/bin/python bench/sandbox.py           # full run (about 3 minutes on 2 cores)
    .venv/bin/python bench/sandbox.py --quick   # smoke check (under a minute)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox import SandboxPool  # noqa: E402 - after the path set-up above

WORKLOADS = {
    "trivial": "print(2**10)",
    "sympy": "import sympy\nx = sympy.Symbol('x')\nprint(sympy.solve(x**2 - 5*x + 6, x))",
    "numpy": "import numpy as np\na = np.random.rand(200, 200)\nprint(float((a @ a).sum()) > 0)",
    "sleepy": "import time\ntime.sleep(0.2)\nprint('done')",
}
CONCURRENCY = (1, 8, 32)


def calls_for(workload: str, concurrency: int, side: str, quick: bool) -> int:
    # Enough calls for a stable median while keeping the slow baseline cells to a few seconds.
    if workload == "sleepy":
        n = 10 * concurrency if concurrency > 1 else 10
    elif side == "baseline":
        n = {"trivial": 60, "sympy": 12, "numpy": 24}[workload] * max(1, concurrency // 4)
    else:
        n = {"trivial": 600, "sympy": 200, "numpy": 200}[workload]
    n = max(n, concurrency)
    return max(concurrency, n // 4) if quick else n


def baseline_call(code: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode())
    return time.perf_counter() - started


def measure(call, code: str, n: int, concurrency: int) -> tuple[float, float, float]:
    """Executions/s, p50 and p99 latency in ms."""
    with ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(lambda _: call(code), range(concurrency)))  # warm-up: threads, caches
        started = time.perf_counter()
        latencies = list(ex.map(lambda _: call(code), range(n)))
        wall = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return n / wall, statistics.median(latencies) * 1000, p99 * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the calls per cell")
    args = parser.parse_args()
    with SandboxPool(size=max(CONCURRENCY)) as pool:
        info = pool.info

        def pool_call(code: str) -> float:
            started = time.perf_counter()
            result = pool.run(code, timeout_s=30)
            if result.status != "ok":
                raise RuntimeError(result)
            return time.perf_counter() - started

        print(f"# cores={os.cpu_count()} loadavg(before)={os.getloadavg()[0]:.2f} pool size={pool.size} "
              f"zygotes={info['zygotes']} network_isolated={info['network_isolated']} "
              f"unprivileged={info['unprivileged']}", file=sys.stderr)
        rows = []
        for workload, code in WORKLOADS.items():
            for c in CONCURRENCY:
                p = measure(pool_call, code, calls_for(workload, c, "pool", args.quick), c)
                b = measure(baseline_call, code, calls_for(workload, c, "baseline", args.quick), c)
                rows.append((workload, c, p, b))
                print(f"{workload} c={c} done", file=sys.stderr)
    print(f"loadavg(after)={os.getloadavg()[0]:.2f}")
    print("| workload | conc. | pool exec/s | pool p50 ms | pool p99 ms | baseline exec/s | baseline p50 ms "
          "| baseline p99 ms | throughput ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for workload, c, (pr, p50, p99), (br, b50, b99) in rows:
        print(f"| {workload} | {c} | {pr:.0f} | {p50:.1f} | {p99:.1f} | {br:.1f} | {b50:.1f} | {b99:.1f} "
              f"| x{pr / br:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
