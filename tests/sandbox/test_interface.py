"""The Python API: run/arun on the default pool, SandboxPool, Result, the CLI."""

import asyncio
import dataclasses
import json
import os
import subprocess
import sys

import pytest

import sandbox
from sandbox import Result, SandboxPool
from sandbox.pool import default_workers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_run_on_the_default_pool():
    result = sandbox.run("print(2**10)")
    assert isinstance(result, Result)
    assert (result.status, result.stdout, result.exit_code, result.truncated) == ("ok", "1024\n", 0, False)
    assert result.duration_ms > 0


async def test_arun_on_the_default_pool_runs_many_at_once():
    results = await asyncio.gather(*(sandbox.arun(f"import time; time.sleep(0.2); print({i})") for i in range(16)))
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(16)]


def test_result_is_frozen():
    result = sandbox.run("pass")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = "error"  # type: ignore[misc]


def test_stdin(pool):
    result = pool.run("a, b = map(int, input().split()); print(a + b)", stdin="3 4\n")
    assert result.stdout == "7\n"


def test_files_are_written_into_the_working_directory(pool):
    result = pool.run("print(open('data/in.txt').read())", files={"data/in.txt": b"hello"})
    assert result.stdout == "hello\n"


def test_files_outside_the_working_directory_are_refused(pool):
    result = pool.run("pass", files={"../escape": b"x"})
    assert result.status == "killed"
    assert "inside the working directory" in result.stderr


def test_preloaded_libraries_are_usable(pool):
    result = pool.run("import numpy as np, sympy, fractions, itertools, math\n"
                      "x = sympy.Symbol('x'); print(sympy.solve(x**2 - 5*x + 6, x), int(np.eye(3).sum()))")
    assert result.stdout == "[2, 3] 3\n", result.stderr


def test_a_syntax_error_is_an_error_result(pool):
    result = pool.run("def (:")
    assert result.status == "error"
    assert "SyntaxError" in result.stderr


def test_non_utf8_output_does_not_raise(pool):
    result = pool.run("import os; os.write(1, b'\\xff\\xfe ok')")
    assert result.status == "ok"
    assert result.stdout.endswith(" ok")


def test_a_closed_pool_answers_with_a_result():
    p = SandboxPool(size=1)
    p.close()
    result = p.run("print(1)")
    assert result.status == "killed"
    assert "closed" in result.stderr


def test_pool_as_context_manager_and_async(pool):
    async def many():
        return await asyncio.gather(*(pool.arun(f"print({i}*{i})") for i in range(50)))

    results = asyncio.run(many())
    assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(50)]


def test_workers_default_from_the_environment(monkeypatch):
    monkeypatch.setenv("TIRLAB_SANDBOX_WORKERS", "3")
    assert default_workers() == 3
    monkeypatch.delenv("TIRLAB_SANDBOX_WORKERS")
    assert default_workers() == 4 * (os.cpu_count() or 1)


def test_pool_reports_its_isolation(pool):
    info = pool.info
    assert info["size"] == 8
    assert isinstance(info["network_isolated"], bool)
    if os.geteuid() == 0:
        assert info["network_isolated"] and info["fs_isolated"] and info["unprivileged"], info["problems"]


def test_cli_run_prints_the_result_as_json(tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text("print('hi')\nraise SystemExit(2)\n")
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", str(script), "--timeout", "5"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["status"], data["stdout"], data["exit_code"]) == ("error", "hi\n", 2)


def test_snippets_naming_numpy_or_sympy_start_with_them_imported(pool):
    # Routed to the full zygote: the name appears in the code, so the modules are already there.
    full = pool.run("import sys; print('numpy' in sys.modules, 'sympy' in sys.modules)")
    assert full.stdout == "True True\n"
    # numpy loads numpy.random on first use (with secrets and hashlib): warmed in the zygote too.
    rng = pool.run("import sys; print('numpy.random' in sys.modules, 'secrets' in sys.modules)")
    assert rng.stdout == "True True\n"
    # Anything else forks from the light zygote (standard library only), which is cheaper per fork.
    light = pool.run("import sys; print(any(m.split('.')[0] in ('num' + 'py', 'sym' + 'py') for m in sys.modules))")
    assert light.stdout == "False\n"
    # A snippet that reaches them without naming them still works there: it pays for the import itself.
    sneaky = pool.run("m = __import__('num' + 'py'); print(int(m.arange(4).sum()))", timeout_s=30)
    assert (sneaky.status, sneaky.stdout) == ("ok", "6\n")


def test_the_pool_runs_both_kinds_of_zygote():
    with SandboxPool(size=2, zygotes=1) as p:
        assert p.info["zygotes"] == 2
        assert p.run("print(1)").stdout == "1\n"
        assert p.run("import sympy; print(sympy.Integer(2) ** 3)").stdout == "8\n"
