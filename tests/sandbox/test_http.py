"""POST /run_code through the real `sandbox-fusion` client, health, refusals and overload."""

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from sandbox_fusion import RunCodeRequest, RunStatus, run_code
from sandbox_fusion.models import CommandRunStatus

from sandbox import SandboxPool
from sandbox.server import SandboxServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def endpoint(pool) -> Iterator[str]:
    server = SandboxServer(("127.0.0.1", 0), pool)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_client_runs_python(endpoint):
    resp = run_code(RunCodeRequest(code="print(2**10)", language="python"), endpoint=endpoint, max_attempts=1)
    assert resp.status == RunStatus.Success
    assert resp.run_result.status == CommandRunStatus.Finished
    assert resp.run_result.stdout == "1024\n"
    assert resp.run_result.return_code == 0


def test_client_sees_a_failure(endpoint):
    resp = run_code(RunCodeRequest(code="1/0", language="python"), endpoint=endpoint, max_attempts=1)
    assert resp.status == RunStatus.Failed
    assert resp.run_result.return_code == 1
    assert "ZeroDivisionError" in resp.run_result.stderr


def test_client_sees_a_timeout(endpoint):
    req = RunCodeRequest(code="import time; time.sleep(10)", language="python", run_timeout=0.5)
    resp = run_code(req, endpoint=endpoint, max_attempts=1)
    assert resp.status == RunStatus.Failed
    assert resp.run_result.status == CommandRunStatus.TimeLimitExceeded


def test_client_passes_stdin_and_files(endpoint):
    req = RunCodeRequest(code="print(input(), open('a.txt').read())", language="python", stdin="hi\n",
                         files={"a.txt": "aGVsbG8="})
    resp = run_code(req, endpoint=endpoint, max_attempts=1)
    assert resp.run_result.stdout == "hi hello\n"


def test_other_languages_are_refused_clearly(endpoint):
    with pytest.raises(Exception, match="not supported: tirlab's sandbox runs only 'python'"):
        run_code(RunCodeRequest(code="int main(){}", language="cpp"), endpoint=endpoint, max_attempts=1)


def test_verl_style_raw_request(endpoint):
    # verl posts the JSON itself, with memory_limit_MB and compile_timeout.
    body = {"code": "print(1)", "language": "python", "run_timeout": 5, "compile_timeout": 5, "stdin": "",
            "memory_limit_MB": 256, "files": {}, "fetch_files": []}
    data = httpx.post(f"{endpoint}/run_code", json=body).json()
    assert data["status"] == "Success"
    assert data["run_result"]["stdout"] == "1\n"


def test_bad_request_is_400(endpoint):
    r = httpx.post(f"{endpoint}/run_code", content=b"not json")
    assert r.status_code == 400
    assert r.json()["status"] == "SandboxError"


def test_health_and_ping(endpoint):
    assert httpx.get(f"{endpoint}/v1/ping").json() == "pong"
    health = httpx.get(f"{endpoint}/health").json()
    assert health["status"] == "ok"
    assert "network_isolated" in health


def test_overload_answers_429_quickly():
    with SandboxPool(size=1) as p:
        server = SandboxServer(("127.0.0.1", 0), p, queue=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/run_code"
        try:
            slow = threading.Thread(target=httpx.post, args=(url,),
                                    kwargs={"json": {"code": "import time; time.sleep(2)", "language": "python"},
                                            "timeout": 10})
            slow.start()
            deadline = time.monotonic() + 5
            while server.inflight == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            started = time.monotonic()
            r = httpx.post(url, json={"code": "print(1)", "language": "python"})
            assert r.status_code == 429
            assert time.monotonic() - started < 0.5
            assert r.headers["Retry-After"] == "1"
            slow.join()
        finally:
            server.shutdown()
            server.server_close()


def test_serve_command():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                resp = run_code(RunCodeRequest(code="print('up')", language="python"),
                                endpoint=f"http://127.0.0.1:{port}", max_attempts=1)
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
        assert resp.run_result.stdout == "up\n"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
