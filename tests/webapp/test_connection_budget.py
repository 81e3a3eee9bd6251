"""The connection budget devstack announces: what tirlab may hold at most, and whether the server has room."""

import pytest
from django.conf import settings

from webapp.devstack.budget import ConnectionBudget, check, web_processes, worker_processes


def test_the_bound_is_web_processes_times_pool_plus_one_per_celery_process() -> None:
    budget = ConnectionBudget(web_processes=2, pool_size=8, worker_processes=2)
    assert budget.total == 2 * 8 + 2 + 1
    assert budget.describe().startswith("database connections: at most 19 (2 web processes x pool 8")


def test_the_process_counts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIRLAB_WEB_PROCESSES", "3")
    monkeypatch.setenv("TIRLAB_WORKER_CONCURRENCY", "5")
    assert (web_processes(), worker_processes()) == (3, 5)


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_process_count_that_is_not_a_positive_number_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("TIRLAB_WEB_PROCESSES", value)
    with pytest.raises(ValueError, match="TIRLAB_WEB_PROCESSES"):
        web_processes()


def test_a_budget_that_fits_the_server_says_so_and_one_that_does_not_warns() -> None:
    url = settings.DATABASE_URL
    fits = check(ConnectionBudget(1, 2, 1), url)
    assert "the server allows" in fits and "WARNING" not in fits
    too_big = check(ConnectionBudget(100, 50, 1), url)
    assert "WARNING: that does not fit" in too_big and "TIRLAB_DB_POOL_SIZE" in too_big


def test_an_unreachable_server_is_said_and_does_not_stop_anything() -> None:
    line = check(ConnectionBudget(1, 2, 1), "postgresql://postgres@127.0.0.1:9/postgres?connect_timeout=1")
    assert "could not be read" in line
