"""The local Ray head that `make run` starts when RAY_ADDRESS is unset.

`ray start --head --block` runs in its own session under the supervisor, so stopping it reaches
every Ray daemon it started (GCS, raylet, dashboard, workers, and the trainers' job drivers). Every
port is picked free, so a development stack, the test suite and a user's own Ray never collide,
and Redis keeps 6379 (Ray's default GCS port). The head gets a minimal environment: the jobs it runs
(trainers) have no business with DATABASE_URL, SECRET_KEY or Redis.
"""

import hashlib
import os
import socket
import sys
import urllib.request
from pathlib import Path

from webapp.devstack.processes import DevstackError, say

# The embedded head, its clients (web, worker) and its jobs run without Ray's token authentication.
# Ray enables it for a head whenever ~/.ray/auth_token exists, which any local `ray.init()` creates
# (a trainer's Ray rollout backend, say); our readiness probe and job clients would then be refused.
# Every port of this head listens on 127.0.0.1 only. A cluster given by RAY_ADDRESS keeps its own.
CLIENT_ENV = {"RAY_AUTH_MODE": "disabled"}

# Variables a Ray job may see; everything else (database, broker, secrets) stays with the web stack.
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TIRLAB_VAR_DIR", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def temp_dir(var_dir: Path) -> Path:
    # Ray puts unix sockets under its temp dir, and a socket path must stay under 108 bytes: a short
    # folder under /tmp, one per var dir, instead of var/ itself.
    digest = hashlib.sha256(str(var_dir.resolve()).encode()).hexdigest()[:10]
    return Path("/tmp") / f"tirlab-ray-{digest}"


def head_command(var_dir: Path, num_cpus: int) -> tuple[list[str], str]:
    """argv of the head and the address of its job API (its dashboard)."""
    dashboard = free_port()
    ray = str(Path(sys.executable).with_name("ray"))
    argv = [
        ray,
        "start",
        "--head",
        "--block",
        "--disable-usage-stats",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        str(free_port()),
        "--dashboard-host",
        "127.0.0.1",
        "--dashboard-port",
        str(dashboard),
        "--ray-client-server-port",
        str(free_port()),
        "--dashboard-agent-listen-port",
        str(free_port()),
        "--dashboard-agent-grpc-port",
        str(free_port()),
        "--runtime-env-agent-port",
        str(free_port()),
        "--metrics-export-port",
        str(free_port()),
        "--node-manager-port",
        str(free_port()),
        "--object-manager-port",
        str(free_port()),
        "--num-cpus",
        str(num_cpus),
        # Trainers pass no objects through Ray's store; a small one spares /dev/shm.
        "--object-store-memory",
        str(256 * 1024 * 1024),
        "--temp-dir",
        str(temp_dir(var_dir)),
    ]
    return argv, f"http://127.0.0.1:{dashboard}"


def head_env(environ: dict[str, str]) -> dict[str, str]:
    env = {key: environ[key] for key in _PASSED_ENV if key in environ}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env.update(CLIENT_ENV)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def jobs_api_ready(address: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{address}/api/version", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_ray(sup, var_dir: Path) -> str:  # noqa: ANN001 - the Supervisor; imported lazily by the caller
    num_cpus = os.cpu_count() or 1
    argv, address = head_command(var_dir, num_cpus)
    if not Path(argv[0]).exists():
        raise DevstackError(f"{argv[0]} is missing: install the requirements (make run does)")
    child = sup.spawn("ray", argv, head_env({**os.environ, "TIRLAB_VAR_DIR": str(var_dir)}))
    sup.wait_until(lambda: jobs_api_ready(address), [child], "ray (job API)")
    say("ray", f"ready ({address}; {num_cpus} CPUs; logs under {temp_dir(var_dir)})")
    return address
