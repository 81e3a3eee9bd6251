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

log = logging.getLogger(__name__)

# A pool that timed out cannot tell a busy database from one that is down (it keeps trying to connect
# meanwhile), so one wait for both: enough for a few requests to drain, short against a restart.
RETRY_AFTER_S = 2


def retry_after_s(exc: BaseException | None) -> int | None:
    """Seconds a client should wait when `exc` means the database cannot serve it now; None otherwise."""
    return RETRY_AFTER_S if isinstance(exc, OperationalError | InterfaceError) else None


def unavailable_response(request: HttpRequest, exc: BaseException, seconds: int) -> HttpResponse:
    detail = "the database is busy or unreachable; nothing was written, send it again"
    cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    log.warning("503 for %s %s: %s (%s)", request.method, request.path, detail, cause)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail, "retry_after_s": seconds}, status=503)
    else:
        response = HttpResponse(
            f"<!doctype html><title>tirlab: try again shortly</title><h1>503</h1><p>{detail.capitalize()} "
            f"in {seconds} s (try again).</p>",
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
