import redis
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views import defaults
from django.views.decorators.http import require_GET


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The landing page is the runs page."""
    return redirect("runs")


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # noqa: BLE001 — a health check reports every failure, whatever it is
        checks["database"] = f"error: {exc}"
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2).ping()
        checks["redis"] = "ok"
    except Exception as exc:  # noqa: BLE001
        checks["redis"] = f"error: {exc}"
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "error", **checks}, status=200 if healthy else 503)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A path under /api/ that matches no route answers JSON, like every other API error."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
