"""Fast, isolated execution of model-written Python code.

    import sandbox
    result = sandbox.run("print(2**10)")          # Result(status="ok", stdout="1024\n", ...)
    result = await sandbox.arun(code, timeout_s=5)

    with sandbox.SandboxPool(size=8) as pool:
        pool.run(code, memory_mb=512, stdin="3 4\n")

See sandbox.pool for how the pool works and sandbox._zygote for what each snippet runs under.
"""

from sandbox.pool import SandboxPool, arun, default_pool, run
from sandbox.result import STATUSES, Result, Status

__all__ = ["STATUSES", "Result", "SandboxPool", "Status", "arun", "default_pool", "run"]
