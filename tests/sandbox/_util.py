from sandbox import SandboxPool


def assert_healthy(pool: SandboxPool) -> None:
    """The next trivial snippet still succeeds, promptly."""
    result = pool.run("print(2**10)", timeout_s=5)
    assert result.status == "ok", result
    assert result.stdout == "1024\n"
    assert result.duration_ms < 2000
