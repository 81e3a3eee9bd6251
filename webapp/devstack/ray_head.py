"""The local Ray head that `make run` starts when RAY_ADDRESS is unset.

`ray start --head --block` runs in its own session under the supervisor, so stopping it reaches
every Ray daemon it started (GCS, raylet, dashboard, workers, and the trainers' job drivers). Every
port is 0: each Ray component binds one the system gives it and publishes it, so no number is picked
here and handed over for something else to take first (a development stack, the test suite and a
user's own Ray run side by side; Redis keeps 6379, Ray's default GCS port). The job API's address is
read back from the head's GCS once the dashboard has bound. The head gets a minimal environment: the
jobs it runs (trainers) have no business with DATABASE_URL, SECRET_KEY or Redis.

Stopping it: SIGTERM to `ray start` alone, which stops its daemons itself, the raylet first (and with it
the workers), then the GCS and the rest; devstack signals what is left of the session after (Child's
`leader_first`). A SIGTERM to the whole session at once would reach the GCS and the raylet while `ray
start` asks the GCS to drain the node: that call waits out its 30 s timeout, and devstack's patience
ended in a SIGKILL. Nor does it drain at all (RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0): draining lets
Ray Serve move traffic off a node, and with a trainer running it would wait the 30 s for nothing.
"""

import functools
import hashlib
import os
import socket
import sys
import urllib.request
from pathlib import Path
from typing import Any

from webapp.devstack.processes import DevstackError, say

# The embedded head, its clients (web, worker) and its jobs run without Ray's token authentication.
# Ray enables it for a head whenever ~/.ray/auth_token exists, which any local `ray.init()` creates
# (a trainer's Ray rollout backend, say); our readiness probe and job clients would then be refused.
# Every port of this head listens on 127.0.0.1 only. A cluster given by RAY_ADDRESS keeps its own.
CLIENT_ENV = {"RAY_AUTH_MODE": "disabled"}

# Variables a Ray job may see; everything else (database, broker, secrets) stays with the web stack.
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TIRLAB_VAR_DIR", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")

HOOK_DIR = Path(__file__).resolve().parent / "ray_hook"

# Ports Ray lets its components choose with 0. The Ray Client server's cannot be 0: it is not started
# at all (webapp/devstack/ray_hook/tirlab_ray_hook.py).
_ZERO_PORTS = (
    "--port",  # the GCS
    "--dashboard-port",  # the job API
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--runtime-env-agent-port",
    "--metrics-export-port",
    "--node-manager-port",
    "--object-manager-port",
    # Workers' ports, instead of the range 10002-19999 that every head on the machine would share.
    "--min-worker-port",
    "--max-worker-port",
)


def temp_dir(var_dir: Path) -> Path:
    # Ray puts unix sockets under its temp dir, and a socket path must stay under 108 bytes: a short
    # folder under /tmp, one per var dir, instead of var/ itself.
    digest = hashlib.sha256(str(var_dir.resolve()).encode()).hexdigest()[:10]
    return Path("/tmp") / f"tirlab-ray-{digest}"


def head_command(var_dir: Path, num_cpus: int) -> list[str]:
    """argv of the head; its job API's address is `job_api_address(var_dir, pid)` once it is up."""
    ray = str(Path(sys.executable).with_name("ray"))
    argv = [ray, "start", "--head", "--block", "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
    argv += ["--dashboard-host", "127.0.0.1"]
    for option in _ZERO_PORTS:
        argv += [option, "0"]
    argv += [
        "--num-cpus",
        str(num_cpus),
        # Trainers pass no objects through Ray's store; a small one spares /dev/shm.
        "--object-store-memory",
        str(256 * 1024 * 1024),
        "--temp-dir",
        str(temp_dir(var_dir)),
    ]
    return argv


def head_env(environ: dict[str, str]) -> dict[str, str]:
    env = {key: environ[key] for key in _PASSED_ENV if key in environ}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"  # stopped at once (above)
    env.update(CLIENT_ENV)
    env["PYTHONUNBUFFERED"] = "1"
    # `ray start` imports the hook from a folder of its own, not as part of `webapp`, whose import would
    # bring Celery and Django's settings into every Ray process (jobs set their own PYTHONPATH:
    # webapp/runs/ray_jobs.py).
    env["PYTHONPATH"] = str(HOOK_DIR)
    env["RAY_START_HOOK"] = "tirlab_ray_hook.without_client_server"
    return env


def _gcs_port(var_dir: Path, head_pid: int) -> int | None:
    """The port the head's GCS bound, from the session of that `ray start` (Ray names it after the pid);
    None until the GCS has written it and accepts connections."""
    for path in temp_dir(var_dir).glob(f"session_*_{head_pid}/gcs_server_port_*"):
        text = path.read_text().strip()
        if not text.isdigit():  # being written
            return None
        try:  # a GCS client to a port nobody answers waits 40 s before it gives up
            socket.create_connection(("127.0.0.1", int(text)), timeout=1).close()
        except OSError:
            return None
        return int(text)
    return None


@functools.cache
def _gcs_client(port: int) -> Any:  # a ray._raylet.GcsClient
    from ray._raylet import GcsClient  # Ray takes seconds to import: only where a head is started

    return GcsClient(address=f"127.0.0.1:{port}")


def job_api_address(var_dir: Path, head_pid: int) -> str | None:
    """The address of the job API (the dashboard) of the head that `ray start` with this pid started,
    once the dashboard has bound its port and published it; None before."""
    from ray._private import ray_constants

    port = _gcs_port(var_dir, head_pid)
    if port is None:
        return None
    dashboard = _gcs_client(port).internal_kv_get(
        ray_constants.DASHBOARD_ADDRESS.encode(), ray_constants.KV_NAMESPACE_DASHBOARD, timeout=2
    )
    return f"http://{dashboard.decode()}" if dashboard else None


def jobs_api_ready(address: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{address}/api/version", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def ready_job_api(var_dir: Path, head_pid: int) -> str | None:
    """The head's job API address once it answers; None until then."""
    address = job_api_address(var_dir, head_pid)
    return address if address and jobs_api_ready(address) else None


def start_ray(sup, var_dir: Path) -> str:  # noqa: ANN001 - the Supervisor; imported lazily by the caller
    num_cpus = os.cpu_count() or 1
    argv = head_command(var_dir, num_cpus)
    if not Path(argv[0]).exists():
        raise DevstackError(f"{argv[0]} is missing: install the requirements (make run does)")
    child = sup.spawn("ray", argv, head_env({**os.environ, "TIRLAB_VAR_DIR": str(var_dir)}), leader_first=True)
    address = sup.wait_until(lambda: ready_job_api(var_dir, child.proc.pid), [child], "ray (job API)")
    say("ray", f"ready ({address}; {num_cpus} CPUs; logs under {temp_dir(var_dir)})")
    return address
