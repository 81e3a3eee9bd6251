"""Who an MLflow request comes from, and whether they may send another one now.

The client sends `Authorization: Bearer <token>` when MLFLOW_TRACKING_TOKEN is set (a tirlab API token,
tlp_…, or in a verl run tirlab launched, that run's own token, tlr_…, good for that run only) and HTTP
Basic when MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD are (a tirlab user's login). Nothing else
is taken: no session cookie, so no page can make a browser write here.

Checking a password costs a deliberate ~0.3 s of hashing, and a training loop logs every few seconds,
so a username/password that checked out is remembered for PASSWORD_CACHE_S, keyed by a hash of both
and tied to the user's stored password hash: a changed password or a deactivated user is refused at
once. Each credential has its own rate-limit bucket (webapp.core.ratelimit, the REST API's limits).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.http import HttpRequest

from webapp.accounts.models import API_TOKEN_PREFIX
from webapp.accounts.services import api_token_user
from webapp.core.ratelimit import Limit, consume
from webapp.core.tokens import bearer_token, hash_secret
from webapp.runs.models import ACTIVE_STATUSES, RUN_TOKEN_PREFIX, Run
from webapp.runs.verl_runs import is_verl_run
from webapp.tracking.errors import MlflowError

PASSWORD_CACHE_S = 300
_WWW_AUTHENTICATE = {"WWW-Authenticate": 'Basic realm="tirlab MLflow API"'}


@dataclass(frozen=True)
class Caller:
    user: object  # the Django user
    bucket: str  # the rate-limit bucket of the credential
    # A run token's caller: verl's tracking in a run tirlab launched, which may read and write that run only.
    run_id: int | None = None


class _PasswordCache:
    _lock = threading.Lock()
    _entries: dict[str, tuple[int, str, float]] = {}  # key -> (user id, stored password hash, until)

    @classmethod
    def get(cls, key: str):
        with cls._lock:
            entry = cls._entries.get(key)
        if entry is None or entry[2] < time.monotonic():
            return None
        user = get_user_model().objects.filter(pk=entry[0], is_active=True).first()
        return user if user is not None and user.password == entry[1] else None

    @classmethod
    def put(cls, key: str, user) -> None:
        with cls._lock:
            if len(cls._entries) > 10_000:
                cls._entries.clear()
            cls._entries[key] = (user.pk, user.password, time.monotonic() + PASSWORD_CACHE_S)


def _unauthenticated(message: str) -> MlflowError:
    return MlflowError("UNAUTHENTICATED", message, headers=_WWW_AUTHENTICATE)


def _basic_user(encoded: str):
    try:
        username, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise _unauthenticated("Malformed Basic credentials.") from None
    key = hashlib.sha256(f"{username}\0{password}".encode()).hexdigest()
    user = _PasswordCache.get(key)
    if user is None:
        user = authenticate(username=username, password=password)
        if user is None or not user.is_active:
            raise _unauthenticated("Invalid username or password (MLFLOW_TRACKING_USERNAME / PASSWORD).")
        _PasswordCache.put(key, user)
    return user


def _run_token_caller(secret: str) -> Caller:
    """The run token tirlab gave a verl run it launched (MLFLOW_TRACKING_TOKEN in its job): it stands for
    the run's owner, for that run alone, while the run is active."""
    run = Run.objects.select_related("owner").filter(token_hash=hash_secret(secret)).first()
    if run is None or not is_verl_run(run) or run.status not in ACTIVE_STATUSES:
        raise _unauthenticated("Invalid run token, or its run has ended (MLFLOW_TRACKING_TOKEN).")
    return Caller(run.owner, f"mlflow:run:{run.pk}", run_id=run.pk)


def authenticated_caller(request: HttpRequest) -> Caller:
    """The caller of an MLflow request; raises UNAUTHENTICATED (401) without valid credentials."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    secret = bearer_token(header)
    if secret is not None:
        if secret.startswith(f"{RUN_TOKEN_PREFIX}_"):
            return _run_token_caller(secret)
        if not secret.startswith(f"{API_TOKEN_PREFIX}_"):
            raise _unauthenticated(f"Not a tirlab API token: MLFLOW_TRACKING_TOKEN takes a {API_TOKEN_PREFIX}_… token.")
        found = api_token_user(secret=secret)
        if found is None:
            raise _unauthenticated("Invalid or revoked API token (MLFLOW_TRACKING_TOKEN).")
        user, token = found
        return Caller(user, f"mlflow:token:{token.pk}")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() == "basic" and encoded.strip():
        user = _basic_user(encoded.strip())
        return Caller(user, f"mlflow:user:{user.pk}")
    raise _unauthenticated(
        "Authentication required: set MLFLOW_TRACKING_TOKEN to a tirlab API token, or "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD to your tirlab login."
    )


def check_rate(caller: Caller) -> None:
    """Counts the request against the caller's bucket; REQUEST_LIMIT_EXCEEDED (429, Retry-After) when over."""
    decision = consume(caller.bucket, Limit(*settings.API_RATE_LIMIT))
    if decision is not None and not decision.allowed:
        raise MlflowError(
            "REQUEST_LIMIT_EXCEEDED",
            "Too many requests; retry after the time Retry-After gives.",
            headers={"Retry-After": str(max(1, math.ceil(decision.retry_after_s)))},
        )
