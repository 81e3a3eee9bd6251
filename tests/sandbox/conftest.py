from collections.abc import Iterator

import pytest

from sandbox import SandboxPool


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    # One pool for the whole session: hostile tests then also prove that they leave it usable.
    with SandboxPool(size=8) as p:
        yield p
