"""A database that cannot serve a request now — its pool busy, the server down — is a 503 with Retry-After,
never a 500: the clients (the trainer's reporter, the MLflow client, the pages) then send it again.

The errors are the real ones: a psycopg pool that times out, and a connection refused by a port where
no server listens, each raised through Django's own database-error wrapper, as a query would raise it.
"""

import json

import psycopg
import pytest
from django.db import connection
from django.test import RequestFactory
from psycopg_pool import ConnectionPool, PoolTimeout

from webapp.core.unavailable import RETRY_AFTER_S, DatabaseUnavailableMiddleware, retry_after_s, server_error


def raised_through_django(error: Exception) -> Exception:
    """`error` as Django raises it to a view: wrapped in django.db's exception of the same kind."""
    try:
        with connection.wrap_database_errors:
            raise error
    except Exception as wrapped:  # noqa: BLE001 — the point is to catch what Django made of it
        return wrapped
    raise AssertionError("not raised")


def pool_timeout() -> PoolTimeout:
    pool = ConnectionPool("host=127.0.0.1 port=9 connect_timeout=1", min_size=0, max_size=1, timeout=0.2, open=True)
    try:
        pool.getconn()
    except PoolTimeout as exc:
        return exc
    finally:
        pool.close()
    raise AssertionError("the pool gave a connection to a port where nothing listens")


def refused() -> psycopg.OperationalError:
    try:
        psycopg.connect("host=127.0.0.1 port=9 connect_timeout=1")
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("something listens on port 9")


def middleware_answer(path: str, error: Exception):
    request = RequestFactory().post(path)
    return DatabaseUnavailableMiddleware(lambda r: None).process_exception(request, raised_through_django(error))


def test_a_pool_that_timed_out_is_503_with_retry_after_in_json_for_the_api() -> None:
    response = middleware_answer("/api/v1/runs/3/ingest", pool_timeout())
    assert response.status_code == 503 and response["Retry-After"] == str(RETRY_AFTER_S)
    body = json.loads(response.content)
    assert "busy or unreachable" in body["detail"] and "nothing was written" in body["detail"]


def test_a_database_that_refuses_connections_is_503_with_retry_after() -> None:
    response = middleware_answer("/api/v1/runs/", refused())
    assert response.status_code == 503 and response["Retry-After"] == str(RETRY_AFTER_S)


def test_a_page_gets_a_short_html_page_saying_to_try_again() -> None:
    response = middleware_answer("/runs/", refused())
    assert response.status_code == 503 and b"try again" in response.content.lower()


def test_other_errors_are_not_mistaken_for_an_unavailable_database() -> None:
    assert retry_after_s(ValueError("a bug")) is None
    assert retry_after_s(raised_through_django(psycopg.errors.UniqueViolation("duplicate key"))) is None
    assert middleware_answer("/api/v1/runs/", ValueError("a bug")) is None


def test_the_500_handler_answers_503_when_the_error_was_the_database(rf) -> None:
    """Errors raised outside a view (a session saved after it, say) reach the 500 handler instead."""
    try:
        raise raised_through_django(refused())
    except Exception:  # noqa: BLE001 — the handler reads the exception being handled, as Django calls it
        response = server_error(rf.get("/runs/"))
    assert response.status_code == 503 and response["Retry-After"] == str(RETRY_AFTER_S)


@pytest.mark.django_db
def test_the_500_handler_still_answers_500_for_a_bug(rf) -> None:
    try:
        raise ValueError("a bug")
    except ValueError:
        response = server_error(rf.get("/runs/"))
    assert response.status_code == 500
