import os

# Tests talk to the real PostgreSQL and Redis that CI (and `make test`) provide; each process (each
# xdist worker) publishes on its own channel-layer prefix. The workers inherit the controller's
# environment, prefix included, so each adds its own id: without it, a run's events on one worker
# reached the sockets of the run with the same id (in another test database) on the others.
os.environ.setdefault("TIRLAB_REDIS_PREFIX", f"tirlab-test-{os.getpid()}")
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TIRLAB_REDIS_PREFIX"] += f"-{worker}"

# xdist workers share the cores: each gets its share of torch's intra-op threads (set before torch is
# imported, and inherited by the trainers it starts). Two threads per worker on two cores wait on
# each other at every matmul: a small SFT test took 53 s instead of 27 s on the loaded machine.
if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(workers))))

pytest_plugins = ("tests.django_setup", "tests.model_cache", "tests.tiers", "tests.interruption")
