"""2,000 mixed executions with hostile ones interleaved: every call gets exactly one, right Result."""

import asyncio
import collections

import pytest

from sandbox import SandboxPool

# (code, expected status, expected stdout or None); {i} is the call's number.
KINDS = [
    ("print({i})", "ok", "{i}\n"),
    ("print({i}); import sympy; x = sympy.Symbol('x'); sympy.solve(x**2 - {i}, x)", "ok", "{i}\n"),
    ("import numpy as np; print({i} + int(np.ones((50, 50)).sum()) - 2500)", "ok", "{i}\n"),
    ("raise ValueError({i})", "error", ""),
    ("import sys; print({i}); sys.exit(3)", "error", "{i}\n"),
    ("import ctypes; ctypes.string_at(0)", "killed", ""),
    ("while True: pass", "timeout", None),
    ("x = bytearray(10 * 1024**3)", "memory_exceeded", ""),
    ("import sys\nwhile True: sys.stdout.write('y' * 65536)", "output_limit", None),
    ("import os, signal; print({i}, flush=True); os.kill(os.getppid(), signal.SIGKILL)", "error", "{i}\n"),
    ("import os\nif os.fork() == 0:\n    os.setsid(); import time; time.sleep(60)\nprint({i})", "ok", "{i}\n"),
]
# Mostly ordinary snippets, as in training, with a hostile one every few calls.
WEIGHTS = [40, 10, 10, 4, 4, 2, 1, 2, 1, 2, 2]


@pytest.mark.slow
async def test_2000_mixed_executions_lose_none():
    plan = []
    schedule = [k for k, w in enumerate(WEIGHTS) for _ in range(w)]
    for i in range(2000):
        plan.append((i, schedule[(i * 7) % len(schedule)]))
    with SandboxPool(size=16, output_limit=64 * 1024) as pool:
        sem = asyncio.Semaphore(64)

        async def one(i: int, kind: int):
            code, _, _ = KINDS[kind]
            async with sem:
                return await pool.arun(code.format(i=i), timeout_s=1.0, memory_mb=256)

        results = await asyncio.gather(*(one(i, k) for i, k in plan))
        info = pool.info
    assert len(results) == 2000
    wrong = []
    for (i, kind), result in zip(plan, results, strict=True):
        _, status, stdout = KINDS[kind]
        if result.status != status or (stdout is not None and result.stdout != stdout.format(i=i)):
            wrong.append((i, kind, result))
    assert wrong == []
    counts = collections.Counter(r.status for r in results)
    assert set(counts) == {"ok", "error", "killed", "timeout", "memory_exceeded", "output_limit"}
    assert info["restarts"] == 0
