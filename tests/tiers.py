"""The suite's tiers, and the order its files go to the xdist workers.

A test is in the fast tier (`make test-fast`) unless it is marked `e2e`, `browser` or `slow`:
- every test under tests/e2e is `e2e` and every test under tests/browser is `browser`;
- every test under tests/verl is `slow`: it runs verl's code in a subprocess of verl's own python
  (tests/verl_env.py), which imports verl, torch and ray for seconds before anything is checked;
- every test that uses the cold-started tiny model (the `tiny_model_cache` fixture) is `slow`;
- any other test that starts a Ray instance, trains more than a few steps or otherwise takes more
  than a few seconds says so itself with `@pytest.mark.slow` (or `pytestmark`).

`make test` runs every tier across the machine's cores, whole files per worker (module fixtures
are set up once), longest first: the last files to start are then short ones, so the workers
finish close together, where learning runs of minutes started last kept one worker busy long after
the other had nothing left (longest-processing-time-first, as a scheduler of unequal jobs on a few
machines does). A test's declared timeout (`@pytest.mark.timeout`, else pytest.ini's) stands for
its length; among files of one length, heavier tiers first. The file that takes longest among
those needing the tiny model goes first of all (when the current recipe's cold start is not
shipped, its worker builds it, and a worker that reaches another file needing it waits for that
build).
"""

from pathlib import Path

import pytest

from tests.model_cache import FIXTURE as TINY_MODEL_FIXTURE

TESTS = Path(__file__).resolve().parent
DIRECTORY_MARKS = {"e2e": "e2e", "browser": "browser", "verl": "slow"}
# Heavier tiers first: e2e stacks, then long single tests, then module-wide browsers.
_TIER_ORDER = ("e2e", "slow", "browser")


def pytest_itemcollected(item: pytest.Item) -> None:
    """Marks by directory and by fixture, as each test is collected (before `-m` selects)."""
    parts = item.path.relative_to(TESTS).parts if item.path.is_relative_to(TESTS) else ()
    if parts and parts[0] in DIRECTORY_MARKS:
        item.add_marker(DIRECTORY_MARKS[parts[0]])
    if TINY_MODEL_FIXTURE in getattr(item, "fixturenames", ()):
        item.add_marker("slow")


def _tier_rank(item: pytest.Item) -> int:
    for rank, name in enumerate(_TIER_ORDER):
        if item.get_closest_marker(name):
            return rank
    return len(_TIER_ORDER)


def _timeout(item: pytest.Item, default: float) -> float:
    mark = item.get_closest_marker("timeout")
    return float(mark.args[0]) if mark and mark.args else default


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files in the order they go to the workers (see above); within a file, and among equals, the
    order pytest and pytest-django gave."""
    default = float(config.getini("timeout") or 0)
    needs_model: dict[Path, bool] = {}
    rank: dict[Path, int] = {}
    length: dict[Path, float] = {}
    for item in items:
        path = item.path
        needs_model[path] = needs_model.get(path, False) or TINY_MODEL_FIXTURE in getattr(item, "fixturenames", ())
        rank[path] = min(rank.get(path, len(_TIER_ORDER)), _tier_rank(item))
        length[path] = max(length.get(path, 0.0), _timeout(item, default))
    waiting = [path for path in rank if needs_model[path]]
    first = max(waiting, key=lambda path: (length[path], -rank[path]), default=None)

    def key(item: pytest.Item) -> tuple[bool, float, int]:
        path = item.path
        return path != first, -length[path], rank[path]

    items.sort(key=key)
