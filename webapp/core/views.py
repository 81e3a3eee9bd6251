import redis
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views import defaults
from django.views.decorators.http import require_GET

from webapp.accounts.models import ApiToken
from webapp.accounts.services import api_token_create, api_token_revoke


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The landing page is the runs page."""
    return redirect("runs")


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    new_secret = None
    if request.method == "POST":
        if "revoke" in request.POST:
            token = get_object_or_404(ApiToken, pk=request.POST["revoke"], user=request.user)
            api_token_revoke(token=token)
            messages.info(request, f"Token {token.name} revoked.")
            return redirect("tokens")
        name = request.POST.get("name", "").strip()
        if name:
            _, new_secret = api_token_create(user=request.user, name=name)
        else:
            messages.error(request, "Give the token a name.")
    return render(
        request,
        "tokens.html",
        {"tokens": ApiToken.objects.filter(user=request.user), "new_secret": new_secret},
    )


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
