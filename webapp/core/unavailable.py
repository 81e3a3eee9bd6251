"""503 with Retry-After, never a 500, when the database cannot serve a request right now.

Two cases reach here as Django's OperationalError / InterfaceError: every connection of the process's
pool stayed busy for TIRLAB_DB_POOL_TIMEOUT_S (psycopg_pool.PoolTimeout), or the database refused or
dropped the connection (restarting, failing over, out of connections). Either way the request's
transaction was rolled back, so nothing of it was written, and the same request can simply be sent
again: the trainer's reporter and tirlab's pages do so by themselves, after `Retry-After` seconds.

`DatabaseUnavailableMiddleware` answers for errors raised in a view (quietly: a warning line, no
traceback); `server_error`, the 500 handler, for those raised anywhere else (a session saved after
the view, say).
"""

import logging
import sys
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from psycopg_pool import PoolTimeout

log = logging.getLogger(__name__)

# The pool was busy: the process is at its share of connections; a second is enough to drain a few.
RETRY_AFTER_BUSY_S = 1
# The database is out of reach: restarts take seconds.
RETRY_AFTER_DOWN_S = 5


def retry_after_s(exc: BaseException | None) -> int | None:
    """Seconds a client should wait when `exc` means the database cannot serve it now; None otherwise."""
    if not isinstance(exc, OperationalError | InterfaceError):
        return None
    return RETRY_AFTER_BUSY_S if isinstance(exc.__cause__, PoolTimeout) else RETRY_AFTER_DOWN_S


def unavailable_response(request: HttpRequest, exc: BaseException, seconds: int) -> HttpResponse:
    busy = seconds == RETRY_AFTER_BUSY_S
    detail = (
        "the server is busy (every database connection is in use); nothing was written, retry"
        if busy
        else "the database is unavailable; nothing was written, retry"
    )
    cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    log.warning("503 for %s %s: %s (%s)", request.method, request.path, detail, cause)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail, "retry_after_s": seconds}, status=503)
    else:
        response = HttpResponse(
            f"<!doctype html><title>tirlab: try again shortly</title><h1>503</h1><p>{detail.capitalize()} "
            f"in {seconds} s.</p>",
            status=503,
        )
    response["Retry-After"] = str(seconds)
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        seconds = retry_after_s(exception)
        return None if seconds is None else unavailable_response(request, exception, seconds)


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 handler: a database that cannot serve now is a 503, whatever raised it."""
    exc = sys.exc_info()[1]
    seconds = retry_after_s(exc)
    if seconds is not None and exc is not None:
        return unavailable_response(request, exc, seconds)
    return defaults.server_error(request)
