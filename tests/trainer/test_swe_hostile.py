"""Hostile commands through `execute_bash` are contained as the sandbox contains a hostile snippet
(tests/sandbox/test_isolation.py): no network, nothing written outside the working directory, time and process
limits, output capped, other snippets' files out of reach, nothing left running."""

import asyncio
import os
import time
from pathlib import Path

import pytest

from sandbox import SandboxPool
from trainer.envs import CallContext
from trainer.envs.swe.bash import BashResult, execute_bash
from trainer.envs.swe.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(size=2) as pool:
        yield pool


def bash(pool: SandboxPool, command: str, *, timeout_s: float = 10.0) -> BashResult:
    workspace = Workspace.from_files({"f.py": "x = 1\n"}, root="/workspace/repo")
    return asyncio.run(execute_bash(workspace, command, context=CallContext(run_code=pool.arun, timeout_s=timeout_s)))


@pytest.mark.parametrize(
    "command",
    [
        "curl -sS -m 3 http://127.0.0.1:5432/",
        "python -c \"import socket; socket.create_connection(('127.0.0.1', 5432), timeout=2)\"",
        "python -c \"import socket; socket.create_connection(('1.1.1.1', 443), timeout=2)\"",
    ],
)
def test_no_network(pool, command):
    assert bash(pool, command).exit_code != 0


@pytest.mark.parametrize(
    "target", ["/tmp/tirlab-swe-escape", f"{Path.home()}/tirlab-swe-escape", f"{REPO}/tirlab-swe-escape"]
)
def test_cannot_write_outside_the_working_directory(pool, target):
    result = bash(pool, f"echo escaped > {target}")
    assert result.exit_code != 0
    assert not os.path.exists(target)


def test_fork_bomb_is_contained(pool):
    started = time.monotonic()
    result = bash(pool, ":(){ :|:& };:", timeout_s=5)
    assert time.monotonic() - started < 15
    assert result.status in ("timeout", "error", "ok")
    assert bash(pool, "echo alive").text.startswith("alive\n")


def test_a_command_past_its_limit_is_killed_with_its_group(pool):
    started = time.monotonic()
    result = bash(pool, "sleep 1000 & sleep 1000", timeout_s=4)
    assert time.monotonic() - started < 8
    assert result.status == "timeout" and result.exit_code == -1
    assert "[The command timed out after 2.5 seconds." in result.text
    assert "[Command finished" not in result.text


def test_huge_output_is_capped(pool):
    result = bash(pool, "yes | head -c 50000000")
    assert len(result.text) < 31_000
    assert "[... Observation truncated due to length ...]" in result.text


def test_other_snippets_directories_are_out_of_reach(pool):
    first = bash(pool, 'pwd -P; ls -d "$PWD"/..')
    parent = first.output.split()[0].rsplit("/", 1)[0]
    result = bash(pool, f"ls {parent}")
    assert result.exit_code != 0 or result.output.strip() in ("", first.output.split()[0].rsplit("/", 1)[1])


def test_nothing_is_left_running(pool):
    result = bash(pool, "nohup sleep 100 >/dev/null 2>&1 & setsid sleep 101 & echo $$")
    assert result.exit_code == 0
    time.sleep(0.5)
    running = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) in ("sleep100", "sleep101")]
    assert running == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b"").decode()
    except OSError:
        return ""
