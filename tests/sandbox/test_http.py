"""POST /run_code through the real `sandbox-fusion` client, health, refusals and overload."""

import os
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
    slow_code = {"code": "import time; time.sleep(60)", "language": "python", "run_timeout": 60}
    with SandboxPool(size=1) as p:
        server = SandboxServer(("127.0.0.1", 0), p, queue=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/run_code"
        slow = threading.Thread(target=httpx.post, args=(url,), kwargs={"json": slow_code, "timeout": 120})
        try:
            slow.start()
            deadline = time.monotonic() + 30
            while server.inflight == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            r = httpx.post(url, json={"code": "print(1)", "language": "python"}, timeout=30)
            assert r.status_code == 429
            # Quickly: while the only slot is still busy (for a minute), not once it frees up.
            assert server.inflight == 1
            assert r.headers["Retry-After"] == "1"
        finally:
            server.shutdown()
            server.server_close()
    slow.join(timeout=30)  # the pool's close answered it ("killed")
    assert not slow.is_alive()


def test_serve_command():
    # Port 0: the server binds a free port itself and names it (a port picked here could be taken
    # before the server binds it).
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--workers", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        output = []
        for line in proc.stdout:  # until it says where it listens, or exits
            output.append(line)
            if line.startswith("tirlab sandbox on http://127.0.0.1:"):
                break
        assert output and output[-1].startswith("tirlab sandbox on "), "".join(output)
        endpoint = output[-1].split()[3]
        resp = run_code(RunCodeRequest(code="print('up')", language="python"), endpoint=endpoint, max_attempts=1)
        assert resp.run_result.stdout == "up\n"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
