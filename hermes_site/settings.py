"""Django settings. Everything an operator tunes comes from the one config file (see config.py)."""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from core.config import ConfigError, config_path, load_config

BASE_DIR = Path(__file__).resolve().parent.parent
TESTING = "pytest" in sys.modules

try:
    # Tests start from the documented defaults, whatever hermes.yaml a developer keeps locally;
    # they change the configuration per test through settings.HERMES.
    HERMES_CONFIG_PATH = None if TESTING else config_path(BASE_DIR)
    HERMES = load_config(HERMES_CONFIG_PATH)
except ConfigError as exc:
    # Stop start-up with the schema's message, not a traceback through settings.
    raise ImproperlyConfigured(str(exc)) from None

_server = HERMES.server
DATA_DIR = Path(_server.data_dir)
if not DATA_DIR.is_absolute():
    DATA_DIR = BASE_DIR / DATA_DIR


def _secret_key() -> str:
    """The configured key, else one generated once and kept in the data directory."""
    if _server.secret_key:
        return _server.secret_key
    if TESTING:
        return "test-only-secret-key-not-for-production-" + "x" * 20
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    key_file = DATA_DIR / "secret_key"
    try:
        # Created private and exclusively: never readable by others, and when two processes start
        # at once for the first time, one writes and both read the same key.
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_urlsafe(50))
    for _ in range(50):
        key = key_file.read_text(encoding="ascii").strip()
        if key:
            return key
        time.sleep(0.02)  # the other process is between create and write
    raise ImproperlyConfigured(f"{key_file} is empty; delete it to generate a new key.")


SECRET_KEY = _secret_key()
DEBUG = _server.debug
ALLOWED_HOSTS = list(_server.allowed_hosts) + (["testserver"] if TESTING else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # thousands separators in the console (intcomma)
    "ninja",
    "django_q",
    "sessions_app",
    "compression",
    "agent",
    "search",
    "hermes_import",
    "hermes_site",  # the site's own commands: serve (web + worker), worker
]

MIDDLEWARE = [
    # First, so it times and ids everything below, and sees every answer (request ids, metrics).
    "core.middleware.RequestObserver",
    # Just inside it: an API error Django or django-ninja wrote in HTML or text becomes JSON.
    "core.middleware.ApiErrorsAsJson",
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.ContentSecurityPolicy",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Sessions, users, messages and CSRF: Django's own, skipped on the API, MCP, health checks
    # and metrics, which use none of them (core.pages_only).
    "core.pages_only.SessionForPages",
    "core.middleware.ApiBodyLimit",
    "django.middleware.common.CommonMiddleware",
    "core.pages_only.CsrfForPages",
    "core.pages_only.AuthenticationForPages",
    "core.pages_only.MessagesForPages",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, so it sees the exceptions of every view (process_exception runs bottom-up).
    "core.middleware.UnexpectedErrors",
]

ROOT_URLCONF = "hermes_site.urls"
WSGI_APPLICATION = "hermes_site.wsgi.application"

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

# SQLite is the embedded default, set up for concurrent web + worker processes: WAL so readers
# never block the writer, a busy timeout instead of instant "database is locked", and IMMEDIATE
# transactions so a writer takes the lock at BEGIN instead of failing on a lock upgrade midway.
# PostgreSQL (server.database_url, or $HERMES_DATABASE_URL) is the scale-out path.
DATABASE_URL = os.environ.get("HERMES_DATABASE_URL") or _server.database_url
_sqlite_path = DATA_DIR / "hermes.sqlite3"
if DATABASE_URL.lower().startswith("sqlite"):
    try:
        _sqlite_name = str(dj_database_url.parse(DATABASE_URL)["NAME"])
    except ValueError as exc:
        raise ImproperlyConfigured(f"server.database_url: {exc}") from None
    if not _sqlite_name or _sqlite_name == ":memory:":
        raise ImproperlyConfigured(
            "server.database_url: a SQLite URL needs a file (sqlite:////var/lib/hermes/db.sqlite3);"
            " an in-memory database would lose everything when the process ends"
        )
    _sqlite_path = BASE_DIR / _sqlite_name  # a relative file is in the project, like data_dir
    DATABASE_URL = ""
if DATABASE_URL:
    try:
        DATABASES = {
            "default": dj_database_url.parse(
                DATABASE_URL,
                conn_max_age=0 if TESTING else _server.db_conn_max_age,
                conn_health_checks=True,
            )
        }
    except ValueError as exc:
        raise ImproperlyConfigured(f"server.database_url: {exc}") from None
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            "server.database_url: only PostgreSQL (postgres://) and SQLite (sqlite:///) are "
            "supported"
        )
    # Django's backend, its health check reading the socket instead of a round trip.
    DATABASES["default"]["ENGINE"] = "core.postgresql_backend"
else:
    DATABASES = {
        "default": {
            # Django's backend with writers queued before BEGIN IMMEDIATE (see its gate module).
            "ENGINE": "core.sqlite_backend",
            "NAME": _sqlite_path,  # type: ignore[typeddict-item]  # Django takes a Path
            # Kept between requests, as PostgreSQL's are: opening one ran the PRAGMAs below and
            # started with an empty page cache, a quarter of a search's time in a web process.
            "CONN_MAX_AGE": 0 if TESTING else _server.db_conn_max_age,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                "timeout": _server.sqlite_busy_timeout_seconds,
                "transaction_mode": "IMMEDIATE",
                "init_command": (
                    "PRAGMA journal_mode=WAL;"
                    "PRAGMA synchronous=NORMAL;"
                    "PRAGMA foreign_keys=ON;"
                    f"PRAGMA busy_timeout={int(_server.sqlite_busy_timeout_seconds * 1000)};"
                    f"PRAGMA cache_size=-{_server.sqlite_cache_mib * 1024};"
                    f"PRAGMA mmap_size={_server.sqlite_mmap_mib * 1024 * 1024};"
                ),
            },
        }
    }
if not TESTING:
    DATA_DIR.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = _server.time_zone
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if TESTING
            else "core.storage.StaticStorage"
        )
    },
}

# The gateway sends batches of messages; each one is capped separately (server.max_message_bytes).
DATA_UPLOAD_MAX_MEMORY_SIZE = _server.max_request_bytes

LOGIN_URL = "admin:login"

# django-q2: the ORM broker for the embedded default (no extra service), Redis when configured
# (server.broker_url or $HERMES_BROKER_URL). A task may run for at most `timeout` seconds and is
# handed to another worker after `retry`, so retry must exceed timeout: a compression run may make
# max_attempts model calls, each bounded by the total ceiling.
_attempts_seconds = HERMES.compression.max_attempts * (
    int(HERMES.compression.context_total_ceiling_seconds) + 120
)
Q_TIMEOUT = _server.task_timeout_seconds or _attempts_seconds + 60
Q_RETRY = _server.task_retry_seconds or max(_attempts_seconds + 180, Q_TIMEOUT + 120)
if Q_RETRY <= Q_TIMEOUT:
    raise ImproperlyConfigured(
        f"server.task_retry_seconds ({Q_RETRY}) must exceed the task timeout ({Q_TIMEOUT}), or a "
        "task still running would be started again by another worker."
    )
BROKER_URL = os.environ.get("HERMES_BROKER_URL") or _server.broker_url
Q_CLUSTER = {
    "name": "hermes",
    **({"redis": BROKER_URL} if BROKER_URL else {"orm": "default"}),
    "workers": _server.q_workers,
    "timeout": Q_TIMEOUT,
    "retry": Q_RETRY,
    "max_attempts": 2,
    "poll": 1,
    "catch_up": False,
    "label": "Background tasks",
    # Under pytest tasks run in-process at enqueue time; tests that need a real worker start one.
    "sync": TESTING,
}

# server.log_format: text (the message alone, as before) or json (core.logs); either way
# every record carries the request id of the request (or queued task) it was logged in.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "core.logs.RequestIdFilter"},
        "without_traceback": {"()": "core.logs.WithoutTraceback"},
    },
    "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            # A bad Host header and Django's other "suspicious" requests: one line, no traceback.
            "filters": ["request_id", "without_traceback"],
            **({"formatter": "json"} if _server.log_format == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # The openai SDK's HTTP client logs every request at INFO.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}
