"""Per-credential rate limits, shared by every web process through Redis.

Each credential — a run's ingest token, a personal API token, a browser session's user — has a
bucket of `burst` requests that refills at `rate` per second (GCRA: the bucket is kept in Redis as
one timestamp, updated by a script, so all web processes agree and no request is counted twice).
A request over the limit is answered 429 before it touches the database, with `Retry-After`; every
answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds until the
bucket is full again), the headers W&B's API answers with. One runaway client is thus slowed down
without starving the others; tirlab's reporter and the MLflow client retry 429 by themselves.

When Redis cannot answer, requests are let through (and a warning is logged): the limiter protects
the database, it must not become one more thing that fails the dashboard.
"""

import hashlib
import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from webapp.core.tokens import bearer_token

log = logging.getLogger(__name__)

# KEYS[1]: the bucket; ARGV: emission interval (µs a request costs), burst. Time is Redis's own, so web
# processes on several machines share one clock. Returns {allowed, remaining, reset µs, retry µs}.
_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allow_at = tat - (burst - 1) * interval
if now < allow_at then
  return {0, 0, tat - now, allow_at - now}
end
tat = tat + interval
redis.call('SET', KEYS[1], tat, 'PX', math.ceil((tat - now) / 1000) + 1000)
return {1, math.floor((now + burst * interval - tat) / interval), tat - now, 0}
"""


@dataclass(frozen=True)
class Limit:
    rate: float  # requests per second, sustained
    burst: int  # requests at once, after a quiet spell

    @property
    def enabled(self) -> bool:
        return self.rate > 0


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_s: float  # until the bucket is full again
    retry_after_s: float  # until one more request is allowed; 0 when this one was


class _Redis:
    """One connection pool and the registered script per process (and per REDIS_URL), made on first use."""

    _lock = threading.Lock()
    _url: str | None = None
    _script: Any = None
    _warned_at = -math.inf

    @classmethod
    def script(cls) -> Any:
        with cls._lock:
            if cls._url != settings.REDIS_URL:
                pool = redis.BlockingConnectionPool.from_url(
                    settings.REDIS_URL, max_connections=16, timeout=0.5, socket_timeout=0.5, socket_connect_timeout=0.5
                )
                cls._script = redis.Redis(connection_pool=pool).register_script(_GCRA)
                cls._url = settings.REDIS_URL
            return cls._script

    @classmethod
    def warn(cls, exc: Exception) -> None:
        now = time.monotonic()
        if now - cls._warned_at > 60:  # once a minute, not once a request
            cls._warned_at = now
            log.warning("rate limits are off while Redis does not answer: %s", exc)


def consume(key: str, limit: Limit) -> Decision | None:
    """Counts one request against `key`'s bucket; None when unlimited or when Redis cannot answer."""
    if not limit.enabled:
        return None
    interval_us = max(1, round(1_000_000 / limit.rate))
    try:
        allowed, remaining, reset_us, retry_us = _Redis.script()(
            keys=[f"{settings.REDIS_PREFIX}:ratelimit:{key}"], args=[interval_us, limit.burst]
        )
    except redis.RedisError as exc:
        _Redis.warn(exc)
        return None
    return Decision(bool(allowed), limit.burst, int(remaining), reset_us / 1e6, retry_us / 1e6)


class _Throttle(BaseThrottle, ABC):
    """A DRF throttle over `consume`; the decision is kept on the request for RateLimitHeadersMiddleware."""

    limit_setting: str  # the settings name of its Limit

    @abstractmethod
    def key(self, request: Request) -> str | None:
        """The bucket of the request's credential; None for none (an anonymous request is refused anyway)."""

    def allow_request(self, request: Request, view: object) -> bool:
        key = self.key(request)
        decision = consume(key, Limit(*getattr(settings, self.limit_setting))) if key is not None else None
        request._request.rate_limit = decision  # the Django request, which the middleware sees
        self.decision = decision
        return decision is None or decision.allowed

    def wait(self) -> float | None:
        return self.decision.retry_after_s if self.decision is not None else None


class ApiThrottle(_Throttle):
    """The REST API: one bucket per personal API token, or per user for a browser session."""

    limit_setting = "API_RATE_LIMIT"

    def key(self, request: Request) -> str | None:
        token = getattr(request, "auth", None)
        if token is not None and getattr(token, "pk", None) is not None:
            return f"api:token:{token.pk}"
        user = getattr(request, "user", None)
        return f"api:user:{user.pk}" if user is not None and user.is_authenticated else None


class IngestThrottle(_Throttle):
    """A trainer's reports: one bucket per run token (hashed here, so a bad token never reaches the database)."""

    limit_setting = "INGEST_RATE_LIMIT"

    def key(self, request: Request) -> str | None:
        token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        return None if token is None else "ingest:" + hashlib.sha256(token.encode()).hexdigest()[:32]


class RateLimitHeadersMiddleware:
    """`RateLimit-*` on every answer a limit was applied to, and a `Retry-After` in whole seconds on a 429."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        decision: Decision | None = getattr(request, "rate_limit", None)
        if decision is not None:
            response["RateLimit-Limit"] = str(decision.limit)
            response["RateLimit-Remaining"] = str(decision.remaining)
            response["RateLimit-Reset"] = str(math.ceil(decision.reset_s))
            if not decision.allowed:
                response["Retry-After"] = str(max(1, math.ceil(decision.retry_after_s)))
        return response
