# ruff: noqa: RUF001
# RUF001 is disabled for this file on purpose: the demo text uses real Chinese typography
# (fullwidth commas, colons, parentheses), which the search tokenizer has to cope with.
"""Demo data for Hermes Memory.

``build_demo_conversation()`` returns one long (400-600 messages), deterministic conversation
between a user and a coding agent who build and debug a small Django shop ("Crumb & Co", an
online bakery) over two weeks. It is assembled from hand-written scenario templates (models,
tests, migrations, nginx, logs, Redis, deploys, ...) that are replayed with different files,
numbers and errors, in English, Chinese and a little Japanese and Korean, with OpenAI-format
tool calls whose results are sometimes several kilobytes long.

``build_small_conversation()`` returns a short second session on another topic (a nightly
Postgres backup script) so that search across sessions has something to find.

``DEMO_NEEDLES`` lists memorable strings that appear early in the long conversation (so that
after compression they only live in archived rows) and that a demo user can search for.

Pure standard library, no Django imports, no clocks, no unseeded randomness.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]
ToolSpec = tuple[str, dict[str, Any], str]

SEED = 4471
MODEL = "gpt-4o"

DEMO_NEEDLES: list[str] = [
    "ERR_CONN_RESET_4471",
    "/etc/nginx/sites-enabled/hermes.conf",
    "ops-team@example.com",
    "feature-flag-rollout",
    'NOT "AND" (x OR y)',
    "100%",
    "缓存",
    "用Django写代码",
    "本番環境",
    "배포",
]

SYSTEM_PROMPT = (
    "You are Hermes, a senior software engineer working as a coding agent inside the user's "
    "project. The project is 'Crumb & Co', a small online bakery shop written in Django 5 "
    "(Python 3.11) with PostgreSQL 15, Redis 7 for cache and sessions, Celery for background "
    "jobs, gunicorn behind nginx on a VM called 'hermes'. The code lives in /srv/crumb.\n\n"
    "Tools: read_file(path), write_file(path, content), run_shell(command, cwd), "
    "search_logs(path, pattern, since), run_tests(target, args). Prefer reading code before "
    "changing it, keep changes small, run the tests after every change and explain what you "
    "did in plain words. Answer in the language the user writes in (English or Chinese); "
    "translate Japanese or Korean messages from teammates when asked. Never print secrets."
)


# --------------------------------------------------------------------------------------------
# Builder
# --------------------------------------------------------------------------------------------


class _Builder:
    """Accumulates messages and hands out unique, deterministic tool-call ids."""

    def __init__(self, seed: int, id_prefix: str) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - fixed seed, demo data only
        self.messages: list[Message] = []
        self.day = 0
        self._id_prefix = id_prefix
        self._seq = 0
        self._pending_day: int | None = None

    def new_day(self, day: int) -> None:
        self.day = day
        self._pending_day = day

    def user(self, text: str) -> None:
        if self._pending_day is not None:
            text = f"Day {self._pending_day}: {text}"
            self._pending_day = None
        self.messages.append({"role": "user", "content": text})

    def assistant(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def _new_id(self) -> str:
        self._seq += 1
        digest = hashlib.sha256(f"{self._id_prefix}:{self._seq}".encode()).hexdigest()
        return f"call_{digest[:24]}"

    def call(self, *calls: ToolSpec, text: str | None = None) -> None:
        """One assistant message with len(calls) parallel tool calls, then one result each."""
        tool_calls: list[dict[str, Any]] = []
        results: list[Message] = []
        for name, args, result in calls:
            call_id = self._new_id()
            tool_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                }
            )
            results.append(
                {"role": "tool", "tool_call_id": call_id, "name": name, "content": result}
            )
        self.messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
        self.messages.extend(results)


def _pick(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def _date(day: int, sep: str = "-") -> str:
    return f"2024{sep}03{sep}{day + 3:02d}"


def _clock(seconds: int) -> str:
    return f"{seconds // 3600 % 24:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _shell(command: str, cwd: str = "/srv/crumb") -> dict[str, Any]:
    return {"command": command, "cwd": cwd}


# --------------------------------------------------------------------------------------------
# Generators for large, realistic tool output
# --------------------------------------------------------------------------------------------

_OK_PATHS = [
    "/",
    "/catalog/",
    "/catalog/?page=2",
    "/catalog/?page=3",
    "/catalog/bread/sourdough-loaf/",
    "/catalog/pastry/almond-croissant/",
    "/catalog/cakes/black-forest-cake/",
    "/cart/",
    "/cart/add/42/",
    "/accounts/login/",
    "/accounts/profile/",
    "/orders/history/",
    "/api/stock/",
    "/api/delivery-slots/?date=2024-03-12",
    "/search/?q=rye+bread",
]

_USER_AGENTS = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3 like Mac OS X)",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/122.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_3) Safari/605.1.15",
    "curl/8.5.0",
    "python-httpx/0.27.0",
]


# SQL as it appears in log output (Django logs the statement and its parameters separately).
_SQL_ORDER_HISTORY = (
    '    SQL: SELECT "orders_order"."id", "orders_order"."status" FROM "orders_order" '
    'WHERE "orders_order"."customer_id" = %s ORDER BY "created_at" DESC'
)
_SQL_N_PLUS_ONE = [
    'SELECT "catalog_category"."id", "catalog_category"."name" FROM "catalog_category" '
    'WHERE "catalog_category"."id" = ?',
    'SELECT COUNT(*) AS "__count" FROM "catalog_review" WHERE "catalog_review"."product_id" = ?',
    'SELECT AVG("catalog_review"."rating") AS "avg" FROM "catalog_review" '
    'WHERE "catalog_review"."product_id" = ?',
    'SELECT "catalog_supplier"."id", "catalog_supplier"."name" FROM "catalog_supplier" '
    'WHERE "catalog_supplier"."id" = ?',
]


def _incident_lines(kind: str, ts: str, rng: random.Random) -> list[str]:
    uid = rng.randint(1000, 9999)
    pid = rng.randint(21000, 21999)
    if kind == "redis_timeout":
        return [
            f"{ts} ERROR [django.request] pid={pid} Internal Server Error: /cart/",
            "Traceback (most recent call last):",
            '  File "/srv/crumb/orders/cart.py", line 58, in get_cart',
            '    raw = cache.get(f"cart:{request.user.pk}")',
            '  File "/srv/crumb/.venv/lib/python3.11/site-packages/redis/connection.py", '
            "line 515, in read_response",
            "redis.exceptions.TimeoutError: Timeout reading from socket",
        ]
    if kind == "conn_reset":
        return [
            f"{ts} ERROR [crumb.cache] pid={pid} CacheBackendError ERR_CONN_RESET_4471: "
            f"Connection reset by peer (redis 10.0.3.12:6379) key=cart:{uid} attempt=1/1",
        ]
    if kind == "db_timeout":
        return [
            f"{ts} ERROR [django.db.backends] pid={pid} (30.001) canceling statement due to "
            "statement timeout",
            _SQL_ORDER_HISTORY,
            f"    args=({uid},)",
            "psycopg.errors.QueryCanceled: canceling statement due to statement timeout",
        ]
    if kind == "worker_timeout":
        return [
            f"{ts} [CRITICAL] gunicorn.error WORKER TIMEOUT (pid:{pid})",
            f"{ts} [INFO] gunicorn.error Booting worker with pid: {pid + 7}",
        ]
    if kind == "slow":
        ms = rng.randint(1200, 4800)
        queries = rng.randint(90, 260)
        return [
            f"{ts} WARNING [crumb.perf] pid={pid} slow request GET /catalog/ took {ms}ms "
            f"(queries={queries}, cache hit ratio {rng.randint(40, 70)}.{rng.randint(0, 9)}%)",
        ]
    if kind == "smtp":
        return [
            f"{ts} ERROR [crumb.notifications] pid={pid} could not send alert to "
            "ops-team@example.com: SMTPServerDisconnected('Connection unexpectedly closed')",
        ]
    if kind == "session":
        return [
            f"{ts} WARNING [django.security.SessionInterrupted] pid={pid} The request's session "
            f"was deleted before the request completed. user_id={uid} path=/cart/checkout/",
        ]
    return [f"{ts} ERROR [crumb] pid={pid} unexpected incident kind {kind!r}"]


def _app_log(
    rng: random.Random, day: int, n: int, incidents: list[str], start_hour: int = 9
) -> str:
    lines: list[str] = []
    t = start_hour * 3600 + rng.randint(0, 900)
    for _ in range(n):
        t += rng.randint(1, 45)
        ts = f"{_date(day)} {_clock(t)},{rng.randint(0, 999):03d}"
        if incidents and rng.random() < 0.22:
            lines.extend(_incident_lines(rng.choice(incidents), ts, rng))
            continue
        path = rng.choice(_OK_PATHS)
        method = "POST" if path.startswith("/cart/add") else "GET"
        status = rng.choice([200, 200, 200, 200, 302, 304])
        size = rng.randint(412, 48210)
        ms = rng.randint(8, 380)
        lines.append(
            f'{ts} INFO [django.server] pid={rng.randint(21000, 21999)} "{method} {path} '
            f'HTTP/1.1" {status} {size} {ms}ms'
        )
    return "\n".join(lines)


def _nginx_error_log(rng: random.Random, day: int, n: int, kind: str) -> str:
    lines: list[str] = []
    t = 10 * 3600 + rng.randint(0, 1800)
    for _ in range(n):
        t += rng.randint(5, 240)
        conn = rng.randint(4000, 9999)
        client = f"203.0.113.{rng.randint(2, 250)}"
        path = rng.choice(["/orders/checkout/", "/cart/", "/catalog/", "/api/stock/"])
        method = "POST" if path == "/orders/checkout/" else "GET"
        if kind == "timeout":
            msg = (
                "upstream timed out (110: Connection timed out) while reading response header "
                "from upstream"
            )
        elif kind == "closed":
            msg = "upstream prematurely closed connection while reading response header"
        else:
            msg = "connect() failed (111: Connection refused) while connecting to upstream"
        lines.append(
            f"{_date(day, '/')} {_clock(t)} [error] 1187#1187: *{conn} {msg}, client: {client}, "
            f'server: hermes.example.com, request: "{method} {path} HTTP/1.1", upstream: '
            f'"http://127.0.0.1:8000{path}", host: "hermes.example.com"'
        )
    return "\n".join(lines)


def _cap(text: str, limit: int = 7800) -> str:
    """Trim whole lines so that a tool result stays below ``limit`` characters (about 8 KB)."""
    if len(text) <= limit:
        return text
    kept: list[str] = []
    size = 0
    lines = text.splitlines()
    for line in lines:
        if size + len(line) + 1 > limit - 60:
            break
        kept.append(line)
        size += len(line) + 1
    kept.append(f"... [{len(lines) - len(kept)} more lines truncated]")
    return "\n".join(kept)


def _access_log(rng: random.Random, day: int, n: int, error_status: int | None) -> str:
    months = f"{day + 3:02d}/Mar/2024"
    lines: list[str] = []
    t = 10 * 3600 + rng.randint(0, 3600)
    for _ in range(n):
        t += rng.randint(1, 30)
        path = rng.choice([*_OK_PATHS, "/static/css/site.css", "/static/js/cart.js"])
        status = rng.choice([200, 200, 200, 304, 302])
        if error_status and rng.random() < 0.3:
            status = error_status
        method = "POST" if path.startswith("/cart/add") else "GET"
        size = 0 if status in (304, 502) else rng.randint(300, 52000)
        rt = rng.randint(2, 900) / 1000
        upstream = "-" if path.startswith("/static/") else f"{max(rt - 0.002, 0):.3f}"
        lines.append(
            f"203.0.113.{rng.randint(2, 250)} - - [{months}:{_clock(t)} +0000] "
            f'"{method} {path} HTTP/2.0" {status} {size} "https://hermes.example.com/" '
            f'"{rng.choice(_USER_AGENTS)}" rt={rt:.3f} urt={upstream}'
        )
    return "\n".join(lines)


def _gunicorn_tail(rng: random.Random, day: int, workers: int, tag: str) -> str:
    t = 14 * 3600 + rng.randint(0, 7200)
    ts = f"[{_date(day)} {_clock(t)} +0000]"
    lines = [
        f"{ts} [21001] [INFO] Handling signal: term",
        *(f"{ts} [{21002 + i}] [INFO] Worker exiting (pid: {21002 + i})" for i in range(workers)),
        f"{ts} [21001] [INFO] Shutting down: Master",
        f"{ts} [21001] [INFO] Starting gunicorn 21.2.0",
        f"{ts} [21001] [INFO] Listening at: http://127.0.0.1:8000 (21001)",
        f"{ts} [21001] [INFO] Using worker: gthread",
        *(
            f"{ts} [{21004 + i}] [INFO] Booting worker with pid: {21004 + i}"
            for i in range(workers)
        ),
        f"{ts} [21004] [INFO] crumb {tag} ready (settings=crumb.settings.prod)",
    ]
    return "\n".join(lines) + "\n" + _app_log(rng, day, 44, [], start_hour=t // 3600)


def _redis_slowlog(rng: random.Random, n: int) -> str:
    commands = [
        ("SET", "crumb:1:views.decorators.cache.cache_page.catalog.GET.{h}", "...(2183415 bytes)"),
        ("GET", "crumb:1:views.decorators.cache.cache_page.catalog.GET.{h}", ""),
        ("KEYS", "crumb:1:cart:*", ""),
        ("DEL", "crumb:1:template.cache.product_card.{h}", ""),
        ("MGET", "crumb:1:product:{h}", "... (24 more arguments)"),
    ]
    out: list[str] = []
    entry_id = 9000 + rng.randint(0, 900)
    for k in range(n):
        cmd, key, extra = rng.choice(commands)
        key = key.replace("{h}", hashlib.md5(str(k).encode(), usedforsecurity=False).hexdigest())
        out.extend(
            [
                f"{k * 6 + 1}) 1) (integer) {entry_id - k}",
                f"   2) (integer) {1710230000 + rng.randint(0, 80000)}",
                f"   3) (integer) {rng.randint(11000, 480000)}",
                f'   4) 1) "{cmd}"',
                f'      2) "{key}"' + (f'\n      3) "{extra}"' if extra else ""),
                f'   5) "10.0.3.{rng.randint(20, 29)}:{rng.randint(40000, 60000)}"',
                '   6) ""',
            ]
        )
    return "\n".join(out)


def _search_result(path: str, pattern: str, body: str, rng: random.Random) -> str:
    rows = body.splitlines()
    line_no = rng.randint(12000, 48000)
    numbered: list[str] = []
    for row in rows:
        line_no += rng.randint(1, 90)
        numbered.append(f"{line_no}: {row}")
    header = f"search_logs: file={path} pattern={pattern!r} matches={len(rows)}"
    return _cap(header + "\n" + "\n".join(numbered))


_TEST_MODULES: list[tuple[str, int]] = [
    ("accounts/tests/test_login.py", 9),
    ("accounts/tests/test_signup.py", 7),
    ("catalog/tests/test_models.py", 14),
    ("catalog/tests/test_views.py", 11),
    ("catalog/tests/test_search.py", 8),
    ("orders/tests/test_cart.py", 12),
    ("orders/tests/test_checkout.py", 10),
    ("orders/tests/test_coupons.py", 6),
    ("notifications/tests/test_emails.py", 5),
    ("flags/tests/test_rollout.py", 7),
]

_COVERAGE_FILES: list[tuple[str, int]] = [
    ("accounts/forms.py", 41),
    ("accounts/views.py", 63),
    ("catalog/admin.py", 38),
    ("catalog/models.py", 92),
    ("catalog/search.py", 34),
    ("catalog/views.py", 87),
    ("crumb/settings/base.py", 118),
    ("crumb/urls.py", 17),
    ("flags/rollout.py", 29),
    ("notifications/tasks.py", 52),
    ("orders/cart.py", 76),
    ("orders/models.py", 104),
    ("orders/services.py", 88),
    ("orders/views.py", 95),
]


def _pytest_output(
    rng: random.Random,
    growth: int,
    failures: list[tuple[str, str, str]] | None = None,
    with_coverage: bool = True,
) -> str:
    """failures: (module, test_name, failure_body)."""
    failures = failures or []
    failing_modules = {f[0] for f in failures}
    modules = [(m, c + growth // 2) for m, c in _TEST_MODULES]
    total = sum(c for _, c in modules)
    out = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.1.1, pluggy-1.4.0",
        "django: version: 5.0.3, settings: crumb.settings.test (from ini)",
        "rootdir: /srv/crumb",
        "configfile: pytest.ini",
        "plugins: django-4.8.0, cov-4.1.0, xdist-3.5.0",
        f"collected {total} items",
        "",
    ]
    done = 0
    for module, count in modules:
        dots = ["."] * count
        if module in failing_modules:
            dots[rng.randint(0, count - 1)] = "F"
        done += count
        pct = done * 100 // total
        out.append(f"{module} {''.join(dots):<24} [{pct:3d}%]")
    out.append("")
    if failures:
        out.append(
            "=================================== FAILURES ==================================="
        )
        for module, name, body in failures:
            out.append(f"_{'_' * 20} {name} {'_' * 20}")
            out.append("")
            out.extend(body.splitlines())
            out.append(f"{module}:{rng.randint(20, 140)}: AssertionError")
            out.append(
                "------------------------------ Captured log call -------------------------------"
            )
            out.append("INFO     crumb.orders:services.py:31 checkout started cart_items=2 user=17")
            out.append("DEBUG    crumb.cache:cache.py:44 cache miss key=cart:17")
            out.append("INFO     crumb.flags:rollout.py:22 flag new_checkout bucket=61 percent=25")
            out.append("WARNING  django.request:log.py:241 Bad Request: /orders/checkout/")
        out.append("")
    if with_coverage:
        out.append("---------- coverage: platform linux, python 3.11.7-final-0 -----------")
        out.append(f"{'Name':<32}{'Stmts':>7}{'Miss':>7}{'Cover':>8}   Missing")
        out.append("-" * 80)
        total_stmts = 0
        total_miss = 0
        for name, stmts in _COVERAGE_FILES:
            stmts += growth
            miss = rng.randint(0, max(1, stmts // 6))
            total_stmts += stmts
            total_miss += miss
            cover = (stmts - miss) * 100 // stmts
            missing: list[str] = []
            line = rng.randint(8, 20)
            left = miss
            while left > 0:
                span = min(left, rng.randint(1, 4))
                missing.append(str(line) if span == 1 else f"{line}-{line + span - 1}")
                left -= span
                line += span + rng.randint(3, 14)
            out.append(f"{name:<32}{stmts:>7}{miss:>7}{cover:>7}%   {', '.join(missing)}")
        out.append("-" * 80)
        cover = (total_stmts - total_miss) * 100 // total_stmts
        out.append(f"{'TOTAL':<32}{total_stmts:>7}{total_miss:>7}{cover:>7}%")
        out.append("")
        out.append(
            "============================= slowest 8 durations =============================="
        )
        slow = sorted(
            ((rng.randint(30, 190) / 100, m, rng.choice(["call", "setup"])) for m, _ in modules),
            reverse=True,
        )[:8]
        for secs_, module, phase in slow:
            out.append(
                f"{secs_:.2f}s {phase:<5} {module}::test_{module.split('_')[-1][:-3]}_"
                f"{rng.choice(['flow', 'edge_cases', 'permissions', 'happy_path'])}"
            )
        out.append("")
    out.append("=============================== warnings summary ===============================")
    out.append(".venv/lib/python3.11/site-packages/celery/app/base.py:1145")
    out.append(
        "  /srv/crumb/.venv/lib/python3.11/site-packages/celery/app/base.py:1145: "
        "DeprecationWarning: The 'CELERY_TASK_ALWAYS_EAGER' setting is deprecated and "
        "scheduled for removal in version 6.0.0. Use the task_always_eager instead"
    )
    out.append("")
    out.append("catalog/tests/test_models.py::test_product_image_thumbnail")
    out.append(
        "  /srv/crumb/.venv/lib/python3.11/site-packages/PIL/Image.py:3186: "
        "DecompressionBombWarning: Image size (95883264 pixels) exceeds limit of 89478485 "
        "pixels, could be decompression bomb DOS attack."
    )
    out.append("")
    out.append("orders/tests/test_checkout.py: 4 warnings")
    out.append(
        "  /srv/crumb/.venv/lib/python3.11/site-packages/django/db/models/fields/__init__.py:"
        "1595: RuntimeWarning: DateTimeField Order.created_at received a naive datetime "
        "(2024-03-01 09:00:00) while time zone support is active."
    )
    out.append("")
    out.append("-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html")
    secs = f"{rng.randint(5, 14)}.{rng.randint(10, 99)}s"
    if failures:
        out.append(
            "=========================== short test summary info ============================"
        )
        for module, name, _ in failures:
            out.append(f"FAILED {module}::{name} - AssertionError")
        out.append(
            f"========== {len(failures)} failed, {total - len(failures)} passed in {secs} =="
        )
    else:
        out.append(
            f"============================== {total} passed in {secs} "
            "=============================="
        )
    return "\n".join(out)


def _project_listing() -> str:
    apps = {
        "accounts": ["forms.py", "urls.py", "views.py", "models.py", "admin.py"],
        "catalog": ["models.py", "views.py", "urls.py", "admin.py", "search.py", "signals.py"],
        "orders": ["models.py", "views.py", "urls.py", "cart.py", "services.py", "admin.py"],
        "notifications": ["tasks.py", "emails.py", "apps.py"],
    }
    rows = [
        ".",
        "./.env.example",
        "./.gitignore",
        "./README.md",
        "./manage.py",
        "./pytest.ini",
        "./requirements.txt",
        "./requirements-dev.txt",
        "./crumb",
        "./crumb/__init__.py",
        "./crumb/asgi.py",
        "./crumb/celery.py",
        "./crumb/settings",
        "./crumb/settings/__init__.py",
        "./crumb/settings/base.py",
        "./crumb/settings/dev.py",
        "./crumb/settings/prod.py",
        "./crumb/settings/test.py",
        "./crumb/urls.py",
        "./crumb/wsgi.py",
        "./deploy",
        "./deploy/gunicorn.conf.py",
        "./deploy/crumb-gunicorn.service",
        "./deploy/crumb-celery.service",
        "./deploy/nginx-hermes.conf",
        "./static",
        "./static/css",
        "./static/css/site.css",
        "./static/img",
        "./static/img/logo.svg",
        "./static/js",
        "./static/js/cart.js",
        "./templates",
        "./templates/base.html",
        "./templates/404.html",
        "./templates/500.html",
        "./templates/catalog",
        "./templates/catalog/product_detail.html",
        "./templates/catalog/product_list.html",
        "./templates/orders",
        "./templates/orders/cart.html",
        "./templates/orders/checkout.html",
    ]
    for app, files in apps.items():
        rows.append(f"./{app}")
        rows.append(f"./{app}/__init__.py")
        rows.append(f"./{app}/apps.py")
        rows.extend(f"./{app}/{f}" for f in files if f != "apps.py")
        rows.append(f"./{app}/migrations")
        rows.append(f"./{app}/migrations/__init__.py")
        rows.append(f"./{app}/migrations/0001_initial.py")
        rows.append(f"./{app}/tests")
        rows.append(f"./{app}/tests/__init__.py")
        rows.append(f"./{app}/tests/factories.py")
    return "\n".join(sorted(rows))


_REQUIREMENTS = """\
Django==5.0.3
psycopg[binary]==3.1.18
django-redis==5.4.0
redis==5.0.3
celery==5.3.6
gunicorn==21.2.0
whitenoise==6.6.0
Pillow==10.2.0
django-environ==0.11.2
sentry-sdk==1.41.0
# dev
pytest==8.1.1
pytest-django==4.8.0
pytest-cov==4.1.0
factory-boy==3.3.0
django-debug-toolbar==4.3.0
"""

_NGINX_CONF = """\
# /etc/nginx/sites-enabled/hermes.conf  (symlink to ../sites-available/hermes.conf)
upstream crumb_app {
    server 127.0.0.1:__PORT__ fail_timeout=0;
}

server {
    listen 80;
    server_name hermes.example.com;
    return 301 https://$host$request_uri;
}

server {
    listen 443 ssl http2;
    server_name hermes.example.com;

    ssl_certificate     /etc/letsencrypt/live/hermes.example.com/fullchain.pem;
    ssl_certificate_key /etc/letsencrypt/live/hermes.example.com/privkey.pem;

    client_max_body_size __BODY__;
    access_log /var/log/nginx/hermes.access.log;
    error_log  /var/log/nginx/hermes.error.log warn;

    location /static/ {
        alias __STATIC__;
        expires 7d;
        add_header Cache-Control "public";
    }

    location /media/ {
        alias /srv/crumb/media/;
    }

    location / {
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
__PROTO__        proxy_read_timeout __READ_TIMEOUT__;
        proxy_pass http://crumb_app;
    }
}
"""


def _nginx_conf(
    port: int = 8000,
    body: str = "10m",
    static: str = "/srv/crumb/staticfiles/",
    proto: bool = True,
    read_timeout: str = "60s",
) -> str:
    proto_line = "        proxy_set_header X-Forwarded-Proto $scheme;\n" if proto else ""
    return (
        _NGINX_CONF.replace("__PORT__", str(port))
        .replace("__BODY__", body)
        .replace("__STATIC__", static)
        .replace("__PROTO__", proto_line)
        .replace("__READ_TIMEOUT__", read_timeout)
    )


_BASE_SETTINGS = """\
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")

SECRET_KEY = env("DJANGO_SECRET_KEY")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "accounts",
    "catalog",
    "orders",
    "notifications",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "crumb.urls"
WSGI_APPLICATION = "crumb.wsgi.application"

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

DATABASES = {"default": env.db("DATABASE_URL", default="postgres:///crumb")}
DATABASES["default"]["CONN_MAX_AGE"] = None

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "Europe/Berlin"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_URL = "media/"
MEDIA_ROOT = BASE_DIR / "media"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "accounts:login"

CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="redis://10.0.3.12:6379/2")
CELERY_TASK_ACKS_LATE = True
NEW_CHECKOUT_ENABLED = env.bool("NEW_CHECKOUT", False)
"""

_GIT_LOG_SKELETON = """\
a41c9e0 Add notifications app skeleton
 notifications/__init__.py            |  0
 notifications/apps.py                |  6 ++++++
 notifications/emails.py              | 24 ++++++++++++++++++++++++
 notifications/migrations/__init__.py |  0
 notifications/tasks.py               | 31 +++++++++++++++++++++++++++++++
 5 files changed, 61 insertions(+)
7d02b51 Orders: Order and OrderItem models
 orders/admin.py                     | 18 ++++++++++++++++++
 orders/migrations/0001_initial.py   | 58 ++++++++++++++++++++++++++++++++++++++++++++++
 orders/migrations/0002_orderitem.py | 29 +++++++++++++++++++++++++
 orders/models.py                    | 47 ++++++++++++++++++++++++++++++++++++++++++
 4 files changed, 152 insertions(+)
c3e88f1 Catalog: Category and Product, admin
 catalog/admin.py                  | 22 ++++++++++++++++++++++
 catalog/migrations/0001_initial.py | 61 ++++++++++++++++++++++++++++++++++++++++++++++
 catalog/models.py                 | 38 ++++++++++++++++++++++++++++++++++++++
 3 files changed, 121 insertions(+)
19b7a55 Split settings into base/dev/prod/test
 crumb/settings/__init__.py |  0
 crumb/settings/base.py     | 96 ++++++++++++++++++++++++++++++++++++++++++++++++++
 crumb/settings/dev.py      | 12 ++++++++++++
 crumb/settings/prod.py     | 18 ++++++++++++++++++
 crumb/settings/test.py     |  7 +++++++
 crumb/settings.py          | 123 ---------------------------------------------------------
 6 files changed, 133 insertions(+), 123 deletions(-)
0be2d4c Deploy: gunicorn + systemd units, nginx site
 deploy/crumb-celery.service   | 16 ++++++++++++++++
 deploy/crumb-gunicorn.service | 17 +++++++++++++++++
 deploy/gunicorn.conf.py       | 11 +++++++++++
 deploy/nginx-hermes.conf      | 44 ++++++++++++++++++++++++++++++++++++++++++++
 4 files changed, 88 insertions(+)
5f1e2aa Initial Django 5.0 project
 .gitignore       | 14 ++++++++++++++
 manage.py        | 22 ++++++++++++++++++++++
 requirements.txt | 16 ++++++++++++++++
 3 files changed, 52 insertions(+)
"""

_CATALOG_MODELS = """\
from django.db import models


class Category(models.Model):
    name = models.CharField(max_length=80, unique=True)
    slug = models.SlugField(max_length=80, unique=True)

    class Meta:
        verbose_name_plural = "categories"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Product(models.Model):
    category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="products")
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=140, unique=True)
    sku = models.CharField(max_length=32, unique=True)
    description = models.TextField(blank=True)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    stock = models.PositiveIntegerField(default=0)
    image = models.ImageField(upload_to="products/", blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["category__name", "name"]
        indexes = [models.Index(fields=["is_active", "category"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.sku})"
"""

_ORDERS_MODELS = """\
from decimal import Decimal

from django.conf import settings
from django.db import models

from catalog.models import Product


class Order(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PAID = "paid", "Paid"
        BAKING = "baking", "In the oven"
        SHIPPED = "shipped", "Out for delivery"
        CANCELLED = "cancelled", "Cancelled"

    customer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="orders"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    total = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0.00"))
    note = models.CharField(max_length=240, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Order #{self.pk} ({self.get_status_display()})"


class OrderItem(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="items")
    product = models.ForeignKey(Product, on_delete=models.PROTECT)
    quantity = models.PositiveSmallIntegerField(default=1)
    unit_price = models.DecimalField(max_digits=8, decimal_places=2)

    @property
    def line_total(self) -> Decimal:
        return self.unit_price * self.quantity
"""

_BASE_MODELS = {"catalog": _CATALOG_MODELS, "orders": _ORDERS_MODELS}


# --------------------------------------------------------------------------------------------
# Scenario templates. Each takes the builder, a language ("en" or "zh") and a variant index.
# --------------------------------------------------------------------------------------------


def _sc_bootstrap(b: _Builder, lang: str, v: int) -> None:
    b.user(
        "Morning! We're starting the Crumb & Co bakery shop today. Plan: Django 5, Postgres, "
        "Redis for cache and sessions, Celery for e-mails, all deployed behind nginx on the VM "
        "called hermes. Someone already pushed a skeleton to /srv/crumb. Can you look at what's "
        "there and tell me what's missing before we write any real code?"
    )
    b.call(
        (
            "run_shell",
            _shell("find . -maxdepth 3 -not -path './.venv/*' -not -path './.git/*' | sort"),
            _project_listing(),
        ),
        ("read_file", {"path": "/srv/crumb/requirements.txt"}, _REQUIREMENTS),
        ("read_file", {"path": "/srv/crumb/crumb/settings/base.py"}, _BASE_SETTINGS),
        ("run_shell", _shell("git log --oneline --stat -n 6"), _GIT_LOG_SKELETON),
        text="Let me look at the layout, the pinned dependencies and the base settings first.",
    )
    b.assistant(
        "Here's what the skeleton gives us:\n\n"
        "- A project package `crumb` with split settings (`base`, `dev`, `prod`, `test`), a "
        "Celery app and a gunicorn config in `deploy/`.\n"
        "- Four apps: `accounts`, `catalog`, `orders`, `notifications`. Each only has "
        "`0001_initial` and an empty `tests/` package with a `factories.py`.\n"
        "- Dependencies are sensible: Django 5.0.3, psycopg 3, django-redis, Celery 5.3, "
        "whitenoise, Pillow, pytest + factory-boy for tests.\n\n"
        "What's missing:\n"
        "1. No login/logout views or templates yet (`accounts/views.py` is empty).\n"
        "2. `catalog` has `Category` and `Product`, but `orders` has no cart logic.\n"
        "3. `crumb/settings/prod.py` doesn't configure `CACHES`, `LOGGING` or `ADMINS`.\n"
        "4. There is an nginx file in `deploy/`, but nothing says it's installed on hermes.\n"
        "5. No CI config, so nothing runs the tests automatically.\n\n"
        "I'd start with the login page and the core models, then tests, then deployment."
    )


def _sc_login_page(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Let's do the login page first. Use Django's built-in auth views, a nice template, "
            "and redirect to the catalog after login.",
            "帮我用Django写一个用户登录页面。用自带的auth视图就行，模板简单好看一点，"
            "登录以后跳转到商品列表。",
        )
    )
    urls = (
        "from django.contrib.auth import views as auth_views\n"
        "from django.urls import path\n\n"
        "from . import views\n\n"
        'app_name = "accounts"\n\n'
        "urlpatterns = [\n"
        '    path("signup/", views.SignupView.as_view(), name="signup"),\n'
        "]\n"
    )
    new_urls = urls.replace(
        "urlpatterns = [\n",
        "urlpatterns = [\n"
        '    path("login/", views.CrumbLoginView.as_view(), name="login"),\n'
        '    path("logout/", auth_views.LogoutView.as_view(), name="logout"),\n',
    )
    view_code = (
        "from django.contrib.auth.views import LoginView\n"
        "from django.urls import reverse_lazy\n"
        "from django.views.generic import CreateView\n\n"
        "from .forms import EmailAuthenticationForm, SignupForm\n\n\n"
        "class CrumbLoginView(LoginView):\n"
        '    template_name = "accounts/login.html"\n'
        "    authentication_form = EmailAuthenticationForm\n"
        "    redirect_authenticated_user = True\n\n"
        "    def get_default_redirect_url(self) -> str:\n"
        '        return str(reverse_lazy("catalog:product_list"))\n\n\n'
        "class SignupView(CreateView):\n"
        "    form_class = SignupForm\n"
        '    template_name = "accounts/signup.html"\n'
        '    success_url = reverse_lazy("accounts:login")\n'
    )
    template = (
        '{% extends "base.html" %}\n'
        "{% block title %}Log in · Crumb & Co{% endblock %}\n"
        "{% block content %}\n"
        '<main class="auth-card">\n'
        "  <h1>Welcome back</h1>\n"
        '  <form method="post" novalidate>\n'
        "    {% csrf_token %}\n"
        "    {{ form.non_field_errors }}\n"
        '    <label for="id_username">E-mail</label>\n'
        "    {{ form.username }}\n"
        '    <label for="id_password">Password</label>\n'
        "    {{ form.password }}\n"
        '    <input type="hidden" name="next" value="{{ next }}">\n'
        '    <button type="submit" class="btn btn-primary">Log in</button>\n'
        "  </form>\n"
        "  <p>No account yet? <a href=\"{% url 'accounts:signup' %}\">Sign up</a></p>\n"
        "</main>\n"
        "{% endblock %}\n"
    )
    b.call(
        ("read_file", {"path": "/srv/crumb/accounts/urls.py"}, urls),
        text=_pick(lang, "Checking the current URLconf.", "先看一下现在的URL配置。"),
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/accounts/views.py", "content": view_code},
            "Wrote 721 bytes to /srv/crumb/accounts/views.py",
        ),
        (
            "write_file",
            {"path": "/srv/crumb/templates/accounts/login.html", "content": template},
            "Wrote 642 bytes to /srv/crumb/templates/accounts/login.html",
        ),
        text=None,
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/accounts/urls.py", "content": new_urls},
            "Wrote 392 bytes to /srv/crumb/accounts/urls.py",
        ),
    )
    b.call(
        ("run_tests", {"target": "accounts", "args": "-q"}, "..........\n10 passed in 1.84s"),
    )
    b.assistant(
        _pick(
            lang,
            "Login is in place: `/accounts/login/` uses `CrumbLoginView` (a thin subclass of "
            "Django's `LoginView`) with an e-mail based form, logged-in users are redirected to "
            "the catalog, and `?next=` is respected through the hidden field. Logout is the "
            "stock `LogoutView` (POST only in Django 5, so the nav button must be a form). "
            "All 10 accounts tests pass.",
            "登录页面写好了：\n\n"
            "- `/accounts/login/` 用的是 `CrumbLoginView`，它继承Django自带的 `LoginView`，"
            "表单改成用邮箱登录；\n"
            "- 已登录的用户会直接跳转到商品列表，`?next=` 参数也会保留；\n"
            "- 退出用自带的 `LogoutView`，注意Django 5里只能用POST，"
            "所以导航栏里的退出按钮要写成表单。\n\n"
            "accounts 的 10 个测试全部通过。",
        )
    )
    b.user(
        _pick(
            lang,
            "Nice. Can we also rate-limit failed logins a bit? Nothing fancy.",
            "不错。能不能顺便限制一下登录失败的次数？简单一点就行。",
        )
    )
    b.assistant(
        _pick(
            lang,
            "Simplest option without a new dependency: count failures per e-mail + IP in the "
            "cache with a 15 minute TTL and refuse after 5. I'll put it in the form's `clean()` "
            "so the view stays untouched. If we later want lockout emails or an admin view, "
            "django-axes is the usual choice.",
            "最简单、不加新依赖的做法：在缓存里按“邮箱 + IP”计数失败次数，过期时间15分钟，"
            "超过5次就拒绝。"
            "逻辑放在表单的 `clean()` 里，视图不用改。以后如果需要锁定通知或者后台管理，"
            "可以换成 django-axes。",
        )
    )


_MODEL_VARIANTS: list[dict[str, str]] = [
    {
        "app": "catalog",
        "name": "Supplier",
        "migration": "0002_supplier",
        "code": (
            "class Supplier(models.Model):\n"
            "    name = models.CharField(max_length=120)\n"
            "    email = models.EmailField()\n"
            "    phone = models.CharField(max_length=32, blank=True)\n"
            "    lead_time_days = models.PositiveSmallIntegerField(default=2)\n\n"
            "    def __str__(self) -> str:\n"
            "        return self.name\n"
        ),
        "en": "We buy flour from three mills. Add a Supplier model: name, e-mail, phone and "
        "lead time in days.",
        "zh": "我们从三家面粉厂进货。加一个 Supplier 模型：名字、邮箱、电话，还有交货天数。",
    },
    {
        "app": "orders",
        "name": "Coupon",
        "migration": "0004_coupon",
        "code": (
            "class Coupon(models.Model):\n"
            "    code = models.CharField(max_length=24, unique=True)\n"
            "    percent_off = models.PositiveSmallIntegerField()  # 1..100 (%)\n"
            "    valid_until = models.DateField()\n"
            "    max_uses = models.PositiveIntegerField(default=100)\n"
            "    used = models.PositiveIntegerField(default=0)\n\n"
            "    def __str__(self) -> str:\n"
            '        return f"{self.code} (-{self.percent_off}%)"\n'
        ),
        "en": "Marketing wants coupons: a code, percent off (so 10% or 25%, never above 100%), "
        "an expiry date and a max number of uses.",
        "zh": "市场部要优惠券：一个券码，折扣百分比（比如10%、25%，最多100%），过期日期，"
        "还有最多使用次数。",
    },
    {
        "app": "catalog",
        "name": "Review",
        "migration": "0006_review",
        "code": (
            "class Review(models.Model):\n"
            "    product = models.ForeignKey(Product, on_delete=models.CASCADE, "
            'related_name="reviews")\n'
            "    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)\n"
            "    rating = models.PositiveSmallIntegerField(\n"
            "        validators=[MinValueValidator(1), MaxValueValidator(5)]\n"
            "    )\n"
            "    body = models.TextField(max_length=2000)\n"
            "    created_at = models.DateTimeField(auto_now_add=True)\n\n"
            "    class Meta:\n"
            '        constraints = [models.UniqueConstraint(fields=["product", "author"], '
            'name="one_review_per_user")]\n'
        ),
        "en": "Customers keep asking for reviews. Add a Review model: product, author, rating "
        "1 to 5, text. One review per user per product.",
        "zh": "客户一直想要评价功能。加一个 Review 模型：商品、作者、1到5星评分、正文。"
        "每个用户每个商品只能评一次。",
    },
    {
        "app": "orders",
        "name": "DeliverySlot",
        "migration": "0007_deliveryslot",
        "code": (
            "class DeliverySlot(models.Model):\n"
            "    date = models.DateField()\n"
            "    start = models.TimeField()\n"
            "    end = models.TimeField()\n"
            "    capacity = models.PositiveSmallIntegerField(default=12)\n"
            "    booked = models.PositiveSmallIntegerField(default=0)\n\n"
            "    class Meta:\n"
            '        ordering = ["date", "start"]\n'
            "        constraints = [models.CheckConstraint(check=models.Q(booked__lte="
            'models.F("capacity")), name="slot_not_overbooked")]\n'
        ),
        "en": "We deliver in 2-hour windows, max 12 orders per window. Add a DeliverySlot model "
        "and make sure a slot can never be overbooked at the DB level.",
        "zh": "我们按两小时一个时段送货，每个时段最多12单。加一个 DeliverySlot 模型，"
        "并且在数据库层面保证不会超额预订。",
    },
    {
        "app": "catalog",
        "name": "StockMovement",
        "migration": "0008_stockmovement",
        "code": (
            "class StockMovement(models.Model):\n"
            "    class Reason(models.TextChoices):\n"
            '        BAKED = "baked", "Baked"\n'
            '        SOLD = "sold", "Sold"\n'
            '        WASTE = "waste", "Waste"\n'
            '        CORRECTION = "correction", "Manual correction"\n\n'
            "    product = models.ForeignKey(Product, on_delete=models.CASCADE, "
            'related_name="movements")\n'
            "    delta = models.IntegerField()\n"
            "    reason = models.CharField(max_length=16, choices=Reason.choices)\n"
            "    created_at = models.DateTimeField(auto_now_add=True)\n"
        ),
        "en": "Stock numbers drift and nobody knows why. Add a StockMovement log: product, "
        "delta, reason (baked, sold, waste, correction), timestamp.",
        "zh": "库存数字总是对不上，没人知道原因。加一个 StockMovement 记录：商品、变化量、"
        "原因（烘焙、售出、报废、修正）、时间。",
    },
]


def _sc_model(b: _Builder, lang: str, v: int) -> None:
    spec = _MODEL_VARIANTS[v % len(_MODEL_VARIANTS)]
    app, name, migration = spec["app"], spec["name"], spec["migration"]
    path = f"/srv/crumb/{app}/models.py"
    base = _BASE_MODELS[app]
    b.user(spec[lang])
    b.call(("read_file", {"path": path}, base), text=None)
    b.call(
        (
            "write_file",
            {"path": path, "content": base + "\n\n" + spec["code"]},
            f"Wrote {len(base) + len(spec['code']) + 2} bytes to {path}",
        ),
        text=_pick(
            lang,
            f"Adding `{name}` at the end of `{app}/models.py`.",
            f"在 `{app}/models.py` 末尾加上 `{name}`。",
        ),
    )
    mig_out = (
        f"Migrations for '{app}':\n  {app}/migrations/{migration}.py\n    - Create model {name}"
    )
    b.call(("run_shell", _shell(f"python manage.py makemigrations {app}"), mig_out))
    b.call(
        (
            "run_shell",
            _shell(f"python manage.py migrate {app}"),
            f"Operations to perform:\n  Apply all migrations: {app}\nRunning migrations:\n"
            f"  Applying {app}.{migration}... OK",
        ),
    )
    b.assistant(
        _pick(
            lang,
            f"`{name}` is added and migrated (`{app}/migrations/{migration}.py`). I kept the "
            "field names boring on purpose so the admin and the API serializers don't need "
            "custom labels. Want me to register it in the admin?",
            f"`{name}` 已经加好并完成迁移（`{app}/migrations/{migration}.py`）。"
            "字段名故意取得很普通，"
            "这样admin和API序列化都不需要额外的标签。要不要顺便注册到admin里？",
        )
    )
    b.user(
        _pick(
            lang,
            "Yes please, with a search box.",
            "要，顺便把它注册到admin里，加上搜索框。",
        )
    )
    admin_code = (
        f"from django.contrib import admin\n\nfrom .models import {name}\n\n\n"
        f"@admin.register({name})\n"
        f"class {name}Admin(admin.ModelAdmin):\n"
        f'    list_display = ("id", "__str__")\n'
        f'    search_fields = ("id",)\n'
        f"    list_per_page = 50\n"
    )
    b.call(
        (
            "write_file",
            {"path": f"/srv/crumb/{app}/admin.py", "content": admin_code},
            f"Appended {len(admin_code)} bytes to /srv/crumb/{app}/admin.py",
        ),
        (
            "run_shell",
            _shell("python manage.py check"),
            "System check identified no issues (0 silenced).",
        ),
    )
    b.assistant(
        _pick(
            lang,
            f"Registered `{name}` in the admin with search and 50 rows per page; "
            "`manage.py check` is clean.",
            f"`{name}` 已注册到admin，带搜索，每页50条；`manage.py check` 没有问题。",
        )
    )


_SERVICES_PY = """\
from decimal import ROUND_HALF_UP, Decimal

from django.db import transaction
from django.db.models import F

from catalog.models import Product

from .models import Coupon, Order, OrderItem


class OutOfStock(Exception):
    pass


def money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def apply_coupon(total: Decimal, coupon: Coupon | None) -> Decimal:
    if coupon is None:
        return total
    return total - total * (coupon.percent_off // 100)


@transaction.atomic
def checkout(cart, coupon: Coupon | None = None) -> Order:
    order = Order.objects.create(customer=cart.user)
    total = Decimal("0.00")
    for line in cart.lines():
        product = Product.objects.select_for_update().get(pk=line.product_id)
        if product.stock < line.quantity:
            raise OutOfStock(product.sku)
        product.stock -= line.quantity
        product.save(update_fields=["stock"])
        OrderItem.objects.create(
            order=order, product=product, quantity=line.quantity, unit_price=product.price
        )
        total += product.price * line.quantity
    order.total = apply_coupon(total, coupon)
    order.save(update_fields=["total"])
    if coupon is not None:
        Coupon.objects.filter(pk=coupon.pk).update(used=F("used") + 1)
    cart.clear()
    return order
"""

_ACCOUNTS_VIEWS = """\
from django.contrib.auth.views import LoginView
from django.urls import reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme

from .forms import EmailAuthenticationForm


class CrumbLoginView(LoginView):
    template_name = "accounts/login.html"
    authentication_form = EmailAuthenticationForm
    redirect_authenticated_user = True

    def get_default_redirect_url(self) -> str:
        return str(reverse_lazy("catalog:product_list"))

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["next"] = self.request.POST.get("next", "")
        return ctx
"""

_TEST_SETTINGS = """\
from .base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
CELERY_TASK_ALWAYS_EAGER = True
# CACHES are inherited from base.py
"""

_CART_PY = """\
from decimal import Decimal

from catalog.models import Product

SESSION_KEY = "cart"


class Cart:
    def __init__(self, request):
        self.session = request.session
        self.user = request.user
        self.data = self.session.setdefault(SESSION_KEY, {})

    def add(self, product: Product, quantity: int = 1) -> None:
        item = self.data.setdefault(str(product.pk), {"q": 0, "price": str(product.price)})
        item["q"] += quantity
        self.session.modified = True

    def total(self) -> Decimal:
        raw = sum(Decimal(i["price"]) * i["q"] for i in self.data.values())
        return Decimal(round(raw, 2))

    def clear(self) -> None:
        self.session.pop(SESSION_KEY, None)
        self.session.modified = True
"""


_TEST_FAILURES: list[dict[str, str]] = [
    {
        "module": "orders/tests/test_checkout.py",
        "ask_en": "CI went red right after the coupon model landed. Can you run the tests and see "
        "what broke?",
        "ask_zh": "优惠券模型合进去以后CI就挂了，帮我跑一下测试看看哪里坏了？",
        "test": "test_checkout_applies_coupon",
        "body": (
            "    def test_checkout_applies_coupon(customer, cart_with_two_loaves):\n"
            '        coupon = CouponFactory(code="SPRING10", percent_off=10)\n'
            "        order = checkout(cart_with_two_loaves, coupon=coupon)\n"
            '>       assert order.total == Decimal("40.50")\n'
            "E       AssertionError: assert Decimal('45.00') == Decimal('40.50')\n"
            "E        +  where Decimal('45.00') = <Order: Order #17 (Pending)>.total"
        ),
        "source": "/srv/crumb/orders/services.py",
        "excerpt": _SERVICES_PY,
        "bug": "return total - total * (coupon.percent_off // 100)",
        "fixed": "return money(total * (100 - coupon.percent_off) / Decimal(100))",
        "cause_en": "`apply_coupon` does `percent_off // 100`, which is integer division, so "
        "10 // 100 == 0 and no discount is applied.",
        "cause_zh": "`apply_coupon` 里写的是 `percent_off // 100`，这是整数除法，10 // 100 等于 0，"
        "所以折扣根本没生效。",
        "fix_en": "I changed it to `total * (Decimal(100) - coupon.percent_off) / Decimal(100)` "
        "and quantize to cents.",
        "fix_zh": "改成 `total * (Decimal(100) - coupon.percent_off) / Decimal(100)`，"
        "再四舍五入到分。",
    },
    {
        "module": "accounts/tests/test_login.py",
        "ask_en": "CI is red again, something in accounts this time. Can you take a look?",
        "ask_zh": "CI又挂了，这次好像是accounts的问题，帮我看看？",
        "test": "test_login_redirects_to_next",
        "body": (
            "    def test_login_redirects_to_next(client, user):\n"
            "        resp = client.post(\n"
            '            "/accounts/login/?next=/orders/history/",\n'
            '            {"username": user.email, "password": "correct horse"},\n'
            "        )\n"
            '>       assert resp["Location"] == "/orders/history/"\n'
            "E       AssertionError: assert '/catalog/' == '/orders/history/'"
        ),
        "source": "/srv/crumb/accounts/views.py",
        "excerpt": _ACCOUNTS_VIEWS,
        "bug": 'ctx["next"] = self.request.POST.get("next", "")',
        "fixed": 'ctx["next"] = self.get_redirect_url() or self.request.GET.get("next", "")',
        "cause_en": "I overrode `get_default_redirect_url`, but the hidden `next` input is "
        "outside the form's POST data when the page is opened with `?next=` in the query "
        "string, so Django falls back to the default.",
        "cause_zh": "我重写了 `get_default_redirect_url`，但是模板里的隐藏字段没有拿到查询参数里的 "
        "`next`，"
        "所以Django退回到了默认跳转地址。",
        "fix_en": "The template now renders `{{ request.GET.next }}` as a fallback, and the "
        "view keeps using `url_has_allowed_host_and_scheme` so open redirects stay blocked.",
        "fix_zh": "模板里改成在没有 `next` 时用 `{{ request.GET.next }}`，视图仍然用 "
        "`url_has_allowed_host_and_scheme` 检查，防止开放重定向。",
    },
    {
        "module": "catalog/tests/test_views.py",
        "ask_en": "Weird one: the tests pass on my laptop but fail on the CI runner. Can you look?",
        "ask_zh": "奇怪，测试在我电脑上能过，在CI上就挂。帮我看看？",
        "test": "test_product_list_is_cached",
        "body": (
            "    def test_product_list_is_cached(client, django_assert_num_queries):\n"
            '        client.get("/catalog/")\n'
            "        with django_assert_num_queries(0):\n"
            '>           client.get("/catalog/")\n'
            "E           redis.exceptions.ConnectionError: Error 111 connecting to "
            "10.0.3.12:6379. Connection refused."
        ),
        "source": "/srv/crumb/crumb/settings/test.py",
        "excerpt": _TEST_SETTINGS,
        "bug": "# CACHES are inherited from base.py",
        "fixed": 'CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}'
        "}",
        "cause_en": "The test settings inherit `CACHES` from base, so the test suite talks to "
        "the real Redis on 10.0.3.12, which isn't reachable from the CI runner.",
        "cause_zh": "测试配置从 base 继承了 `CACHES`，所以测试连的是 10.0.3.12 上真正的Redis，"
        "CI机器连不上。",
        "fix_en": "`crumb/settings/test.py` now uses `LocMemCache`, and a fixture clears it "
        "between tests so cached pages don't leak from one test into another.",
        "fix_zh": "`crumb/settings/test.py` 改用 `LocMemCache`，"
        "并加了一个fixture在每个测试之间清空缓存，"
        "避免一个测试的缓存页面影响另一个测试。",
    },
    {
        "module": "orders/tests/test_cart.py",
        "ask_en": "Another red build, I think it's the cart tests. Can you check?",
        "ask_zh": "又一个红色的构建，好像是购物车的测试，帮我查一下？",
        "test": "test_cart_total_rounding",
        "body": (
            "    def test_cart_total_rounding(cart):\n"
            '        cart.add(ProductFactory(price=Decimal("2.675")), quantity=3)\n'
            '>       assert cart.total() == Decimal("8.03")\n'
            "E       AssertionError: assert Decimal('8.02') == Decimal('8.03')"
        ),
        "source": "/srv/crumb/orders/cart.py",
        "excerpt": _CART_PY,
        "bug": "return Decimal(round(raw, 2))",
        "fixed": "return money(raw)",
        "cause_en": "The cart used `round()`, which does banker's rounding (ROUND_HALF_EVEN). "
        "Our receipts are supposed to round half up.",
        "cause_zh": "购物车用了 `round()`，那是银行家舍入（ROUND_HALF_EVEN），"
        "我们的收据应该是四舍五入。",
        "fix_en": "Replaced it with `quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)` in one "
        "helper, `money()`, used everywhere totals are computed.",
        "fix_zh": "改成统一的 `money()` 工具函数，里面用 `quantize(Decimal('0.01'), "
        "rounding=ROUND_HALF_UP)`，"
        "所有计算金额的地方都用它。",
    },
]


def _sc_tests(b: _Builder, lang: str, v: int) -> None:
    growth = b.day * 2
    if v < 0:  # green run
        b.user(
            _pick(
                lang,
                "Run the whole test suite with coverage, please.",
                "跑一下全部测试，带上覆盖率。",
            )
        )
        b.call(
            (
                "run_tests",
                {"target": "", "args": "--cov=. --cov-report=term"},
                _pytest_output(b.rng, growth),
            )
        )
        b.assistant(
            _pick(
                lang,
                "All green. Coverage is fine for models and views; the weakest spots are "
                "`notifications/tasks.py` and `orders/services.py`, which is where the money "
                "logic lives, so I'd add tests there next.",
                "全部通过。模型和视图的覆盖率还可以，最弱的是 `notifications/tasks.py` 和 "
                "`orders/services.py`，后者是算钱的地方，建议下一步补这里的测试。",
            )
        )
        return
    spec = _TEST_FAILURES[v % len(_TEST_FAILURES)]
    b.user(
        _pick(
            lang,
            spec["ask_en"],
            spec["ask_zh"],
        )
    )
    failing = _pytest_output(b.rng, growth, [(spec["module"], spec["test"], spec["body"])])
    b.call(("run_tests", {"target": "", "args": "--cov=. --cov-report=term"}, failing))
    b.call(
        (
            "read_file",
            {"path": f"/srv/crumb/{spec['module']}"},
            "import pytest\nfrom decimal import Decimal\n\n"
            "pytestmark = pytest.mark.django_db\n\n\n"
            + spec["body"].replace(">", " ").replace("E       ", "#       "),
        ),
        ("read_file", {"path": spec["source"]}, spec["excerpt"]),
        text=_pick(
            lang,
            f"One failure: `{spec['test']}`. Reading the test and the code it exercises.",
            f"只有一个失败：`{spec['test']}`。我看一下测试和被测代码。",
        ),
    )
    b.assistant(_pick(lang, "Found it. " + spec["cause_en"], "找到原因了。" + spec["cause_zh"]))
    patched = spec["excerpt"].replace(spec["bug"], spec["fixed"])
    b.call(
        (
            "write_file",
            {"path": spec["source"], "content": patched},
            f"Wrote {len(patched)} bytes to {spec['source']}",
        )
    )
    b.call(
        (
            "run_tests",
            {"target": spec["module"], "args": "-q"},
            f"{'.' * (8 + v)}\n{8 + v} passed in 0.9{v}s",
        )
    )
    b.assistant(
        _pick(
            lang,
            spec["fix_en"] + " The module passes again; CI should go green.",
            spec["fix_zh"] + " 这个模块的测试又通过了，CI应该会变绿。",
        )
    )


_MIGRATION_FAILURES: list[dict[str, str]] = [
    {
        "cmd": "python manage.py migrate orders",
        "file": "orders/migrations/0003_order_customer.py",
        "error": (
            "Operations to perform:\n  Apply all migrations: orders\nRunning migrations:\n"
            "  Applying orders.0003_order_customer...Traceback (most recent call last):\n"
            '  File "/srv/crumb/.venv/lib/python3.11/site-packages/django/db/backends/utils.py"'
            ", line 105, in _execute\n    return self.cursor.execute(sql, params)\n"
            'psycopg.errors.NotNullViolation: column "customer_id" of relation '
            '"orders_order" contains null values\n\n'
            "The above exception was the direct cause of the following exception:\n\n"
            'django.db.utils.IntegrityError: column "customer_id" of relation '
            '"orders_order" contains null values'
        ),
        "en": "The new `customer` foreign key is NOT NULL, but 37 old orders from the "
        "phone-order days have no customer, so Postgres refuses to add the column.",
        "zh": "新加的 `customer` 外键是 NOT NULL，但以前电话下单的 37 个旧订单没有客户，"
        "所以Postgres拒绝加这一列。",
        "fix_en": "I split it into three migrations: add the column as nullable, a data "
        "migration that assigns those orders to a `guest@crumb.local` placeholder customer, "
        "then make it NOT NULL.",
        "fix_zh": "我把它拆成三步迁移：先加可为空的列；再用数据迁移把这些订单挂到一个 "
        "`guest@crumb.local` 占位客户上；"
        "最后改成 NOT NULL。",
        "fixed": "  Applying orders.0003_order_customer_nullable... OK\n"
        "  Applying orders.0004_backfill_guest_customer... OK\n"
        "  Applying orders.0005_order_customer_not_null... OK",
    },
    {
        "cmd": "python manage.py migrate catalog",
        "file": "catalog/migrations/0005_product_sku_unique.py",
        "error": (
            "Operations to perform:\n  Apply all migrations: catalog\nRunning migrations:\n"
            "  Applying catalog.0005_product_sku_unique...Traceback (most recent call last):\n"
            '  File "/srv/crumb/.venv/lib/python3.11/site-packages/django/db/backends/utils.py"'
            ", line 105, in _execute\n"
            "psycopg.errors.UniqueViolation: could not create unique index "
            '"catalog_product_sku_key"\nDETAIL:  Key (sku)=(BRD-0042) is duplicated.\n\n'
            "django.db.utils.IntegrityError: could not create unique index "
            '"catalog_product_sku_key"'
        ),
        "en": "Two products share the SKU `BRD-0042` (the rye loaf was imported twice from the "
        "old spreadsheet), so the unique index can't be built.",
        "zh": "有两个商品的SKU都是 `BRD-0042`（黑麦面包从旧表格里导入了两次），"
        "所以唯一索引建不起来。",
        "fix_en": "I added a data migration before the index that keeps the older row, moves "
        "order items and stock movements of the duplicate to it, and deletes the duplicate.",
        "fix_zh": "我在建索引之前加了一个数据迁移：保留较早的那一行，"
        "把重复行的订单项和库存记录转过去，再删掉重复行。",
        "fixed": "  Applying catalog.0005a_dedupe_skus... OK\n"
        "  Applying catalog.0005_product_sku_unique... OK",
    },
    {
        "cmd": "python manage.py migrate",
        "file": "orders/migrations/0006_coupon_max_uses.py",
        "error": (
            "Traceback (most recent call last):\n"
            '  File "/srv/crumb/manage.py", line 22, in <module>\n'
            "    main()\n"
            '  File "/srv/crumb/.venv/lib/python3.11/site-packages/django/core/management/'
            'commands/migrate.py", line 121, in handle\n'
            "    executor.loader.check_consistent_history(connection)\n"
            "django.db.migrations.exceptions.InconsistentMigrationHistory: Migration "
            "orders.0006_coupon_max_uses is applied before its dependency catalog.0006_review "
            "on database 'default'."
        ),
        "en": "Someone ran `migrate orders` on the server from a branch where "
        "`orders.0006_coupon_max_uses` already depended on `catalog.0006_review`, which was "
        "never applied there. The history table is now out of order.",
        "zh": "有人在服务器上从另一个分支执行了 `migrate orders`，那时 "
        "`orders.0006_coupon_max_uses` "
        "已经依赖 `catalog.0006_review`，但后者从来没在服务器上执行过，所以迁移历史乱序了。",
        "fix_en": "The dependency was accidental (makemigrations picked it up from an import). "
        "I removed it from 0006_coupon_max_uses, confirmed the schema matches with "
        "`sqlmigrate`, and then applied `catalog.0006_review` normally.",
        "fix_zh": "那个依赖是误加的（makemigrations 从一个import推出来的）。我把它从 "
        "0006_coupon_max_uses 里去掉，"
        "用 `sqlmigrate` 确认表结构一致，然后正常执行了 `catalog.0006_review`。",
        "fixed": "  Applying catalog.0006_review... OK",
    },
]

_SHOWMIGRATIONS = """\
accounts
 [X] 0001_initial
 [X] 0002_profile_phone
admin
 [X] 0001_initial
 [X] 0002_logentry_remove_auto_add
 [X] 0003_logentry_add_action_flag_choices
auth
 [X] 0001_initial
 [X] 0002_alter_permission_name_max_length
 [X] 0003_alter_user_email_max_length
 [X] 0004_alter_user_username_opts
 [X] 0005_alter_user_last_login_null
 [X] 0006_require_contenttypes_0002
 [X] 0007_alter_validators_add_error_messages
 [X] 0008_alter_user_username_max_length
 [X] 0009_alter_user_last_name_max_length
 [X] 0010_alter_group_name_max_length
 [X] 0011_update_proxy_permissions
 [X] 0012_alter_user_first_name_max_length
catalog
 [X] 0001_initial
 [X] 0002_supplier
 [X] 0003_product_slug
 [X] 0004_product_image
 [ ] 0005_product_sku_unique
 [ ] 0006_review
contenttypes
 [X] 0001_initial
 [X] 0002_remove_content_type_name
orders
 [X] 0001_initial
 [X] 0002_orderitem
 [ ] 0003_order_customer
 [X] 0004_coupon
 [X] 0006_coupon_max_uses
sessions
 [X] 0001_initial
"""


_PSQL_ORDERS_TABLE = """\
                               Table "public.orders_order"
   Column    |           Type           | Collation | Nullable |             Default
-------------+--------------------------+-----------+----------+----------------------------------
 id          | bigint                   |           | not null | generated by default as identity
 status      | character varying(16)    |           | not null |
 total       | numeric(10,2)            |           | not null |
 note        | character varying(240)   |           | not null |
 created_at  | timestamp with time zone |           | not null |
 customer_id | bigint                   |           |          |
 coupon_id   | bigint                   |           |          |
Indexes:
    "orders_order_pkey" PRIMARY KEY, btree (id)
    "orders_order_coupon_id_5f3e9a1c" btree (coupon_id)
    "orders_order_customer_id_0b9f4d2e" btree (customer_id)
Foreign-key constraints:
    "orders_order_coupon_id_5f3e9a1c_fk_orders_coupon_id" FOREIGN KEY (coupon_id)
        REFERENCES orders_coupon(id) DEFERRABLE INITIALLY DEFERRED
    "orders_order_customer_id_0b9f4d2e_fk_auth_user_id" FOREIGN KEY (customer_id)
        REFERENCES auth_user(id) DEFERRABLE INITIALLY DEFERRED
Referenced by:
    TABLE "orders_orderitem" CONSTRAINT "orders_orderitem_order_id_8a7c33f1_fk_orders_order_id"
        FOREIGN KEY (order_id) REFERENCES orders_order(id) DEFERRABLE INITIALLY DEFERRED
"""


def _sc_migration_fail(b: _Builder, lang: str, v: int) -> None:
    spec = _MIGRATION_FAILURES[v % len(_MIGRATION_FAILURES)]
    b.user(
        _pick(
            lang,
            "The migration failed on the server after the last pull. What's the error?",
            "数据库迁移失败了，错误是什么？刚在服务器上pull完代码就报错。",
        )
        + "\n\n```\n$ ./deploy/release.sh\n>>> git pull --ff-only\n"
        + f"Updating 3f9c1d2..8e{v}a7b4\nFast-forward\n"
        + f" {spec['file']} | {17 + v * 4} +++++++++\n"
        + f" 1 file changed, {17 + v * 4} insertions(+)\n"
        + ">>> python manage.py migrate --noinput\n"
        + spec["error"].splitlines()[-1]
        + "\n>>> release aborted, gunicorn NOT restarted\n```"
    )
    b.call(
        ("run_shell", _shell(spec["cmd"]), spec["error"]),
        text=_pick(lang, "Re-running it to get the full traceback.", "我重新跑一遍拿完整的报错。"),
    )
    b.call(
        ("run_shell", _shell("python manage.py showmigrations"), _SHOWMIGRATIONS),
        ("run_shell", _shell("psql crumb -c '\\d orders_order'"), _PSQL_ORDERS_TABLE),
    )
    b.assistant(_pick(lang, spec["en"], spec["zh"]))
    b.user(_pick(lang, "OK, fix it. Don't lose any data.", "好，修一下。数据不能丢。"))
    b.call(
        (
            "run_shell",
            _shell("pg_dump -Fc crumb > ~/backups/crumb-before-fix.dump && ls -lh ~/backups/"),
            "total 38M\n-rw-r--r-- 1 deploy deploy 12M crumb-before-fix.dump\n"
            "-rw-r--r-- 1 deploy deploy 13M crumb-nightly-1.dump\n"
            "-rw-r--r-- 1 deploy deploy 13M crumb-nightly-2.dump",
        ),
        text=_pick(lang, "Taking a backup first.", "先备份数据库。"),
    )
    b.call(
        (
            "run_shell",
            _shell(spec["cmd"]),
            "Operations to perform:\n  Apply all migrations\nRunning migrations:\n" + spec["fixed"],
        )
    )
    b.call(
        (
            "run_shell",
            _shell("python manage.py migrate --plan"),
            "Planned operations:\n  No planned migration operations.",
        ),
        text=_pick(lang, "Double-checking the migration state.", "再确认一下迁移状态。"),
    )
    b.assistant(
        _pick(
            lang,
            spec["fix_en"] + " A backup was taken first (`~/backups/crumb-before-fix.dump`), "
            "and `migrate --plan` shows nothing left to apply.",
            spec["fix_zh"] + " 修之前已经备份到 `~/backups/crumb-before-fix.dump`，"
            "`migrate --plan` 显示已经没有待执行的迁移。",
        )
    )


_NGINX_VARIANTS: list[dict[str, Any]] = [
    {
        "en": "The site shows 502 Bad Gateway after the reboot. nginx is up, gunicorn is up. "
        "Config is /etc/nginx/sites-enabled/hermes.conf.",
        "zh": "重启以后网站显示 502 Bad Gateway。nginx和gunicorn都在运行。配置文件是 "
        "/etc/nginx/sites-enabled/hermes.conf。",
        "before": {"port": 8001},
        "status": 502,
        "after": {"port": 8000},
        "check": "ss -ltnp | grep -E ':(8000|8001)'",
        "check_out": 'LISTEN 0 2048 127.0.0.1:8000 0.0.0.0:* users:(("gunicorn",pid=21004,fd=5))',
        "expl_en": "The upstream in hermes.conf points to 127.0.0.1:8001, but gunicorn binds "
        "8000 (see `deploy/gunicorn.conf.py`). Someone changed the port while testing a second "
        "instance and never changed it back.",
        "expl_zh": "hermes.conf 里的 upstream 指向 127.0.0.1:8001，但gunicorn监听的是 8000"
        "（见 `deploy/gunicorn.conf.py`）。应该是有人测试第二个实例时改了端口，之后没改回来。",
    },
    {
        "en": "CSS is gone on production, every /static/ URL is 404. Locally it's fine.",
        "zh": "线上的CSS全没了，所有 /static/ 的请求都是404。本地是好的。",
        "before": {"static": "/srv/crumb/static"},
        "status": 404,
        "after": {"static": "/srv/crumb/staticfiles/"},
        "check": "ls /srv/crumb/staticfiles | head -5 && ls /srv/crumb/static | head -5",
        "check_out": "admin\ncss\nimg\njs\nstaticfiles.json\ncss\nimg\njs",
        "expl_en": "Two problems in the `/static/` location: `alias` points at the source "
        "folder `static` instead of `STATIC_ROOT` (`staticfiles/`), and it has no trailing "
        "slash, so `/static/css/site.css` becomes `/srv/crumb/staticcss/site.css`.",
        "expl_zh": "`/static/` 这个location有两个问题：`alias` 指向的是源码目录 `static`，"
        "而不是 `STATIC_ROOT`（`staticfiles/`）；而且末尾没有斜杠，"
        "`/static/css/site.css` 会被拼成 `/srv/crumb/staticcss/site.css`。",
    },
    {
        "en": "Uploading a product photo fails with 413 Request Entity Too Large. Photos from "
        "the new camera are around 6 MB.",
        "zh": "上传商品照片报 413 Request Entity Too Large。新相机拍的照片大概 6 MB。",
        "before": {"body": "1m"},
        "status": 413,
        "after": {"body": "10m"},
        "check": "grep -rn client_max_body_size /etc/nginx/",
        "check_out": "/etc/nginx/sites-enabled/hermes.conf:21:    client_max_body_size 1m;",
        "expl_en": "`client_max_body_size` is 1m in hermes.conf, nginx rejects the upload "
        "before Django ever sees it. Django's own `DATA_UPLOAD_MAX_MEMORY_SIZE` doesn't apply "
        "to file fields, so only nginx needs changing.",
        "expl_zh": "hermes.conf 里 `client_max_body_size` 是 1m，nginx在请求到Django之前就拒绝了。"
        "Django的 `DATA_UPLOAD_MAX_MEMORY_SIZE` 不管文件字段，所以只需要改nginx。",
    },
    {
        "en": "Checkout POST gives 'CSRF verification failed. Origin checking failed - "
        "https://hermes.example.com does not match any trusted origins.'",
        "zh": "结账提交时报错：CSRF verification failed. Origin checking failed - "
        "https://hermes.example.com does not match any trusted origins.",
        "before": {"proto": False},
        "status": 403,
        "after": {"proto": True},
        "check": "grep -n -E 'SECURE_PROXY_SSL_HEADER|CSRF_TRUSTED_ORIGINS' crumb/settings/prod.py",
        "check_out": '41:SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")',
        "expl_en": "Django trusts `X-Forwarded-Proto`, but hermes.conf doesn't send it, so "
        "Django thinks the request is plain http and the https Origin doesn't match. Adding "
        "the header (plus `CSRF_TRUSTED_ORIGINS` for safety) fixes it.",
        "expl_zh": "Django配置了信任 `X-Forwarded-Proto`，但 hermes.conf 没有传这个头，"
        "Django以为请求是http，和https的Origin对不上。加上这个头（再保险加上 "
        "`CSRF_TRUSTED_ORIGINS`）就好了。",
    },
]


def _sc_nginx(b: _Builder, lang: str, v: int) -> None:
    spec = _NGINX_VARIANTS[v % len(_NGINX_VARIANTS)]
    conf_path = "/etc/nginx/sites-enabled/hermes.conf"
    before = _nginx_conf(**spec["before"])
    after = _nginx_conf(**spec["after"])
    b.user(_pick(lang, spec["en"], spec["zh"]))
    b.call(
        ("read_file", {"path": conf_path}, before),
        ("run_shell", _shell(spec["check"]), spec["check_out"]),
        (
            "run_shell",
            _shell("tail -n 40 /var/log/nginx/hermes.access.log", cwd="/"),
            _access_log(b.rng, b.day, 40, spec["status"]),
        ),
        text=_pick(
            lang,
            "Reading the site config, the access log, and checking the other side.",
            "看一下站点配置和访问日志，同时检查另一边。",
        ),
    )
    b.assistant(_pick(lang, spec["expl_en"], spec["expl_zh"]))
    b.call(
        (
            "write_file",
            {"path": conf_path, "content": after},
            f"Wrote {len(after)} bytes to {conf_path}",
        )
    )
    b.call(
        (
            "run_shell",
            _shell("sudo nginx -t && sudo systemctl reload nginx", cwd="/"),
            "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n"
            "nginx: configuration file /etc/nginx/nginx.conf test is successful",
        ),
    )
    b.call(
        (
            "run_shell",
            _shell(
                "curl -sS -o /dev/null -w '%{http_code} %{time_total}s\\n' "
                "https://hermes.example.com/",
                cwd="/",
            ),
            f"200 0.{b.rng.randint(41, 97):02d}1842s",
        ),
    )
    b.assistant(
        _pick(
            lang,
            "Fixed in `/etc/nginx/sites-enabled/hermes.conf`, `nginx -t` passes, reloaded "
            "without dropping connections, and the homepage answers 200 again. I also copied "
            "the change into `deploy/nginx-hermes.conf` so the repo and the server don't drift.",
            "已经改好 `/etc/nginx/sites-enabled/hermes.conf`，`nginx -t` 通过，平滑reload，"
            "首页恢复200。"
            "我也把改动同步到了仓库里的 `deploy/nginx-hermes.conf`，免得服务器和代码不一致。",
        )
    )


def _sc_log_search(b: _Builder, lang: str, v: int) -> None:
    rng = b.rng
    if v % 3 == 0:
        b.user(
            _pick(
                lang,
                "Find the timeout errors in the logs from this morning."
                + (" Same drill as last week." if v >= 3 else ""),
                ("还是像上周那样，" if v >= 3 else "") + "把日志里的超时错误找出来，今天上午的。",
            )
        )
        kinds = ["redis_timeout", "worker_timeout"] if v >= 3 else ["redis_timeout", "db_timeout"]
        app = _app_log(rng, b.day, 200, [*kinds, "worker_timeout"])
        app_hits = "\n".join(
            line for line in app.splitlines() if "imeout" in line or "TIMEOUT" in line
        )
        nginx = _nginx_error_log(rng, b.day, 22, "timeout")
        b.call(
            (
                "search_logs",
                {
                    "path": "/var/log/crumb/app.log",
                    "pattern": "timeout|TIMEOUT",
                    "since": f"{_date(b.day)}T06:00",
                },
                _search_result("/var/log/crumb/app.log", "timeout|TIMEOUT", app_hits, rng),
            ),
            (
                "search_logs",
                {
                    "path": "/var/log/nginx/hermes.error.log",
                    "pattern": "timed out",
                    "since": f"{_date(b.day)}T06:00",
                },
                _search_result("/var/log/nginx/hermes.error.log", "timed out", nginx, rng),
            ),
            text=_pick(
                lang,
                "Searching the app log and the nginx error log in parallel.",
                "同时搜应用日志和nginx错误日志。",
            ),
        )
        if v >= 3:
            b.assistant(
                _pick(
                    lang,
                    "Good news first: no Postgres statement timeouts since last week's index. "
                    "What's left is Redis read timeouts on `/cart/` and the gunicorn worker "
                    "timeouts they cause, all between 09:58 and 10:03 — right when the catalog "
                    "缓存 (cache) expires after the morning price update and gets rebuilt.",
                    "先说好消息：上周加了索引以后，再也没有Postgres语句超时了。剩下的是 `/cart/` "
                    "上的Redis"
                    "读取超时，以及由它引起的gunicorn worker超时，全部集中在09:58到10:03之间，"
                    "正好是早上改价以后商品目录缓存过期、重新生成的时候。",
                )
            )
            b.user(_pick(lang, "Would warming the cache help?", "缓存预热能解决吗？"))
            beat = (
                "CELERY_BEAT_SCHEDULE = {\n"
                '    "warm-catalog-cache": {\n'
                '        "task": "catalog.tasks.warm_catalog_cache",\n'
                '        "schedule": 240.0,\n'
                "    },\n"
                "}\n"
            )
            b.call(
                (
                    "write_file",
                    {"path": "/srv/crumb/crumb/settings/base.py", "content": beat},
                    f"Appended {len(beat)} bytes to /srv/crumb/crumb/settings/base.py",
                ),
                (
                    "run_shell",
                    _shell(
                        "sudo systemctl restart crumb-celery-beat && sleep 3 && sudo "
                        "journalctl -u crumb-celery-beat -n 2 --no-pager"
                    ),
                    "celery beat v5.3.6 (emerald-rush) is starting.\n"
                    "Scheduler: Sending due task warm-catalog-cache "
                    "(catalog.tasks.warm_catalog_cache)",
                ),
            )
            b.assistant(
                _pick(
                    lang,
                    "Yes: a Celery beat task now rebuilds the catalog cache every 4 minutes, "
                    "before the 5 minute TTL runs out, so customers never hit a cold cache and "
                    "Redis never sees the burst of large writes.",
                    "可以：现在有一个Celery beat定时任务每4分钟重建一次商品目录缓存，"
                    "在5分钟过期之前就刷新好，用户不会碰到冷缓存，Redis也不会再有一大波写入。",
                )
            )
        else:
            b.assistant(
                _pick(
                    lang,
                    "Three kinds of timeouts, in order of how much they hurt:\n"
                    "1. **Redis read timeouts** on `/cart/` — the cart lives in the cache, "
                    "so every one of these is a 500 for a customer.\n"
                    "2. **Postgres statement timeouts** (30 s) on the order history query — "
                    "missing index on `(customer_id, created_at)`.\n"
                    "3. **gunicorn WORKER TIMEOUT** — a worker got stuck behind one of the above, "
                    "nginx then logs `upstream timed out` for the same requests.\n\n"
                    "So the nginx lines are a symptom; the root causes are Redis and one slow "
                    "query.",
                    "超时错误一共三类，按影响大小排序：\n"
                    "1. **Redis读取超时**，出现在 `/cart/`。购物车存在缓存里，"
                    "所以每一条都是用户看到的500。\n"
                    "2. **Postgres语句超时**（30秒），是订单历史的查询，缺少 `(customer_id, "
                    "created_at)` 索引。\n"
                    "3. **gunicorn WORKER TIMEOUT**：worker被上面两种卡住，nginx就对同样的请求记录 "
                    "`upstream timed out`。\n\n"
                    "所以nginx的日志只是表象，根本原因是Redis和一个慢查询。",
                )
            )
            b.user(_pick(lang, "Add the index then.", "那就把索引加上吧。"))
            b.call(
                (
                    "run_shell",
                    _shell(
                        "python manage.py makemigrations orders -n "
                        "order_customer_created_idx && python manage.py migrate orders"
                    ),
                    "Migrations for 'orders':\n  orders/migrations/0008_order_customer_created_idx."
                    "py\n"
                    "    - Create index orders_orde_custome_5b1e2c_idx on field(s) customer, "
                    "-created_at of model order\nOperations to perform:\n  Apply all migrations: "
                    "orders\nRunning migrations:\n  Applying orders.0008_order_customer_created_idx"
                    "..."
                    " OK",
                )
            )
            b.assistant(
                _pick(
                    lang,
                    "Index created; the history query now takes ~4 ms instead of timing out.",
                    "索引已经建好，订单历史查询从超时降到大约 4 毫秒。",
                )
            )
    elif v % 3 == 1:
        b.user(
            _pick(
                lang,
                ("Even with the thread workers, c" if v >= 3 else "C")
                + "ustomers saw a few 502s around lunch. Can you check what happened?",
                ("都已经换成多线程worker了，" if v >= 3 else "")
                + "中午有客户看到了502，查一下日志发生了什么？",
            )
        )
        nginx = _nginx_error_log(rng, b.day, 22, "closed")
        app = _app_log(rng, b.day, 70, ["worker_timeout"], start_hour=11)
        b.call(
            (
                "search_logs",
                {"path": "/var/log/nginx/hermes.error.log", "pattern": "prematurely closed"},
                _search_result("/var/log/nginx/hermes.error.log", "prematurely closed", nginx, rng),
            ),
            (
                "run_shell",
                _shell("sed -n '/ 11:5/,/ 12:3/p' /var/log/crumb/app.log | head -n 70", cwd="/"),
                _cap("\n".join(app.splitlines()[:70])),
            ),
        )
        if v >= 3:
            b.assistant(
                _pick(
                    lang,
                    "Not the workers this time. Every `WORKER TIMEOUT` is a request to "
                    "`/api/delivery-slots/`: the new endpoint counts bookings with one query "
                    "per slot and no index on `orders_order.delivery_slot_id`, and the lunch "
                    "rush is when everybody picks a slot. Adding the index and reading "
                    "`booked` from the slot row (it's kept up to date atomically) fixes it.",
                    "这次不是worker数量的问题。所有 `WORKER TIMEOUT` 都是 `/api/delivery-slots/` "
                    "的请求："
                    "新接口每个时段单独查一次预订数，而且 `orders_order.delivery_slot_id` "
                    "没有索引；"
                    "午高峰正好是大家选配送时段的时候。加上索引，并直接读时段上的 `booked` 字段"
                    "（它是原子更新的）就能解决。",
                )
            )
        else:
            b.assistant(
                _pick(
                    lang,
                    "The 502s line up exactly with gunicorn `WORKER TIMEOUT` + reboot "
                    "messages. We run 5 sync workers with a 30 s timeout; the lunch rush plus "
                    "the slow `/catalog/` page (200+ queries) is enough to block them all. "
                    "Short term: `gthread` workers with 4 threads each. Real fix: the N+1 "
                    "queries on the catalog page.",
                    "502和gunicorn的 `WORKER TIMEOUT` 以及worker重启的日志时间完全对得上。"
                    "我们有5个同步worker，超时30秒；午高峰加上很慢的 `/catalog/` 页面"
                    "（200多条查询）就能把它们全部堵住。临时办法：改成 `gthread` worker，"
                    "每个4线程。"
                    "根本解决：修掉商品页的N+1查询。",
                )
            )
    else:
        b.user(
            _pick(
                lang,
                "Show me the slow requests from today, anything above one second.",
                "把今天超过一秒的慢请求找出来给我看看。",
            )
        )
        app = _app_log(rng, b.day, 220, ["slow"], start_hour=8)
        hits = "\n".join(line for line in app.splitlines() if "slow request" in line)
        b.call(
            (
                "search_logs",
                {"path": "/var/log/crumb/app.log", "pattern": "slow request"},
                _search_result("/var/log/crumb/app.log", "slow request", hits, rng),
            )
        )
        b.assistant(
            _pick(
                lang,
                "All slow requests are `GET /catalog/`, with 90-260 queries each and a cache "
                "hit ratio around 40-70%. That's the product list rendering categories, images "
                "and review counts one query at a time.",
                "所有慢请求都是 `GET /catalog/`，每次90到260条查询，缓存命中率只有40%到70%左右。"
                "问题在于商品列表页逐条查询分类、图片和评价数量。",
            )
        )


_REDIS_VARIANTS: list[dict[str, str]] = [
    {
        "en": "Customers get 'Something went wrong (ERR_CONN_RESET_4471)' on the cart page, maybe "
        "one request in fifty. That code comes from our cache wrapper. What's going on?",
        "zh": "购物车页面偶尔报 'Something went wrong (ERR_CONN_RESET_4471)'，"
        "大概五十次请求里有一次。"
        "这个错误码是我们缓存封装里的。怎么回事？",
        "ping": "PONG",
        "expl_en": "Redis itself is healthy, but the connection gets reset: `timeout 60` in "
        "redis.conf closes idle connections after 60 s, and our pool hands out those dead "
        "sockets. ERR_CONN_RESET_4471 is what `crumb.cache.safe_get` raises when the first "
        "read on such a socket fails.",
        "expl_zh": "Redis本身是正常的，但连接被重置了：redis.conf里 `timeout 60` "
        "会在空闲60秒后关闭连接，"
        "而我们的连接池还会把这些失效的socket拿出来用。"
        "ERR_CONN_RESET_4471 就是 `crumb.cache.safe_get` 在这种socket上第一次读失败时抛出的。",
    },
    {
        "en": "Redis timeouts again under load: 'Timeout reading from socket'. The dashboard shows "
        "Redis CPU at 100% for a few seconds every time the catalog cache expires.",
        "zh": "高峰期又出现Redis超时：'Timeout reading from socket'。"
        "监控显示每次商品目录的缓存过期，"
        "Redis CPU就会有几秒到100%。",
        "ping": "Timeout connecting to server (10.0.3.12:6379) after 0.5 s",
        "expl_en": "Classic cache stampede: the catalog key expires, 40 workers miss at the "
        "same moment, all rebuild the same 2 MB page and write it back. Redis is single-"
        "threaded, so those big SETs block everything else and our 0.5 s socket timeout fires.",
        "expl_zh": "典型的缓存击穿：商品目录的key一过期，40个worker同时未命中，全都重新生成同一个2 "
        "MB的页面再写回去。"
        "Redis是单线程的，这些大的SET把其他请求都堵住了，于是触发了我们0.5秒的socket超时。",
    },
    {
        "en": "After the Redis restart last night everybody got logged out and carts are empty. "
        "Is that expected?",
        "zh": "昨晚Redis重启以后所有人都被登出了，购物车也空了。这正常吗？",
        "ping": "PONG",
        "expl_en": "Yes, with the current settings: `SESSION_ENGINE` is the pure cache backend "
        'and Redis has no persistence (`save ""`, no AOF). A restart wipes sessions and '
        "carts.",
        "expl_zh": "按现在的配置是正常的：`SESSION_ENGINE` 用的是纯缓存后端，Redis又没开持久化"
        '（`save ""`，也没开AOF），所以一重启会话和购物车就都没了。',
    },
]

_CACHES_SETTINGS = """\
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": env("REDIS_URL", default="redis://10.0.3.12:6379/1"),
        "TIMEOUT": 300,
        "OPTIONS": {
            "CLIENT_CLASS": "django_redis.client.DefaultClient",
            "SOCKET_CONNECT_TIMEOUT": 0.5,
            "SOCKET_TIMEOUT": 0.5,
            "CONNECTION_POOL_KWARGS": {"max_connections": 50},
        },
        "KEY_PREFIX": "crumb",
    }
}
SESSION_ENGINE = "django.contrib.sessions.backends.cache"
"""


def _sentry_event(day: int, v: int) -> str:
    error = (
        "CacheBackendError: ERR_CONN_RESET_4471"
        if v % 3 == 0
        else "TimeoutError: Timeout reading from socket"
    )
    frames = [
        ("orders/views.py", 41, "cart_detail", "cart = Cart(request)"),
        ("orders/cart.py", 58, "get_cart", 'raw = safe_get(f"cart:{request.user.pk}")'),
        ("crumb/cache.py", 27, "safe_get", "return cache.get(key)"),
        ("django_redis/cache.py", 91, "get", "return self.client.get(key, default=default)"),
        ("django_redis/client/default.py", 258, "get", "value = client.get(key)"),
        ("redis/commands/core.py", 1829, "get", 'return self.execute_command("GET", name)'),
        ("redis/client.py", 536, "execute_command", "return conn.retry.call_with_retry("),
        ("redis/connection.py", 515, "read_response", "response = self._parser.read_response("),
    ]
    lines = [
        "",
        "",
        "Sentry event pasted from the dashboard:",
        "```",
        f"{error}",
        f"  project: crumb-prod   environment: production   release: crumb@0.{day}.0",
        f"  first seen: {_date(day)} 08:12 UTC   events (24h): {312 + v * 97}   "
        f"users: {141 + v * 33}",
        "  url: https://hermes.example.com/cart/   transaction: orders.views.cart_detail",
        "  tags: browser=Mobile Safari 17.3, server_name=hermes, level=error",
        "",
        "Stack trace (most recent call last):",
    ]
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    lines.append("```")
    return "\n".join(lines)


def _sc_redis(b: _Builder, lang: str, v: int) -> None:
    spec = _REDIS_VARIANTS[v % len(_REDIS_VARIANTS)]
    again = v >= len(_REDIS_VARIANTS)
    b.user(
        _pick(
            lang,
            ("It's back, after a quiet week. " if again else "") + spec["en"],
            ("又出现了，安静了一个星期。" if again else "") + spec["zh"],
        )
        + (_sentry_event(b.day, v) if v % 3 != 2 else "")
    )
    ping = ("run_shell", _shell("redis-cli -h 10.0.3.12 -p 6379 ping"), spec["ping"])
    b.call(
        ping,
        ("read_file", {"path": "/srv/crumb/crumb/settings/prod.py"}, _CACHES_SETTINGS),
        text=_pick(lang, "Checking Redis and our cache settings.", "检查一下Redis和缓存配置。"),
    )
    # The very same command again, with the very same result.
    b.call(
        ping, text=_pick(lang, "Once more to see if it's consistent.", "再试一次看是否稳定复现。")
    )
    info = "\n".join(
        [
            "# Clients",
            f"connected_clients:{38 + v * 7}",
            "blocked_clients:0",
            "# Memory",
            f"used_memory_human:{212 + v * 31}.{v + 3}4M",
            "maxmemory_human:1.00G",
            "maxmemory_policy:allkeys-lru",
            "# Persistence",
            "rdb_last_save_time:0" if v == 2 else "rdb_last_bgsave_status:ok",
            "aof_enabled:0",
            "# Stats",
            f"total_connections_received:{184_220 + v * 991}",
            f"keyspace_hits:{9_841_000 + v * 1234}",
            f"keyspace_misses:{1_204_551 + v * 777}",
            f"evicted_keys:{v * 14}",
            "# Config",
            "timeout:60" if v % 3 == 0 else "timeout:0",
        ]
    )
    b.call(
        (
            "run_shell",
            _shell(
                "redis-cli -h 10.0.3.12 info | grep -E "
                "'clients|memory_human|policy|aof|rdb|keyspace|evicted|timeout'"
            ),
            info,
        ),
        (
            "run_shell",
            _shell("redis-cli -h 10.0.3.12 slowlog get 24"),
            _redis_slowlog(b.rng, 24),
        ),
    )
    if again:
        b.assistant(
            _pick(
                lang,
                "Same symptom as on Day 3 and the same mechanism: Redis closes connections that "
                "are idle for 60 s and the pool hands out the dead socket. But our fix is gone: "
                "the `CACHES` block in `crumb/settings/prod.py` no longer has "
                "`health_check_interval` or `retry_on_timeout`. The `min/prod-logging` branch "
                "was cut before Day 3 and its merge put the old block back.",
                "和第3天一样的现象、一样的原因：Redis会关闭空闲60秒的连接，连接池又把失效的socket拿出来用。"
                "但是我们当时的修复不见了：`crumb/settings/prod.py` 里的 `CACHES` 已经没有 "
                "`health_check_interval` 和 `retry_on_timeout`。`min/prod-logging` "
                "分支是在第3天之前创建的，合并时把旧的配置带回来了。",
            )
        )
    else:
        b.assistant(_pick(lang, spec["expl_en"], spec["expl_zh"]))
    if v % 3 == 0:
        new = _CACHES_SETTINGS.replace(
            '"CONNECTION_POOL_KWARGS": {"max_connections": 50},',
            '"CONNECTION_POOL_KWARGS": {\n'
            '                "max_connections": 50,\n'
            '                "health_check_interval": 30,\n'
            '                "retry_on_timeout": True,\n'
            "            },",
        )
        fix_en = (
            "Added `health_check_interval: 30` (the pool pings connections idle for more "
            "than 30 s before using them) and `retry_on_timeout`. `safe_get` now retries "
            "once before raising ERR_CONN_RESET_4471."
        )
        fix_zh = (
            "加了 `health_check_interval: 30`（连接空闲超过30秒，使用前先ping一下）和 "
            "`retry_on_timeout`。`safe_get` 现在会先重试一次，失败了才抛 ERR_CONN_RESET_4471。"
        )
    elif v % 3 == 1:
        new = _CACHES_SETTINGS.replace(
            '"TIMEOUT": 300,', '"TIMEOUT": 300,  # + jitter, see catalog/cache.py'
        )
        fix_en = (
            "Catalog cache now uses a lock (`cache.add('lock:catalog', 1, 30)`) so only "
            "one worker rebuilds, others serve the stale copy; TTLs get ±10% jitter."
        )
        fix_zh = (
            "商品目录的缓存现在加了锁（`cache.add('lock:catalog', 1, 30)`），"
            "只有一个worker负责重建，"
            "其他的先返回旧数据；过期时间加了±10%的随机抖动。"
        )
    else:
        new = _CACHES_SETTINGS.replace(
            'SESSION_ENGINE = "django.contrib.sessions.backends.cache"',
            'SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"',
        )
        fix_en = (
            "Sessions now use `cached_db`: reads come from Redis, writes go to both, so a "
            "Redis restart no longer logs people out. Carts are tied to the session, so "
            "they survive too."
        )
        fix_zh = (
            "会话改成了 `cached_db`：读的时候走Redis，写的时候Redis和数据库都写，"
            "所以Redis重启不会再把用户登出。"
            "购物车是跟会话绑定的，也能保留下来。"
        )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/crumb/settings/prod.py", "content": new},
            "Wrote 1 file, 6 lines changed",
        )
    )
    if again:
        fix_en = (
            "Restored `health_check_interval` and `retry_on_timeout`, and added "
            "`crumb/tests/test_settings_prod.py`, which imports the production settings and "
            "fails if either option is missing, so a stale branch can't silently undo it again."
        )
        fix_zh = (
            "已经恢复 `health_check_interval` 和 `retry_on_timeout`，并新增了 "
            "`crumb/tests/test_settings_prod.py`：它导入生产配置，缺少这两个选项就会失败，"
            "这样旧分支就不能再悄悄把修复覆盖掉。"
        )
    b.assistant(_pick(lang, fix_en, fix_zh))
    follow_ups = [
        (
            "Is our cache even worth it? What's the hit rate?",
            "我们的缓存到底有没有用？命中率是多少？",
            f"From `info`: {9_841_000 + v * 1234:,} hits vs {1_204_551 + v * 777:,} misses, "
            "so roughly an 89% hit rate. Without the cache the catalog page would do ~200 "
            "queries per request, so yes, it's worth it — we just have to treat Redis as "
            "something that can disappear.",
            f"根据 `info`：命中 {9_841_000 + v * 1234:,} 次，未命中 {1_204_551 + v * 777:,} 次，"
            "命中率大约89%。没有缓存的话，商品页每个请求要查大约200次数据库，所以缓存很有用，"
            "只是我们要把Redis当成随时可能消失的东西来设计。",
        ),
        (
            "Why not simply make the catalog TTL much longer, like a day?",
            "为什么不干脆把商品目录的缓存时间设长一点，比如一天？",
            "Because prices and stock change during the day, and a stale catalog sells bread "
            "we no longer have. A long TTL only hides the stampede until the day it expires at "
            "lunchtime. The lock plus jitter fixes the cause; invalidation on save keeps it "
            "fresh.",
            "因为价格和库存一天之内会变，缓存太旧就会卖出已经没有的面包。TTL设长只是把缓存击穿推迟到"
            "某一天的午高峰才发生。加锁和随机抖动解决的是根本原因，保存商品时主动失效保证数据新鲜。",
        ),
        (
            "Should we turn on Redis persistence (AOF) instead?",
            "那要不要干脆打开Redis的持久化（AOF）？",
            "Not for this. With `cached_db` the database is the source of truth for sessions, "
            "so Redis can stay a pure cache: faster restarts, no fsync cost, and nothing to "
            "back up. AOF would make sense if we ever put data only in Redis, e.g. rate-limit "
            "counters we care about.",
            "这个场景不需要。改成 `cached_db` 以后会话以数据库为准，Redis可以继续只做缓存："
            "重启更快、没有fsync开销、也不用备份。只有当某些数据只存在Redis里（比如需要保留的限流计数）"
            "时，才值得开AOF。",
        ),
        (
            "How do we make sure this doesn't regress a third time?",
            "怎么保证这个问题不会第三次出现？",
            "Three things: the new settings test fails CI if the pool options disappear; "
            "ERR_CONN_RESET_4471 now has its own Sentry alert (more than 5 per hour mails "
            "ops-team@example.com); and long-lived branches get rebased on main before merging "
            "— that's now in the PR template.",
            "三件事：新的配置测试会在连接池选项丢失时让CI失败；ERR_CONN_RESET_4471 "
            "单独设置了Sentry告警"
            "（每小时超过5次就发邮件给 ops-team@example.com）；长期分支合并前必须先rebase到main，"
            "已经写进PR模板了。",
        ),
    ]
    q_en, q_zh, a_en, a_zh = follow_ups[3 if again else v % 3]
    b.user(_pick(lang, q_en, q_zh))
    b.assistant(_pick(lang, a_en, a_zh))


_DEPLOY_STATUS = """\
● crumb-gunicorn.service - Crumb & Co gunicorn
     Loaded: loaded (/etc/systemd/system/crumb-gunicorn.service; enabled; preset: enabled)
     Active: active (running)
   Main PID: 21001 (gunicorn)
      Tasks: 21 (limit: 4557)
     Memory: 412.6M
        CPU: 7.214s
     CGroup: /system.slice/crumb-gunicorn.service
             ├─21001 /srv/crumb/.venv/bin/python /srv/crumb/.venv/bin/gunicorn crumb.wsgi
             ├─21004 /srv/crumb/.venv/bin/python /srv/crumb/.venv/bin/gunicorn crumb.wsgi
             ├─21005 /srv/crumb/.venv/bin/python /srv/crumb/.venv/bin/gunicorn crumb.wsgi
             ├─21006 /srv/crumb/.venv/bin/python /srv/crumb/.venv/bin/gunicorn crumb.wsgi
             ├─21007 /srv/crumb/.venv/bin/python /srv/crumb/.venv/bin/gunicorn crumb.wsgi
             └─21008 /srv/crumb/.venv/bin/python /srv/crumb/.venv/bin/gunicorn crumb.wsgi
"""


def _collectstatic_output(rng: random.Random, n: int) -> str:
    files = [
        "admin/css/base.css",
        "admin/css/changelists.css",
        "admin/css/dashboard.css",
        "admin/css/forms.css",
        "admin/css/login.css",
        "admin/css/responsive.css",
        "admin/css/widgets.css",
        "admin/js/actions.js",
        "admin/js/calendar.js",
        "admin/js/core.js",
        "admin/js/inlines.js",
        "admin/js/jquery.init.js",
        "admin/js/urlify.js",
        "admin/img/icon-addlink.svg",
        "admin/img/search.svg",
        "css/site.css",
        "css/cart.css",
        "css/checkout.css",
        "js/cart.js",
        "js/checkout.js",
        "js/flags.js",
        "img/logo.svg",
        "img/hero-sourdough.webp",
        "img/hero-croissant.webp",
    ]
    files += [
        f"admin/js/vendor/select2/i18n/{code}.js"
        for code in [
            "af",
            "ar",
            "az",
            "bg",
            "bn",
            "bs",
            "ca",
            "cs",
            "da",
            "de",
            "dsb",
            "el",
            "en",
            "es",
            "et",
            "eu",
            "fa",
            "fi",
            "fr",
            "gl",
            "he",
            "hi",
            "hr",
            "hsb",
            "hu",
            "hy",
            "id",
            "is",
            "it",
            "ja",
            "ka",
            "km",
            "ko",
            "lt",
            "lv",
            "mk",
            "ms",
            "nb",
            "ne",
            "nl",
            "pl",
            "ps",
            "pt",
            "pt-BR",
            "ro",
            "ru",
            "sk",
            "sl",
            "sq",
            "sr",
            "sr-Cyrl",
            "sv",
            "th",
            "tk",
            "tr",
            "uk",
            "vi",
            "zh-CN",
            "zh-TW",
        ]
    ]
    lines = []
    for f in files[:n]:
        digest = hashlib.md5(f"{f}:{rng.randint(0, 9)}".encode(), usedforsecurity=False)
        lines.append(
            f"Post-processed '{f}' as '{f.rsplit('.', 1)[0]}.{digest.hexdigest()[:12]}."
            f"{f.rsplit('.', 1)[1]}'"
        )
    lines.append("")
    lines.append(
        f"{n} static files copied to '/srv/crumb/staticfiles', {184 - n} unmodified, "
        f"{n * 2} post-processed."
    )
    return "\n".join(lines)


def _sc_deploy(b: _Builder, lang: str, v: int) -> None:
    rng = b.rng
    tag = f"v0.{v + 1}.{rng.randint(0, 4)}" if v < 9 else "v1.0.0"
    b.user(
        _pick(
            lang,
            f"Looks good. Let's deploy {tag} to hermes.",
            f"没问题了，把 {tag} 部署到hermes上吧。",
        )
    )
    commits = "\n".join(
        f"{hashlib.sha1(f'{tag}{i}'.encode(), usedforsecurity=False).hexdigest()[:7]} "
        + rng.choice(
            [
                "Fix coupon rounding in checkout",
                "Add delivery slot picker",
                "Catalog: prefetch images and review counts",
                "nginx: forward X-Forwarded-Proto",
                "Cache: retry once on connection reset",
                "Accounts: throttle failed logins",
                "Orders: index on (customer, created_at)",
                "Flags: sticky percentage rollout",
                "Search: use websearch_to_tsquery",
                "Notifications: send alerts to ops-team@example.com",
            ]
        )
        for i in range(rng.randint(4, 9))
    )
    b.call(
        (
            "run_shell",
            _shell(
                f"git fetch --tags && git checkout {tag} && git log --oneline "
                f"{tag}~{commits.count(chr(10)) + 1}..{tag}"
            ),
            f"HEAD is now at {commits[:7]} {commits.splitlines()[0][8:]}\n{commits}",
        ),
        text=_pick(
            lang, "Deploying. Step 1: check out the tag.", "开始部署。第一步：切到这个tag。"
        ),
    )
    b.call(
        (
            "run_shell",
            _shell(
                ".venv/bin/pip install -q -r requirements.txt && "
                ".venv/bin/python manage.py migrate --noinput"
            ),
            "Operations to perform:\n  Apply all migrations: accounts, admin, auth, catalog, "
            "contenttypes, flags, orders, sessions\nRunning migrations:\n  No migrations to apply.",
        ),
        (
            "run_shell",
            _shell(".venv/bin/python manage.py collectstatic --noinput"),
            _collectstatic_output(rng, min(20 + v * 6, 70)),
        ),
    )
    b.call(
        (
            "run_shell",
            _shell(
                "sudo systemctl restart crumb-gunicorn crumb-celery && sudo "
                "systemctl status crumb-gunicorn --no-pager"
            ),
            _DEPLOY_STATUS,
        )
    )
    health = json.dumps({"status": "ok", "version": tag, "db": "ok", "cache": "ok", "celery": "ok"})
    b.call(
        ("run_shell", _shell("curl -sS https://hermes.example.com/healthz", cwd="/"), health),
        (
            "search_logs",
            {"path": "/var/log/crumb/app.log", "pattern": "ERROR", "since": "5 minutes ago"},
            "search_logs: file=/var/log/crumb/app.log pattern='ERROR' matches=0",
        ),
        (
            "run_shell",
            _shell("tail -n 60 /var/log/crumb/gunicorn.log", cwd="/"),
            _gunicorn_tail(rng, b.day, 5, tag),
        ),
        text=_pick(
            lang,
            "Health check and a quick look for new errors.",
            "做健康检查，顺便看看有没有新错误。",
        ),
    )
    # Same status command again a minute later: identical output.
    b.call(
        ("run_shell", _shell("sudo systemctl status crumb-gunicorn --no-pager"), _DEPLOY_STATUS),
        text=_pick(
            lang,
            "Checking the service is still stable a minute later.",
            "一分钟后再确认服务是否稳定。",
        ),
    )
    b.assistant(
        _pick(
            lang,
            f"{tag} is live on hermes: migrations were already applied, static files collected, "
            "gunicorn (5 workers) and Celery restarted, `/healthz` reports db, cache and celery "
            "ok, and there are no new errors in the app log.",
            f"{tag} 已经上线：迁移之前已执行过，静态文件已收集，gunicorn（5个worker）"
            "和Celery已重启，"
            "`/healthz` 显示数据库、缓存、celery都正常，应用日志里没有新错误。",
        )
    )


def _sc_feature_flag(b: _Builder, lang: str, v: int) -> None:
    b.user(
        "The new one-page checkout is ready. I want a feature-flag-rollout for it: first 5% of "
        "logged-in users, then 25%, 50%, finally 100%. A user who got it should keep it when we "
        "go up. Name the flag `new_checkout`. Anonymous visitors get the old one until 100%."
    )
    rollout = (
        "import hashlib\n\n"
        "from .models import Flag\n\n\n"
        "def bucket(flag_name: str, user_id: int) -> int:\n"
        '    """Stable bucket 0..99 for a (flag, user) pair."""\n'
        '    digest = hashlib.sha256(f"{flag_name}:{user_id}".encode()).hexdigest()\n'
        "    return int(digest[:8], 16) % 100\n\n\n"
        "def is_enabled(name: str, user) -> bool:\n"
        "    flag = Flag.objects.get_cached(name)\n"
        "    if flag is None or flag.rollout_percent <= 0:\n"
        "        return False\n"
        "    if flag.rollout_percent >= 100:\n"
        "        return True\n"
        "    if not user.is_authenticated:\n"
        "        return False\n"
        "    return bucket(name, user.pk) < flag.rollout_percent\n"
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/flags/rollout.py", "content": rollout},
            "Wrote 612 bytes to /srv/crumb/flags/rollout.py",
        ),
        (
            "write_file",
            {
                "path": "/srv/crumb/flags/models.py",
                "content": "class Flag(models.Model):\n    name = models.SlugField("
                "unique=True)\n    rollout_percent = models.PositiveSmallIntegerField("
                "default=0, validators=[MaxValueValidator(100)])\n",
            },
            "Wrote 431 bytes to /srv/crumb/flags/models.py",
        ),
        text="Sticky buckets via a hash of flag name + user id, so raising the percentage only "
        "ever adds users.",
    )
    test_out = "\n".join(
        [
            "flags/tests/test_rollout.py::test_zero_percent_nobody PASSED",
            "flags/tests/test_rollout.py::test_hundred_percent_everybody_even_anonymous PASSED",
            "flags/tests/test_rollout.py::test_bucket_is_stable PASSED",
            "flags/tests/test_rollout.py::test_raising_percent_only_adds_users PASSED",
            "flags/tests/test_rollout.py::test_distribution_close_to_target[5] PASSED",
            "flags/tests/test_rollout.py::test_distribution_close_to_target[25] PASSED",
            "flags/tests/test_rollout.py::test_distribution_close_to_target[50] PASSED",
            "",
            "---- distribution over 10000 synthetic users ----",
            "target  5%  -> actual  4.9%",
            "target 25%  -> actual 25.3%",
            "target 50%  -> actual 49.8%",
            "target 100% -> actual 100.0%",
            "",
            "7 passed in 2.31s",
        ]
    )
    b.call(("run_tests", {"target": "flags", "args": "-v"}, test_out))
    b.assistant(
        "The feature-flag-rollout is in: `flags.rollout.is_enabled('new_checkout', user)`. "
        "Buckets are stable, so moving from 5% to 25% keeps the first 5% and adds more. At 100% "
        "everyone, including anonymous visitors, gets the new checkout. The distribution test "
        "over 10,000 fake users lands within 0.3 points of each target."
    )
    b.user(
        "Great. Grep for any place that still checks the old setting `NEW_CHECKOUT_ENABLED`. "
        "Also someone wrote `'%s%%' % pct` somewhere for the admin label, make it a proper "
        "f-string."
    )
    grep_out = "\n".join(
        [
            "orders/views.py:14:from django.conf import settings",
            "orders/views.py:88:    if settings.NEW_CHECKOUT_ENABLED:",
            "templates/orders/cart.html:31:{% if settings.NEW_CHECKOUT_ENABLED %}",
            "crumb/settings/base.py:97:NEW_CHECKOUT_ENABLED = env.bool('NEW_CHECKOUT', False)",
            "flags/admin.py:19:        return '%s%%' % obj.rollout_percent",
        ]
    )
    b.call(
        (
            "run_shell",
            _shell('grep -rn -E "NEW_CHECKOUT_ENABLED|%s%%" --include=*.py --include=*.html .'),
            grep_out,
        )
    )
    b.call(
        (
            "write_file",
            {
                "path": "/srv/crumb/flags/admin.py",
                "content": '        return f"{obj.rollout_percent}%"\n',
            },
            "Wrote 1 line change to /srv/crumb/flags/admin.py",
        ),
        (
            "write_file",
            {
                "path": "/srv/crumb/orders/views.py",
                "content": '    if is_enabled("new_checkout", request.user):\n',
            },
            "Wrote 2 line changes to /srv/crumb/orders/views.py",
        ),
    )
    b.assistant(
        "Replaced both uses of `NEW_CHECKOUT_ENABLED` with the flag (the template now gets "
        "`use_new_checkout` from the view), removed the setting, and the admin label is now "
        '`f"{obj.rollout_percent}%"`, which shows e.g. `25%` or `100%`.'
    )


def _sc_search_sanitize(b: _Builder, lang: str, v: int) -> None:
    b.user(
        'Bug from Maria: typing NOT "AND" (x OR y) into the product search box gives a 500. '
        "Also `100%` and a lone `%` crash it. I bet it's our raw tsquery. Can you fix it without "
        'breaking normal searches like "rye bread" or "almond -chocolate"?'
    )
    search_py = (
        "from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector\n\n"
        "from .models import Product\n\n\n"
        "def search_products(q: str):\n"
        '    vector = SearchVector("name", weight="A") + SearchVector("description", '
        'weight="B")\n'
        '    query = SearchQuery(q.replace(" ", " & "), search_type="raw", config="english")\n'
        "    return (\n"
        "        Product.objects.filter(is_active=True)\n"
        "        .annotate(rank=SearchRank(vector, query))\n"
        "        .filter(rank__gt=0)\n"
        '        .order_by("-rank")\n'
        "    )\n"
    )
    traceback = (
        "Internal Server Error: /search/\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/crumb/catalog/views.py", line 71, in search\n'
        "    results = list(search_products(q)[:40])\n"
        "psycopg.errors.SyntaxError: syntax error in tsquery: "
        '"NOT & "AND" & (x & OR & y)"\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        "django.db.utils.ProgrammingError: syntax error in tsquery: "
        '"NOT & "AND" & (x & OR & y)"'
    )
    b.call(
        ("read_file", {"path": "/srv/crumb/catalog/search.py"}, search_py),
        (
            "run_shell",
            _shell(
                "curl -sS 'http://127.0.0.1:8000/search/?q=NOT+%22AND%22+%28x+OR"
                "+y%29' -o /dev/null -w '%{http_code}\\n' && tail -n 9 "
                "/var/log/crumb/app.log"
            ),
            "500\n" + traceback,
        ),
        text="Reproducing locally and reading the search code.",
    )
    fixed = search_py.replace(
        'SearchQuery(q.replace(" ", " & "), search_type="raw", config="english")',
        'SearchQuery(q[:200], search_type="websearch", config="english")',
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/catalog/search.py", "content": fixed},
            "Wrote 498 bytes to /srv/crumb/catalog/search.py",
        )
    )
    cases = [
        'NOT "AND" (x OR y)',
        "100%",
        "%",
        "rye bread",
        "almond -chocolate",
        "' OR 1=1 --",
        "rye & caraway",
        "缓存",
        "",
    ]
    lines = [f"catalog/tests/test_search.py::test_search_never_500[{c!r}] PASSED" for c in cases]
    lines += [
        "catalog/tests/test_search.py::test_phrase_search_ranks_exact_first PASSED",
        "catalog/tests/test_search.py::test_minus_excludes_word PASSED",
        "",
        f"{len(cases) + 2} passed in 1.12s",
    ]
    b.call(
        ("run_tests", {"target": "catalog/tests/test_search.py", "args": "-v"}, "\n".join(lines))
    )
    b.assistant(
        "Fixed. We were turning user input into a *raw* tsquery, where `NOT`, quotes, "
        'parentheses and `&` are syntax. I switched to `search_type="websearch"` '
        '(`websearch_to_tsquery`), which treats `"..."` as a phrase, `-word` as exclusion, '
        '`or` as OR and silently ignores anything it can\'t parse, so `NOT "AND" (x OR y)`, '
        "`100%` and a bare `%` now just return results (or nothing) instead of a 500. I "
        "also cap the query at 200 characters. The new parametrised test covers all the nasty "
        "inputs, including SQL-injection-looking strings and Chinese text."
    )


def _sc_alert_email(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "When something 500s in production I want an e-mail to ops-team@example.com, not "
            "to my personal inbox. Can you wire that up?",
            "线上出现500的时候，我希望发邮件到 ops-team@example.com，不要发到我的个人邮箱。"
            "能配置一下吗？",
        )
    )
    settings_patch = (
        'ADMINS = [("Crumb ops", "ops-team@example.com")]\n'
        "MANAGERS = ADMINS\n"
        'SERVER_EMAIL = "alerts@hermes.example.com"\n'
        'EMAIL_SUBJECT_PREFIX = "[crumb prod] "\n'
        'EMAIL_HOST = env("EMAIL_HOST", default="smtp.example.com")\n'
        "EMAIL_PORT = 587\n"
        "EMAIL_USE_TLS = True\n"
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/crumb/settings/prod.py", "content": settings_patch},
            "Appended 284 bytes to /srv/crumb/crumb/settings/prod.py",
        ),
        (
            "run_shell",
            _shell(".venv/bin/python manage.py sendtestemail --admins"),
            "1 message sent to ops-team@example.com (Crumb ops).",
        ),
        text=_pick(lang, "Setting ADMINS and sending a test mail.", "设置ADMINS并发一封测试邮件。"),
    )
    b.assistant(
        _pick(
            lang,
            "Done: `ADMINS` now points to ops-team@example.com, mails come from "
            "alerts@hermes.example.com with a `[crumb prod]` subject prefix, and the test mail "
            "went out. Django's `AdminEmailHandler` already sends 500s to ADMINS when "
            "`DEBUG=False`. I also added a rate limit filter so a flood of identical errors "
            "becomes one mail per 10 minutes.",
            "配置好了：`ADMINS` 现在指向 ops-team@example.com，发件人是 alerts@hermes.example.com，"
            "标题前缀是 `[crumb prod]`，测试邮件已经发出。`DEBUG=False` 时Django的 "
            "`AdminEmailHandler` "
            "会自动把500发给ADMINS。我还加了一个限流过滤器，同样的错误10分钟内只发一封。",
        )
    )


def _sc_teammates(b: _Builder, lang: str, v: int) -> None:
    if v == 0:
        b.user(
            "Tanaka-san posted this in the ops channel, can you translate and check? "
            "「本番環境でログインできないという報告がありました。セッションが切れているようです。確認お願いします。」"
        )
        hits = _app_log(b.rng, b.day, 30, ["session"], start_hour=13)
        hits = "\n".join(line for line in hits.splitlines() if "Session" in line)
        b.call(
            (
                "search_logs",
                {"path": "/var/log/crumb/app.log", "pattern": "SessionInterrupted"},
                _search_result("/var/log/crumb/app.log", "SessionInterrupted", hits, b.rng),
            )
        )
        b.assistant(
            "Translation: \"We got reports that people can't log in on the production "
            'environment. It looks like sessions are expiring. Please check."\n\n'
            "The log confirms it: `SessionInterrupted` warnings on `/cart/checkout/`, all "
            "before 11:40. Sessions live only in Redis, so the connection resets we fixed this "
            "morning (ERR_CONN_RESET_4471) also made session reads fail and users looked "
            "logged out. Nothing since the fix was deployed. Suggested reply for Tanaka-san:\n"
            "「原因はRedisの接続リセットでした。今朝修正済みで、11時40分以降は発生していません。」"
        )
    else:
        b.user(
            "Min-jun wrote in Korean: 「배포 후에 상품 이미지가 안 보여요. 캐시 문제일까요?」"
            " — I think it's the static files again?"
        )
        b.call(
            (
                "run_shell",
                _shell(
                    "curl -sI https://hermes.example.com/media/products/rye-loaf.webp | head -3",
                    cwd="/",
                ),
                "HTTP/2 404\nserver: nginx/1.24.0\ncontent-type: text/html",
            )
        )
        b.assistant(
            "He says: \"After the deploy the product images don't show. Could it be a cache "
            "problem?\" It isn't the cache: `/media/` returns 404 because the deploy script "
            "recreated `/srv/crumb/media` as an empty directory instead of keeping the "
            "symlink to `/var/lib/crumb/media`. I restored the symlink and added a check to "
            "the deploy script. Reply you can paste:\n"
            "「배포 스크립트가 media 링크를 지워서 생긴 문제였어요. 지금은 해결됐습니다.」"
        )


_CHATS: list[dict[str, str]] = [
    {
        "lang": "zh",
        "q": "问个问题：我们用Django写代码的时候，signals 和重写 save() 哪个更好？"
        "比如下单以后要减库存。",
        "a": "减库存这种核心业务逻辑，我建议两个都不用，而是放在一个明确的服务函数里，比如 "
        "`orders.services.place_order()`，在同一个 `transaction.atomic()` 里创建订单、"
        "用 `select_for_update()` 锁住商品行、减库存。\n\n"
        "- signals 的问题是“看不见”：读 `Order` 的代码时不知道有东西在背后改库存，"
        "而且 `bulk_create`、`update()` 都不会触发。\n"
        "- 重写 `save()` 的问题是每次保存都会执行，包括后台改一个备注的时候。\n\n"
        "signals 适合“通知型”的副作用，比如清缓存、发邮件，失败了也不影响主流程。",
    },
    {
        "lang": "en",
        "q": "Should we use Postgres full-text search for the catalog or bring in Elasticsearch?",
        "a": "Postgres FTS, at least for now. We have ~400 products; a GIN index on a "
        "`SearchVectorField` answers in single-digit milliseconds, needs no extra service "
        "and stays transactionally consistent with the data. Elasticsearch starts to pay off "
        "with fuzzy matching, synonyms across languages and millions of documents. If we need "
        "typo tolerance later, `pg_trgm` similarity gets us most of the way.",
    },
    {
        "lang": "zh",
        "q": "缓存的过期时间一般设多少合适？商品列表、商品详情、购物车都放在缓存里。",
        "a": "按数据变化的频率和出错的代价来定：\n\n"
        "- 商品列表：5分钟，加±10%随机抖动，避免同时过期；后台改商品时主动删除缓存。\n"
        "- 商品详情：30分钟，同样在保存商品时失效。\n"
        "- 购物车：它不是缓存，是会话数据，不应该“过期”，而是跟着会话走"
        "（以后可以考虑把会话改成 cached_db）。\n\n"
        "原则：能主动失效的就用较长的过期时间，不能主动失效的就用短的。",
    },
    {
        "lang": "en",
        "q": "How should the settings be split? Right now prod.py imports * from base and "
        "overrides half of it.",
        "a": "Keep `base.py` for everything that is identical everywhere, and make every "
        "environment difference an environment variable read in base with a safe default. "
        "Then `dev.py` and `test.py` only flip a handful of things (DEBUG, cache backend, "
        "password hasher for speed), and `prod.py` mostly adds security headers and logging. "
        "The rule of thumb: if you find yourself copying a block from base into prod to "
        "change one value, that value should be an env var.",
    },
    {
        "lang": "zh",
        "q": "民俊要管理商品和配送时段，怎么给他开后台权限，但又不给超级管理员？",
        "a": "建一个“店铺运营”用户组就行：\n\n"
        "1. 在admin里新建组 `shop-ops`，只勾选 catalog 和 orders 里需要的权限，比如 "
        "`catalog.change_product`、`orders.view_order`、`orders.change_deliveryslot`，"
        "不要给 `auth` 相关的权限。\n"
        "2. 给民俊的账号勾选 `is_staff`（能进后台），不要勾 `is_superuser`，然后加入这个组。\n"
        "3. 以后新同事也加到这个组里，权限统一在组上改。\n\n"
        "另外建议后台开启两步验证（django-otp），因为后台能改价格。",
    },
    {
        "lang": "en",
        "q": "Quick one: is it OK to store product photos in the database as bytes?",
        "a": "It works, but I wouldn't. Backups grow with every photo, every query that "
        "touches the row drags megabytes along, and nginx can't serve them directly. Store "
        "files on disk (or S3-compatible storage later) and keep only the path in the "
        "`ImageField`, which is what we do now.",
    },
    {
        "lang": "zh",
        "q": "数据库连接数老是不够用，Postgres 报 too many clients already。要不要上 pgbouncer？",
        "a": "先算一下：5个gunicorn worker × 4线程 + 4个Celery进程 + 管理命令，高峰大概30个连接，"
        "`max_connections` 是100，本来够用。问题是我们设置了 `CONN_MAX_AGE = None`，"
        "线程退出后连接不会关。改成 `CONN_MAX_AGE = 60` 并打开 `CONN_HEALTH_CHECKS` 就行，"
        "暂时不需要pgbouncer。",
    },
    {
        "lang": "en",
        "q": "What's our test coverage now, roughly, and where is it worst?",
        "a": "Around 86% overall. Worst: `notifications/tasks.py` (~70%, the retry branches "
        "aren't exercised) and `orders/services.py` (~80%, the refund path has no tests). "
        "Models and views are above 90%.",
    },
]


def _sc_chat(b: _Builder, lang: str, v: int) -> None:
    spec = _CHATS[v % len(_CHATS)]
    b.user(spec["q"])
    b.assistant(spec["a"])


def _explain_output(rng: random.Random) -> str:
    a = rng.randint(2, 9)
    return "\n".join(
        [
            "                                   QUERY PLAN",
            "-" * 86,
            f" Limit  (cost=231.{a}4..232.{a}1 rows=24 width=412) "
            f"(actual time=6.{a}12..6.{a}48 rows=24 loops=1)",
            "   ->  Sort  (cost=231.44..232.41 rows=388 width=412) "
            "(actual time=6.811..6.822 rows=24 loops=1)",
            "         Sort Key: catalog_category.name, catalog_product.name",
            "         Sort Method: top-N heapsort  Memory: 61kB",
            "         ->  HashAggregate  (cost=208.12..212.00 rows=388 width=412) "
            "(actual time=5.902..6.214 rows=388 loops=1)",
            "               Group Key: catalog_product.id, catalog_category.id, "
            "catalog_supplier.id",
            "               Batches: 1  Memory Usage: 169kB",
            "               ->  Hash Right Join  (cost=31.73..189.44 rows=1867 width=408) "
            "(actual time=0.611..3.904 rows=1912 loops=1)",
            "                     Hash Cond: (catalog_review.product_id = catalog_product.id)",
            "                     ->  Seq Scan on catalog_review  (cost=0.00..143.67 rows=1867 "
            "width=12) (actual time=0.008..0.913 rows=1867 loops=1)",
            "                     ->  Hash  (cost=26.88..26.88 rows=388 width=400) "
            "(actual time=0.588..0.591 rows=388 loops=1)",
            "                           Buckets: 1024  Batches: 1  Memory Usage: 141kB",
            "                           ->  Hash Join  (cost=2.54..26.88 rows=388 width=400) "
            "(actual time=0.061..0.402 rows=388 loops=1)",
            "                                 Hash Cond: (catalog_product.category_id = "
            "catalog_category.id)",
            "                                 ->  Index Scan using catalog_pro_is_acti_4e2f1b_idx "
            "on catalog_product  (cost=0.27..21.92 rows=388 width=352) "
            "(actual time=0.014..0.201 rows=388 loops=1)",
            "                                       Index Cond: (is_active = true)",
            "                                 ->  Hash  (cost=1.12..1.12 rows=12 width=48) "
            "(actual time=0.019..0.020 rows=12 loops=1)",
            "                                       ->  Seq Scan on catalog_category  "
            "(cost=0.00..1.12 rows=12 width=48) (actual time=0.006..0.009 rows=12 loops=1)",
            " Planning Time: 0.917 ms",
            f" Execution Time: 7.{a}03 ms",
            "(24 rows)",
        ]
    )


def _sc_n_plus_one(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Let's fix the slow catalog page for real. How many queries does it do?",
            "把商品列表页的慢查询彻底修一下吧。现在一个请求查多少次数据库？",
        )
    )
    shell_cmd = (
        'python manage.py shell -c "from django.db import connection, reset_queries; '
        "from django.test import Client; c = Client(); reset_queries(); c.get('/catalog/'); "
        "print(len(connection.queries)); [print(q['sql'][:110]) for q in connection.queries[:60]]\""
    )
    lines = [str(212 + v * 9)]
    for i in range(60):
        kind = i % 4
        value = (i % 7 + 1, 100 + i, 100 + i, i % 3 + 1)[kind]
        lines.append(_SQL_N_PLUS_ONE[kind].replace("?", str(value)))
    b.call(("run_shell", _shell(shell_cmd), "\n".join(lines)))
    b.assistant(
        _pick(
            lang,
            f"{212 + v * 9} queries for one page: for each product the template loads its "
            "category, its supplier, the review count and the average rating separately.",
            f"一个页面 {212 + v * 9} 次查询：模板里每个商品都要单独查分类、供应商、"
            "评价数量和平均评分。",
        )
    )
    b.call(
        (
            "write_file",
            {
                "path": "/srv/crumb/catalog/views.py",
                "content": "    queryset = (\n        Product.objects.filter(is_active=True)"
                '\n        .select_related("category", "supplier")\n'
                '        .annotate(review_count=Count("reviews"), avg_rating=Avg('
                '"reviews__rating"))\n    )\n',
            },
            "Wrote 6 line changes to /srv/crumb/catalog/views.py",
        ),
    )
    b.call(
        (
            "run_shell",
            _shell(shell_cmd.replace("[:60]", "[:5]")),
            '3\nSELECT COUNT(*) AS "__count" FROM "catalog_product" WHERE '
            '"catalog_product"."is_active"\nSELECT "catalog_product"."id", ... '
            'LEFT OUTER JOIN "catalog_review" ... GROUP BY "catalog_product"."id", '
            '"catalog_category"."id", "catalog_supplier"."id" LIMIT 24\n'
            'SELECT "django_session"."session_data" FROM "django_session" WHERE ...',
        )
    )
    b.assistant(
        _pick(
            lang,
            "Down to 3 queries: count for the paginator, one joined + aggregated product query, "
            "and the session. The page renders in ~40 ms uncached; the plan below uses the "
            "`(is_active, category)` index.",
            "现在只有3次查询：分页的count、一个带join和聚合的商品查询、会话。不走缓存时页面大约40毫秒，"
            "执行计划用上了 `(is_active, category)` 索引。",
        )
    )
    b.call(
        (
            "run_shell",
            _shell("psql crumb -f /srv/crumb/scripts/explain_catalog.sql"),
            _explain_output(b.rng),
        )
    )
    b.assistant(
        _pick(
            lang,
            "EXPLAIN ANALYZE confirms it: one hash join over the active products, a single "
            "aggregate over reviews, well under 10 ms in the database.",
            "EXPLAIN ANALYZE 也确认了：对在售商品做一次hash join，评价只聚合一次，"
            "数据库里不到10毫秒。",
        )
    )


def _sc_celery(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Order confirmation e-mails stopped going out since this morning."
            + (" Again! Didn't we fix this?" if v else ""),
            ("又来了！不是修过了吗？" if v else "") + "从今天早上开始，订单确认邮件就发不出去了。",
        )
    )
    worker_log = "\n".join(
        [
            f"[{_date(b.day)} 07:{m:02d}:{(m * 7) % 60:02d},{m * 13 % 1000:03d}: "
            "ERROR/MainProcess] "
            "consumer: Cannot connect to redis://10.0.3.12:6379/2: Error 111 connecting to "
            f"10.0.3.12:6379. Connection refused.. Trying again in {min(32, 2 ** (m % 6))}.00 "
            "seconds... (" + str(m) + "/100)"
            for m in range(1, 37)
        ]
    )
    b.call(
        (
            "run_shell",
            _shell("sudo journalctl -u crumb-celery --since today --no-pager | tail -n 36"),
            worker_log,
        ),
        (
            "run_shell",
            _shell("sudo systemctl status redis-server --no-pager | head -4", cwd="/"),
            "● redis-server.service - Advanced key-value store\n     Loaded: loaded "
            "(/lib/systemd/system/redis-server.service; enabled)\n     Active: active (running)\n"
            "   Main PID: 812 (redis-server)",
        ),
    )
    b.assistant(
        _pick(
            lang,
            "Redis is running, yet Celery gets 'Connection refused' on 10.0.3.12. Last night's "
            "Redis upgrade reset `bind` to `127.0.0.1 -::1`, so it only listens on localhost.",
            "Redis在运行，但Celery连 10.0.3.12 被拒绝。昨晚升级Redis时 `bind` 被重置成了 "
            "`127.0.0.1 -::1`，只监听本机。",
        )
    )
    b.call(
        (
            "run_shell",
            _shell(
                "sudo sed -i 's/^bind .*/bind 127.0.0.1 10.0.3.12/' "
                "/etc/redis/redis.conf && sudo systemctl restart redis-server "
                "crumb-celery && sleep 5 && sudo journalctl -u crumb-celery -n 3 "
                "--no-pager",
                cwd="/",
            ),
            "celery@hermes ready.\n[tasks] notifications.tasks.send_order_confirmation\n"
            f"Task notifications.tasks.send_order_confirmation[{v}f1c-77ab] succeeded in 0.41s",
        )
    )
    b.assistant(
        _pick(
            lang,
            "Fixed the bind address; the worker reconnected and is draining the queue (the "
            "missed confirmations are being sent now, nothing was lost because the tasks were "
            "queued in Postgres-backed retries). I added Redis reachability to `/healthz` so "
            "this shows up in monitoring next time.",
            "已修复bind地址，worker重新连上了，正在处理积压的任务（漏发的确认邮件正在补发，任务都在重试队列里，"
            "没有丢）。我还把Redis连通性加进了 `/healthz`，下次监控能直接发现。",
        )
    )


_SUMMARIES: dict[int, dict[str, str]] = {
    2: {
        "en": "Done today:\n"
        "- **Migrations**: `orders.0003_order_customer` failed because 37 phone orders had no "
        "customer. Split into nullable column → backfill to a guest customer → NOT NULL. "
        "Backup taken before touching anything.\n"
        "- **nginx**: the upstream in /etc/nginx/sites-enabled/hermes.conf pointed to port "
        "8001; back to 8000, the 502s are gone. The repo copy in `deploy/` matches again.\n"
        '- **Search**: user input is no longer parsed as a raw tsquery; `NOT "AND" (x OR y)`, '
        "`100%` and `%` return normally, with a parametrised regression test.\n"
        "- Decided to stay on Postgres full-text search instead of Elasticsearch.\n\n"
        "Still open:\n- Redis settings for production (timeouts, pool)\n"
        "- error e-mails to the ops team\n- a CI pipeline running pytest on every push\n"
        "- the feature flag for the new checkout",
    },
    6: {
        "zh": "今天完成：\n"
        "- **重复SKU**：`BRD-0042` 的黑麦面包导入了两次，唯一索引建不起来。加了一个去重的数据迁移，"
        "订单项和库存记录都转到保留的那一行，然后索引正常建好。\n"
        "- **Review 模型**：1到5星，每个用户每个商品只能评一次（数据库唯一约束），已注册到admin。\n"
        "- **缓存击穿**：商品目录的缓存一过期，几十个worker同时重建，Redis CPU打满。现在加了锁，"
        "只有一个worker重建，其他的先返回旧数据；过期时间加了±10%抖动。\n\n"
        "还没做完：\n- `orders/services.py` 里退款流程的测试\n- /var/log/crumb 的日志轮转\n"
        "- 把缓存预热改成Celery定时任务\n- CI流水线（GitHub Actions），跑pytest和 "
        "`manage.py check --deploy`\n\n没有部署到一半的东西，线上和最新的tag一致。",
    },
    9: {
        "en": "Done today:\n"
        "- **Sessions** survive Redis restarts now (`cached_db` backend); carts come along "
        "because they live in the session.\n"
        "- **DeliverySlot** model with a `CheckConstraint` so a slot can never be overbooked, "
        "even if two requests race.\n"
        "- **Uploads**: `client_max_body_size` raised from 1m to 10m in hermes.conf, product "
        "photos from the new camera upload fine.\n\n"
        "Still open:\n- the slot picker UI and its view (Min-jun is on it)\n"
        "- a disk usage alert at 80% (the 91% on Day 7 was noticed by chance)\n"
        "- move the 缓存 (cache) warm-up into a Celery beat task\n"
        "- tests for the refund path\n\nProduction matches the last tag.",
    },
    12: {
        "zh": "今天完成：\n"
        "- **CSRF**：nginx没有传 `X-Forwarded-Proto`，Django以为是http，结账提交被拒。"
        "已在 hermes.conf 里加上，并设置了 `CSRF_TRUSTED_ORIGINS`。\n"
        "- **Celery**：又是Redis的 `bind` 被升级重置，确认邮件已补发，`/healthz` 现在会检查Redis。"
        "\n"
        "- **配送时段**：review了 `feature/delivery-slots`，修掉了预订时的并发问题（原子UPDATE），"
        "缺少参数时返回400而不是500。\n"
        "- 全部测试通过，覆盖率大约86%。\n\n"
        "还没做完：\n- 依赖升级（Dependabot的安全更新）\n- v1.0.0 发布和发布说明\n"
        "- 发布一周后删除旧的结账代码",
    },
}


def _sc_summary(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Before we stop for today: summarize what we did and what's still open.",
            "今天先到这里。总结一下今天做了什么，还有哪些没做完。",
        )
    )
    b.assistant(_SUMMARIES[b.day][lang])


def _sc_wrapup(b: _Builder, lang: str, v: int) -> None:
    b.user(
        "We're live with v1.0.0 and the first real orders are coming in. Thank you! "
        "Anything you'd keep an eye on this week?"
    )
    b.assistant(
        "Congratulations! Things I'd watch this week:\n"
        "1. The Redis pool: ERR_CONN_RESET_4471 should stay at zero now; if it shows up again, "
        "check `timeout` in redis.conf first.\n"
        "2. Delivery slot capacity at lunch — the DB constraint will refuse overbooking, so "
        "watch for `slot_not_overbooked` IntegrityErrors, which mean the UI offered a full "
        "slot.\n"
        "3. Alert mails to ops-team@example.com: if there are none at all by Wednesday, send a "
        "test mail to be sure the pipe still works.\n"
        "4. new_checkout is at 100%; remove the old checkout code after a week without "
        "complaints.\n"
        "5. Disk usage of /var/log/crumb until logrotate has run a few times."
    )
    b.user("好的，谢谢！最后帮我写一段简短的中文发布说明，发到群里。")
    b.assistant(
        "**Crumb & Co v1.0.0 发布说明**\n\n"
        "- 新版一页式结账已对全部用户开放（100%）。\n"
        "- 支持配送时段选择，每个时段最多12单。\n"
        "- 商品搜索更稳定，支持短语搜索和排除词。\n"
        "- 商品列表页速度提升，缓存更可靠，Redis重启不再导致用户登出。\n"
        "- 线上错误会自动通知 ops-team@example.com。\n\n"
        "如有问题请在群里反馈，谢谢大家！"
    )


_PROD_LOGGING = """\
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "{asctime} {levelname} [{name}] pid={process} {message}", "style": "{"},
    },
    "handlers": {
        "file": {
            "class": "logging.FileHandler",
            "filename": "/var/log/crumb/app.log",
            "formatter": "plain",
        },
        "mail_admins": {
            "class": "django.utils.log.AdminEmailHandler",
            "level": "ERROR",
            "filters": ["require_debug_false"],
        },
    },
    "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "root": {"handlers": ["file"], "level": "DEBUG"},
    "loggers": {
        "django.request": {"handlers": ["mail_admins", "file"], "level": "ERROR"},
        "django.db.backends": {"handlers": ["file"], "level": "DEBUG"},
        "crumb": {"handlers": ["file"], "level": "INFO", "propagate": False},
    },
}
"""

_SLOT_VIEWS = """\
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect

from .models import DeliverySlot, Order


def available_slots(request: HttpRequest) -> JsonResponse:
    day = request.GET["date"]
    slots = DeliverySlot.objects.filter(date=day)
    data = [
        {"id": s.pk, "start": s.start.isoformat(), "end": s.end.isoformat(),
         "free": s.capacity - s.booked}
        for s in slots
        if s.booked < s.capacity
    ]
    return JsonResponse({"date": day, "slots": data})


@login_required
def book_slot(request: HttpRequest, order_id: int) -> HttpResponse:
    order = get_object_or_404(Order, pk=order_id, customer=request.user)
    slot = get_object_or_404(DeliverySlot, pk=request.POST["slot"])
    if slot.booked >= slot.capacity:
        return HttpResponse("Slot full", status=409)
    slot.booked += 1
    slot.save()
    order.delivery_slot = slot
    order.save()
    return redirect("orders:detail", order.pk)
"""


def _git_diff(files: list[tuple[str, str, str]]) -> str:
    out: list[str] = []
    for path, old, new in files:
        blob_a = hashlib.sha1(old.encode(), usedforsecurity=False).hexdigest()[:9]
        blob_b = hashlib.sha1(new.encode(), usedforsecurity=False).hexdigest()[:9]
        out.append(f"diff --git a/{path} b/{path}")
        out.append(f"index {blob_a}..{blob_b} 100644" if old else "new file mode 100644")
        out.extend(
            line.rstrip("\n")
            for line in difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"a/{path}" if old else "/dev/null",
                tofile=f"b/{path}",
                n=3,
            )
        )
    return _cap("\n".join(out))


def _sc_review(b: _Builder, lang: str, v: int) -> None:
    if v == 0:
        services_new = _SERVICES_PY.replace(
            "    return total - total * (coupon.percent_off // 100)",
            "    return money(total * (100 - coupon.percent_off) / Decimal(100))",
        ) + (
            "\n\n@transaction.atomic\n"
            "def refund(order: Order, reason: str) -> None:\n"
            '    for item in order.items.select_related("product"):\n'
            "        item.product.stock += item.quantity\n"
            "        item.product.save()\n"
            "    order.status = Order.Status.CANCELLED\n"
            "    order.note = reason[:240]\n"
            "    order.save()\n"
        )
        cart_new = _CART_PY.replace("return Decimal(round(raw, 2))", "return money(raw)").replace(
            "from catalog.models import Product\n",
            "from catalog.models import Product\n\nfrom .services import money\n",
        )
        branch = "feature/coupon-fix"
        diff = _git_diff(
            [
                ("orders/services.py", _SERVICES_PY, services_new),
                ("orders/cart.py", _CART_PY, cart_new),
            ]
        )
        ask = _pick(
            lang,
            f"Can you review my branch `{branch}` before I merge it? Be picky.",
            f"帮我review一下 `{branch}` 这个分支，合并之前仔细看看，挑剔一点。",
        )
        review = _pick(
            lang,
            "Mostly good. Three things:\n"
            "1. `refund()` does `product.stock += quantity; save()` — a read-modify-write race. "
            "Two refunds at the same time lose one update. Use "
            '`Product.objects.filter(pk=...).update(stock=F("stock") + item.quantity)`.\n'
            "2. `refund()` never touches the coupon, so a refunded order still counts against "
            "`max_uses`. Decide whether that's intended and write it down in a test.\n"
            "3. `cart.py` now imports from `services.py`, and `services.py` will want the cart "
            "for checkout — that's an import cycle waiting to happen. Move `money()` to "
            "`orders/utils.py`.\n"
            "The coupon fix itself is correct.",
            "整体不错，有三点：\n"
            "1. `refund()` 里 `product.stock += quantity; save()` 是“先读后写”，有并发问题，"
            "两个退款同时发生会丢一次更新。应该用 "
            '`Product.objects.filter(pk=...).update(stock=F("stock") + item.quantity)`。\n'
            "2. `refund()` 没有处理优惠券，退款的订单仍然占用 `max_uses`。要确认这是不是预期的，"
            "并写个测试固定下来。\n"
            "3. `cart.py` 现在从 `services.py` 导入，而 `services.py` 结账时也要用购物车，"
            "迟早会循环导入。"
            "建议把 `money()` 移到 `orders/utils.py`。\n"
            "优惠券的修复本身是对的。",
        )
    elif v == 1:
        branch = "min/prod-logging"
        old = "from .base import *  # noqa: F403\n\nDEBUG = False\n\n" + _CACHES_SETTINGS
        diff = _git_diff([("crumb/settings/prod.py", old, old + "\n" + _PROD_LOGGING)])
        ask = _pick(
            lang,
            f"Min-jun opened a PR `{branch}` with the production logging config. Review it?",
            f"民俊提了一个PR `{branch}`，是生产环境的日志配置，帮忙review一下？",
        )
        review = _pick(
            lang,
            "Requesting changes:\n"
            "1. `root` at DEBUG plus `django.db.backends` at DEBUG logs **every SQL query** in "
            "production. With the catalog page that's hundreds of lines per request and it may "
            "log personal data in query parameters. Use INFO for root, WARNING for db.\n"
            "2. `FileHandler` never rotates; we already have a 3.2 GB app.log. Either "
            "`WatchedFileHandler` + logrotate or log to stdout and let journald handle it.\n"
            "3. `mail_admins` is fine and goes to ops-team@example.com via ADMINS, but add the "
            "rate limit filter we wrote, otherwise one outage means hundreds of e-mails.\n"
            "Suggested reply for Min-jun: 「로그 레벨을 INFO로 바꾸고 WatchedFileHandler를 써 "
            "주세요. "
            "고마워요!」",
            "需要修改：\n"
            "1. root是DEBUG，`django.db.backends` 也是DEBUG，生产环境会记录**每一条SQL**。"
            "商品页一个请求就是几百行，"
            "而且查询参数里可能有个人信息。root用INFO，数据库用WARNING。\n"
            "2. `FileHandler` 不会轮转，app.log 已经3.2G了。要么用 `WatchedFileHandler` + "
            "logrotate，"
            "要么输出到stdout交给journald。\n"
            "3. `mail_admins` 没问题，会通过ADMINS发到 ops-team@example.com，"
            "但要加上我们写的限流过滤器，"
            "不然一次故障就是几百封邮件。",
        )
    else:
        branch = "feature/delivery-slots"
        diff = _git_diff([("orders/views_slots.py", "", _SLOT_VIEWS)])
        ask = _pick(
            lang,
            f"Last one before the release: `{branch}`. The slot picker works in my tests.",
            f"发布前最后一个：`{branch}`。配送时段选择我自己测过是好的。",
        )
        review = _pick(
            lang,
            "It works for one user at a time, but `book_slot` has a race: two customers read "
            "`booked = 11`, both pass the check and both save 12 — or, with the DB constraint "
            "we added, the second one gets an IntegrityError and a 500. Do it atomically:\n\n"
            "```python\nwith transaction.atomic():\n    updated = DeliverySlot.objects.filter(\n"
            '        pk=slot_id, booked__lt=F("capacity")\n'
            '    ).update(booked=F("booked") + 1)\n    if not updated:\n'
            '        return HttpResponse("Slot full", status=409)\n```\n\n'
            'Also `request.GET["date"]` raises a KeyError (500) when the parameter is '
            "missing; validate it and return 400. `transaction` is imported but unused.",
            "单个用户没问题，但 `book_slot` 有并发问题：两个客户同时读到 `booked = 11`，"
            "都通过检查，都保存成12；"
            "有了我们加的数据库约束，第二个会直接报IntegrityError变成500。应该用一条原子的UPDATE："
            '`filter(pk=slot_id, booked__lt=F("capacity")).update(booked=F("booked") + 1)`，'
            "返回0就说明满了，返回409。\n\n"
            '另外 `request.GET["date"]` 没传参数时会KeyError变成500，应该校验并返回400。'
            "`transaction` 导入了但没用。",
        )
    b.user(ask)
    b.call(
        (
            "run_shell",
            _shell(f"git fetch origin && git diff main...origin/{branch}"),
            diff,
        ),
        text=_pick(lang, "Fetching the branch and reading the diff.", "拉取分支，看一下diff。"),
    )
    b.assistant(review)
    b.user(
        _pick(
            lang,
            "Agreed on all points. Fix them on the branch and push.",
            "都同意，直接在分支上改好推上去吧。",
        )
    )
    sha = hashlib.sha1(branch.encode(), usedforsecurity=False).hexdigest()[:7]
    b.call(
        (
            "run_shell",
            _shell(
                f"git checkout {branch} && git commit -am 'Address review comments' && "
                f"git push origin {branch}"
            ),
            f"Switched to branch '{branch}'\n[{branch} {sha}] Address review comments\n"
            f" {2 + v} files changed, {11 + v * 5} insertions(+), {6 + v * 2} deletions(-)\n"
            f"To github.com:crumb-co/crumb.git\n   4e1a2b9..{sha}  {branch} -> {branch}",
        ),
        (
            "run_tests",
            {"target": "orders", "args": "-q"},
            f"{'.' * (28 + v * 3)}\n{28 + v * 3} passed in 3.{41 + v}s",
        ),
    )
    b.assistant(
        _pick(
            lang,
            f"Pushed to `{branch}` with the review fixes; the orders tests pass. CI will run "
            "the full suite on the PR.",
            f"已经在 `{branch}` 上改好并推送，orders 的测试全部通过。CI会在PR上跑完整测试。",
        )
    )


_OUTDATED = """\
Package            Version  Latest   Type
------------------ -------- -------- -----
certifi            2024.2.2 2024.7.4 wheel
celery             5.3.6    5.4.0    wheel
Django             5.0.3    5.0.7    wheel
django-debug-toolbar 4.3.0  4.4.6    wheel
django-redis       5.4.0    5.4.0    wheel
gunicorn           21.2.0   22.0.0   wheel
idna               3.6      3.7      wheel
kombu              5.3.5    5.3.7    wheel
Pillow             10.2.0   10.4.0   wheel
psycopg            3.1.18   3.2.1    wheel
psycopg-binary     3.1.18   3.2.1    wheel
pytest             8.1.1    8.3.2    wheel
redis              5.0.3    5.0.7    wheel
requests           2.31.0   2.32.3   wheel
sentry-sdk         1.41.0   2.10.0   wheel
sqlparse           0.4.4    0.5.1    wheel
urllib3            2.2.1    2.2.2    wheel
whitenoise         6.6.0    6.7.0    wheel
"""


def _sc_upgrade(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Dependabot is nagging about security updates. What's outdated, and what's safe "
            "to bump before the release?",
            "Dependabot一直提醒有安全更新。哪些依赖过期了？发布前哪些可以放心升级？",
        )
    )
    b.call(("run_shell", _shell(".venv/bin/pip list --outdated"), _OUTDATED))
    b.assistant(
        _pick(
            lang,
            "Safe now (patch releases, some with security fixes): Django 5.0.3 → 5.0.7, "
            "gunicorn 21.2.0 → 22.0.0 (fixes request smuggling, CVE-2024-1135), sqlparse "
            "0.5.1 (DoS fix), requests, urllib3, idna, certifi, Pillow 10.4.0, redis 5.0.7.\n"
            "Wait until after the release: sentry-sdk 2.x (breaking config changes) and "
            "psycopg 3.2 (fine, but not urgent).",
            "现在可以升（补丁版本，有些包含安全修复）：Django 5.0.3 → 5.0.7，gunicorn 21.2.0 → "
            "22.0.0"
            "（修复请求走私漏洞 CVE-2024-1135），sqlparse 0.5.1（修复DoS），requests、urllib3、"
            "idna、"
            "certifi、Pillow 10.4.0、redis 5.0.7。\n发布后再升：sentry-sdk "
            "2.x（配置有不兼容的变化）"
            "和 psycopg 3.2（没问题但不急）。",
        )
    )
    b.user(_pick(lang, "Do the safe ones and run everything.", "把安全的先升了，然后跑全部测试。"))
    b.call(
        (
            "run_shell",
            _shell(
                ".venv/bin/pip install -U 'Django==5.0.7' 'gunicorn==22.0.0' 'sqlparse==0.5.1' "
                "'Pillow==10.4.0' 'redis==5.0.7' requests urllib3 idna certifi && "
                ".venv/bin/pip freeze > requirements.lock"
            ),
            "Successfully installed Django-5.0.7 Pillow-10.4.0 certifi-2024.7.4 gunicorn-22.0.0 "
            "idna-3.7 redis-5.0.7 requests-2.32.3 sqlparse-0.5.1 urllib3-2.2.2",
        ),
    )
    b.call(
        (
            "run_tests",
            {"target": "", "args": "--cov=. --cov-report=term"},
            _pytest_output(b.rng, b.day * 2).replace("5.0.3", "5.0.7"),
        )
    )
    b.assistant(
        _pick(
            lang,
            "Upgraded and the whole suite is green on Django 5.0.7 / gunicorn 22. "
            "`requirements.txt` and the new `requirements.lock` are updated; I'll let "
            "Dependabot close its PRs by itself.",
            "已升级，Django 5.0.7 / gunicorn 22 下全部测试通过。`requirements.txt` 和新的 "
            "`requirements.lock` 都已更新，Dependabot的PR会自动关闭。",
        )
    )


def _du_output(rng: random.Random) -> str:
    rows: list[tuple[int, str]] = [
        (3_276_800, "/var/log/crumb/app.log"),
        (412_000, "/var/log/crumb/gunicorn.log"),
        (96_400, "/var/log/crumb/celery.log"),
        (1_904_000, "/var/log/nginx/hermes.access.log"),
        (61_200, "/var/log/nginx/hermes.error.log"),
        (38_900, "/var/log/postgresql/postgresql-15-main.log"),
        (8_120, "/var/log/redis/redis-server.log"),
        (51_300, "/var/log/journal"),
        (1_240, "/var/log/apt"),
        (12_300, "/var/log/syslog"),
    ]
    for day in range(1, 31):
        rows.append((rng.randint(9_000, 14_000), f"/var/backups/crumb/crumb-nightly-{day}.dump"))
    for name in ("products", "products/thumbs", "avatars", "invoices"):
        rows.append((rng.randint(40_000, 900_000), f"/srv/crumb/media/{name}"))
    rows.sort(reverse=True)
    return "\n".join(
        f"{size // 1024 if size >= 10_240 else size}{'M' if size >= 10_240 else 'K'}\t{path}"
        for size, path in rows
    )


_LOGROTATE_DEBUG = """\
reading config file /etc/logrotate.d/crumb
Reading state from file: /var/lib/logrotate/status
Allocating hash table for state file, size 64 entries
Creating new state
Handling 1 logs
rotating pattern: /var/log/crumb/*.log  after 1 days (14 rotations)
empty log files are not rotated, old logs are removed
considering log /var/log/crumb/app.log
  Now: 2024-03-10 16:02
  Last rotated at 2024-03-10 16:00
  log needs rotating
considering log /var/log/crumb/celery.log
  log needs rotating
considering log /var/log/crumb/gunicorn.log
  log needs rotating
rotating log /var/log/crumb/app.log, log->rotateCount is 14
dateext suffix '-20240310'
glob pattern '-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]'
copying /var/log/crumb/app.log to /var/log/crumb/app.log-20240310
truncating /var/log/crumb/app.log
compressing log with: /bin/gzip
rotating log /var/log/crumb/celery.log, log->rotateCount is 14
copying /var/log/crumb/celery.log to /var/log/crumb/celery.log-20240310
truncating /var/log/crumb/celery.log
rotating log /var/log/crumb/gunicorn.log, log->rotateCount is 14
copying /var/log/crumb/gunicorn.log to /var/log/crumb/gunicorn.log-20240310
truncating /var/log/crumb/gunicorn.log
"""


def _sc_disk(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Monitoring says the disk on hermes is 91% full. What's eating it?",
            "监控报警说hermes的磁盘已经用了91%。是什么占了这么多空间？",
        )
    )
    b.call(
        (
            "run_shell",
            _shell(
                "df -h / && sudo du -ah /var/log /var/backups /srv/crumb/media "
                "2>/dev/null | sort -rh | head -n 60",
                cwd="/",
            ),
            "Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda1        78G   71G  7.0G  "
            "91% /\n" + _du_output(b.rng),
        ),
        text=_pick(lang, "Looking at disk usage by directory.", "按目录看一下磁盘占用。"),
    )
    b.assistant(
        _pick(
            lang,
            "Logs. `/var/log/crumb/app.log` alone is 3.2 GB (never rotated, and it logs every "
            "request at INFO), and the nginx access log is 1.9 GB. The 30 nightly dumps in "
            "`/var/backups/crumb` are ~12 MB each, so they are not the problem. "
            "I'll add logrotate for our logs (daily, 14 days, compressed, copytruncate) and "
            "stop logging `django.server` access lines since nginx already has them.",
            "主要有两个：`/var/log/crumb/app.log` 一个文件就3.2G（从来没轮转过，"
            "而且每个请求都记INFO），"
            "nginx访问日志也有1.9G。`/var/backups/crumb` 里30个每晚的备份每个大约12M，"
            "这部分没问题。"
            "我来给我们的日志加上logrotate（每天轮转、保留14天、压缩、copytruncate），"
            "并且不再记录 `django.server` 的访问日志，nginx已经记过了。",
        )
    )
    conf = (
        "/var/log/crumb/*.log {\n    daily\n    rotate 14\n    compress\n    delaycompress\n"
        "    missingok\n    notifempty\n    dateext\n    copytruncate\n    su deploy deploy\n}\n"
    )
    b.call(
        (
            "write_file",
            {"path": "/etc/logrotate.d/crumb", "content": conf},
            f"Wrote {len(conf)} bytes to /etc/logrotate.d/crumb",
        ),
    )
    b.call(
        (
            "run_shell",
            _shell("sudo logrotate -v -f /etc/logrotate.d/crumb && df -h /", cwd="/"),
            _LOGROTATE_DEBUG + "Filesystem      Size  Used Avail Use% Mounted on\n"
            "/dev/vda1        78G   65G   13G  84% /",
        ),
    )
    b.assistant(
        _pick(
            lang,
            "Rotated and compressed: 84% used now, and it won't creep back because logs are "
            "rotated daily and kept for 14 days. The nginx logs already had a logrotate rule "
            "(weekly, 52 rotations); I shortened it to 8 weeks.",
            "已经轮转并压缩，现在用了84%。以后每天轮转、只保留14天，不会再涨回去。"
            "nginx的日志本来就有logrotate规则（每周、保留52份），我改成了只保留8周。",
        )
    )


_CHECK_DEPLOY = """\
System check identified some issues:

WARNINGS:
?: (security.W004) You have not set a value for the SECURE_HSTS_SECONDS setting. If your entire \
site is served only over SSL, you may want to consider setting a value and enabling HTTP Strict \
Transport Security. Be sure to read the documentation first; enabling HSTS carelessly can cause \
serious, irreversible problems.
?: (security.W008) Your SECURE_SSL_REDIRECT setting is not set to True. Unless your site should \
be available over both SSL and non-SSL connections, you may want to either set this setting True \
or configure a load balancer or reverse-proxy server to redirect all connections to HTTPS.
?: (security.W012) SESSION_COOKIE_SECURE is not set to True. Using a secure-only session cookie \
makes it more difficult for network traffic sniffers to hijack user sessions.
?: (security.W016) You have 'django.middleware.csrf.CsrfViewMiddleware' in your MIDDLEWARE, but \
you have not set CSRF_COOKIE_SECURE to True. Using a secure-only CSRF cookie makes it more \
difficult for network traffic sniffers to steal the CSRF token.
?: (security.W021) You have not set the SECURE_HSTS_PRELOAD setting to True. Without this, your \
site cannot be submitted to the browser preload list.

System check identified 5 issues (0 silenced).
"""

_CI_WORKFLOW = """\
name: ci
on:
  push:
    branches: [main]
  pull_request:

jobs:
  test:
    runs-on: ubuntu-22.04
    services:
      postgres:
        image: postgres:15
        env:
          POSTGRES_DB: crumb_test
          POSTGRES_PASSWORD: ci-only
        ports: ["5432:5432"]
        options: >-
          --health-cmd "pg_isready -U postgres" --health-interval 5s --health-retries 10
    env:
      DATABASE_URL: postgres://postgres:ci-only@localhost:5432/crumb_test
      DJANGO_SETTINGS_MODULE: crumb.settings.test
      DJANGO_SECRET_KEY: ci-not-secret
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
          cache: pip
      - run: pip install -r requirements.txt -r requirements-dev.txt
      - run: python manage.py makemigrations --check --dry-run
      - run: pytest --cov=. --cov-report=term --cov-fail-under=80
      - run: python manage.py check --deploy --fail-level WARNING
        env:
          DJANGO_SETTINGS_MODULE: crumb.settings.prod
          DJANGO_ALLOWED_HOSTS: hermes.example.com
"""


def _sc_ci(b: _Builder, lang: str, v: int) -> None:
    b.user(
        _pick(
            lang,
            "Let's finally set up CI: GitHub Actions, pytest with coverage, and fail the build "
            "if `check --deploy` complains about the production settings.",
            "终于要配CI了：用GitHub Actions，跑pytest和覆盖率，生产配置的 `check --deploy` "
            "有警告就让构建失败。",
        )
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/.github/workflows/ci.yml", "content": _CI_WORKFLOW},
            f"Wrote {len(_CI_WORKFLOW)} bytes to /srv/crumb/.github/workflows/ci.yml",
        ),
        (
            "run_shell",
            _shell(
                "DJANGO_SETTINGS_MODULE=crumb.settings.prod .venv/bin/python manage.py check "
                "--deploy"
            ),
            _CHECK_DEPLOY,
        ),
        text=_pick(
            lang,
            "Writing the workflow and running the deploy checks locally first.",
            "先写workflow，同时在本地跑一遍部署检查。",
        ),
    )
    b.assistant(
        _pick(
            lang,
            "The workflow would fail right now: `check --deploy` reports 5 warnings, all about "
            "HTTPS hardening (HSTS, SSL redirect, secure session and CSRF cookies). nginx "
            "already redirects to https, so these are safe to turn on. For HSTS I'll start "
            "with one hour and raise it to a year once we're sure nothing is served over plain "
            "http; preload stays off for now and is silenced explicitly.",
            "现在这个workflow会失败：`check --deploy` 报了5个警告，都是HTTPS加固相关的"
            "（HSTS、SSL重定向、会话和CSRF cookie的secure标志）。nginx已经把http重定向到https了，"
            "所以可以放心打开。HSTS先设一小时，确认没有任何http访问以后再改成一年；"
            "preload暂时不开，显式忽略这个警告。",
        )
    )
    hardening = (
        "SECURE_SSL_REDIRECT = True\n"
        "SESSION_COOKIE_SECURE = True\n"
        "CSRF_COOKIE_SECURE = True\n"
        "SECURE_HSTS_SECONDS = 3600  # raise to 31536000 after a week without http traffic\n"
        "SECURE_HSTS_INCLUDE_SUBDOMAINS = True\n"
        'SILENCED_SYSTEM_CHECKS = ["security.W021"]  # HSTS preload: decided against for now\n'
    )
    b.call(
        (
            "write_file",
            {"path": "/srv/crumb/crumb/settings/prod.py", "content": hardening},
            f"Appended {len(hardening)} bytes to /srv/crumb/crumb/settings/prod.py",
        ),
    )
    b.call(
        (
            "run_shell",
            _shell(
                "DJANGO_SETTINGS_MODULE=crumb.settings.prod .venv/bin/python manage.py check "
                "--deploy && git add -A && git commit -qm 'CI workflow, HTTPS hardening' && "
                "git push -q && gh run watch --exit-status"
            ),
            "System check identified no issues (1 silenced).\n"
            "✓ main ci · 8213377042\nTriggered via push less than a minute ago\n\nJOBS\n"
            "✓ test in 2m41s (ID 22489113370)\n  ✓ Set up job\n  ✓ Initialize containers\n"
            "  ✓ Run actions/checkout@v4\n  ✓ Run actions/setup-python@v5\n"
            "  ✓ Run pip install -r requirements.txt -r requirements-dev.txt\n"
            "  ✓ Run python manage.py makemigrations --check --dry-run\n"
            "  ✓ Run pytest --cov=. --cov-report=term --cov-fail-under=80\n"
            "  ✓ Run python manage.py check --deploy --fail-level WARNING\n"
            "  ✓ Post Run actions/checkout@v4\n  ✓ Complete job",
        ),
    )
    b.assistant(
        _pick(
            lang,
            "CI is live and green on main: migrations are checked for drift, tests must keep "
            "coverage above 80%, and the production settings must pass `check --deploy`. "
            'Every PR now gets the same run, so the "works on my laptop" class of problems '
            "shows up before merging.",
            "CI已经在main上跑通了：检查有没有漏掉的迁移、测试覆盖率必须高于80%、生产配置必须通过 "
            "`check --deploy`。以后每个PR都会跑同样的流程，"
            "“在我电脑上是好的”这类问题合并前就能发现。",
        )
    )


# --------------------------------------------------------------------------------------------
# The plan: which scenario runs on which day, in which language, with which variant.
# Needles are concentrated in days 1-4 so they end up in the first third of the conversation.
# --------------------------------------------------------------------------------------------

Scenario = Callable[[_Builder, str, int], None]

_PLAN: list[list[tuple[Scenario, str, int]]] = [
    # Day 1: kickoff, login page, first model, first test run
    [
        (_sc_bootstrap, "en", 0),
        (_sc_login_page, "zh", 0),
        (_sc_model, "en", 0),
        (_sc_tests, "en", -1),
    ],
    # Day 2: orders migration breaks, nginx 502, search box 500
    [
        (_sc_migration_fail, "zh", 0),
        (_sc_nginx, "en", 0),
        (_sc_search_sanitize, "en", 0),
        (_sc_chat, "en", 1),
        (_sc_summary, "en", 1),
    ],
    # Day 3: Redis resets, timeouts in the logs, alert e-mail, cache questions, Japanese
    [
        (_sc_redis, "en", 0),
        (_sc_log_search, "zh", 0),
        (_sc_alert_email, "en", 0),
        (_sc_chat, "zh", 2),
        (_sc_teammates, "en", 0),
    ],
    # Day 4: feature flag rollout, signals vs save(), coupons, first deploy, Korean
    [
        (_sc_feature_flag, "en", 0),
        (_sc_chat, "zh", 0),
        (_sc_model, "zh", 1),
        (_sc_tests, "en", 0),
        (_sc_deploy, "en", 0),
        (_sc_teammates, "en", 1),
    ],
    # Day 5: slow requests, N+1, code review, rounding bug
    [
        (_sc_log_search, "en", 2),
        (_sc_n_plus_one, "en", 0),
        (_sc_review, "en", 0),
        (_sc_tests, "en", 3),
        (_sc_chat, "en", 3),
    ],
    # Day 6: duplicate SKUs, reviews, cache stampede
    [
        (_sc_migration_fail, "en", 1),
        (_sc_model, "en", 2),
        (_sc_redis, "zh", 1),
        (_sc_summary, "zh", 2),
    ],
    # Day 7: static files, disk full, deploy
    [
        (_sc_nginx, "en", 1),
        (_sc_disk, "zh", 0),
        (_sc_deploy, "zh", 1),
        (_sc_chat, "zh", 4),
    ],
    # Day 8: Celery, 502s, logging review
    [
        (_sc_celery, "en", 0),
        (_sc_log_search, "en", 1),
        (_sc_review, "zh", 1),
        (_sc_tests, "en", 1),
        (_sc_chat, "en", 5),
    ],
    # Day 9: sessions lost, delivery slots, uploads
    [
        (_sc_redis, "en", 2),
        (_sc_model, "zh", 3),
        (_sc_nginx, "en", 2),
        (_sc_summary, "en", 3),
    ],
    # Day 10: inconsistent migration history, CI
    [
        (_sc_migration_fail, "zh", 2),
        (_sc_tests, "en", 2),
        (_sc_ci, "en", 0),
        (_sc_deploy, "en", 2),
        (_sc_chat, "zh", 6),
    ],
    # Day 11: timeouts again, stock log, N+1 again
    [
        (_sc_log_search, "zh", 3),
        (_sc_model, "en", 4),
        (_sc_n_plus_one, "zh", 1),
        (_sc_chat, "en", 7),
    ],
    # Day 12: CSRF behind the proxy, Celery again, slot review
    [
        (_sc_nginx, "en", 3),
        (_sc_celery, "zh", 1),
        (_sc_review, "en", 2),
        (_sc_tests, "en", -1),
        (_sc_summary, "zh", 4),
    ],
    # Day 13: the old Redis problem, 502s again, dependency upgrades, deploy
    [
        (_sc_redis, "en", 3),
        (_sc_log_search, "en", 4),
        (_sc_upgrade, "en", 0),
        (_sc_deploy, "en", 3),
    ],
    # Day 14: release
    [(_sc_tests, "zh", -1), (_sc_deploy, "en", 9), (_sc_wrapup, "en", 0)],
]


def build_demo_conversation() -> dict:
    """Returns {"title": str, "model": str, "system_prompt": str, "messages": list[dict]}"""
    b = _Builder(SEED, "crumb")
    for day_index, scenarios in enumerate(_PLAN, start=1):
        b.new_day(day_index)
        for scenario, lang, variant in scenarios:
            scenario(b, lang, variant)
    return {
        "title": "Crumb & Co: building and running a Django shop with Hermes (2 weeks)",
        "model": MODEL,
        "system_prompt": SYSTEM_PROMPT,
        "messages": b.messages,
    }


# --------------------------------------------------------------------------------------------
# A short second session on another topic, for search across sessions.
# --------------------------------------------------------------------------------------------


def build_small_conversation() -> dict:
    """A ~20 message session about a nightly Postgres backup script."""
    b = _Builder(SEED + 1, "backup")
    script = (
        "#!/usr/bin/env bash\n"
        "set -euo pipefail\n"
        'STAMP="$(date +%Y%m%d-%H%M)"\n'
        'OUT="/var/backups/crumb/crumb-${STAMP}.dump"\n'
        'pg_dump -Fc --no-owner crumb > "$OUT"\n'
        'aws s3 cp "$OUT" "s3://crumb-backups/nightly/" --storage-class STANDARD_IA\n'
        'find /var/backups/crumb -name "*.dump" -mtime +7 -delete\n'
    )
    b.user(
        "New topic: I want nightly Postgres backups of the crumb database, copied to S3, "
        "keeping 7 days locally. Can you write the script and the cron entry?"
    )
    b.call(
        (
            "run_shell",
            _shell("pg_dump --version && aws --version && df -h /var/backups", cwd="/"),
            "pg_dump (PostgreSQL) 15.6\naws-cli/2.15.30 Python/3.11.8 Linux/6.1.0-18-amd64\n"
            "Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda1        78G   31G   44G"
            "  42% /",
        ),
        text="Checking the tools and disk space first.",
    )
    b.call(
        (
            "write_file",
            {"path": "/usr/local/bin/crumb-backup.sh", "content": script},
            "Wrote 287 bytes to /usr/local/bin/crumb-backup.sh",
        )
    )
    b.assistant(
        "Script is at `/usr/local/bin/crumb-backup.sh`. It dumps in custom format "
        "(`-Fc`, compressed and restorable table by table), uploads to "
        "`s3://crumb-backups/nightly/` and deletes local dumps older than 7 days. "
        "Note the `%` in `date +%Y%m%d`: in a crontab line it would have to be escaped "
        "as `\\%`, which is one reason to keep the logic in a script."
    )
    b.user("备份失败的时候能不能发邮件通知？发到 ops-team@example.com。")
    b.call(
        (
            "write_file",
            {
                "path": "/etc/cron.d/crumb-backup",
                "content": "MAILTO=ops-team@example.com\n"
                "15 3 * * * postgres /usr/local/bin/crumb-backup.sh\n",
            },
            "Wrote 86 bytes to /etc/cron.d/crumb-backup",
        )
    )
    b.assistant(
        "可以。cron 会把任务的输出和错误发给 `MAILTO`，我在 `/etc/cron.d/crumb-backup` 里设置了 "
        "`MAILTO=ops-team@example.com`，每天凌晨3:15以 postgres 用户运行。脚本用了 "
        "`set -euo pipefail`，任何一步失败都会以非零状态退出并输出错误，所以失败时一定会收到邮件。"
    )
    b.user("Run it once by hand so we know it works.")
    b.call(
        (
            "run_shell",
            _shell(
                "sudo -u postgres /usr/local/bin/crumb-backup.sh && ls -lh /var/backups/crumb",
                cwd="/",
            ),
            "upload: ../../var/backups/crumb/crumb-20240318-1012.dump to "
            "s3://crumb-backups/nightly/crumb-20240318-1012.dump\n"
            "total 12M\n-rw-r--r-- 1 postgres postgres 12M crumb-20240318-1012.dump",
        )
    )
    b.assistant("Works: a 12 MB dump locally and the same file in S3.")
    b.user("How do I restore just the orders table if someone deletes rows by accident?")
    b.assistant(
        "Restore into a scratch database and copy the rows back, never straight over "
        "production:\n\n```\ncreatedb crumb_restore\npg_restore -d crumb_restore "
        "-t orders_order -t orders_orderitem crumb-20240318-1012.dump\n```\n\nThen "
        "`INSERT ... SELECT` the missing rows into `crumb` with `ON CONFLICT DO "
        "NOTHING`."
    )
    b.user("Redis 的缓存需要备份吗？")
    b.assistant(
        "不需要。Redis里只有缓存和会话的读副本，会话已经改成 cached_db，数据库里有完整的一份。"
        "缓存丢了只会让第一批请求慢一点，会自动重建。"
    )
    b.user("And how do we know the backups are actually restorable?")
    b.call(
        (
            "write_file",
            {
                "path": "/usr/local/bin/crumb-restore-check.sh",
                "content": "#!/usr/bin/env bash\nset -euo pipefail\nLATEST=$(ls -t "
                "/var/backups/crumb/*.dump | head -1)\ndropdb --if-exists "
                "crumb_check && createdb crumb_check\npg_restore -d crumb_check "
                '"$LATEST"\npsql -d crumb_check -tAc \'select count(*) from '
                "orders_order'\n",
            },
            "Wrote 231 bytes to /usr/local/bin/crumb-restore-check.sh",
        )
    )
    b.assistant(
        "A weekly restore check: it restores the newest dump into `crumb_check` and "
        "counts orders. Cron runs it on Sundays; a non-zero exit mails "
        "ops-team@example.com like the backup itself."
    )
    b.user("バックアップの件、ありがとうございます。Perfect, that's all for today.")
    b.assistant(
        "You're welcome! Summary: nightly dump at 03:15 → S3, 7 days kept locally, "
        "failures mailed to ops-team@example.com, weekly restore test on Sundays."
    )
    return {
        "title": "Nightly Postgres backups to S3",
        "model": MODEL,
        "system_prompt": SYSTEM_PROMPT,
        "messages": b.messages,
    }


# --------------------------------------------------------------------------------------------
# Self-check
# --------------------------------------------------------------------------------------------


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _check_conversation(conv: dict) -> tuple[int, int]:
    messages: list[Message] = conv["messages"]
    _require(isinstance(conv["system_prompt"], str) and conv["system_prompt"] != "", "prompt")
    seen_ids: set[str] = set()
    i = 0
    while i < len(messages):
        msg = messages[i]
        _require(msg["role"] in {"user", "assistant", "tool"}, f"bad role at {i}")
        _require(msg["role"] != "tool", f"orphan tool result at {i}")
        if msg["role"] == "assistant" and msg.get("tool_calls"):
            ids = [tc["id"] for tc in msg["tool_calls"]]
            for tc in msg["tool_calls"]:
                _require(tc["type"] == "function", f"bad tool call type at {i}")
                _require(tc["id"].startswith("call_"), f"bad id at {i}")
                _require(tc["id"] not in seen_ids, f"duplicate id {tc['id']}")
                seen_ids.add(tc["id"])
                json.loads(tc["function"]["arguments"])
            results = messages[i + 1 : i + 1 + len(ids)]
            _require(len(results) == len(ids), f"missing results after {i}")
            for call_id, tc, res in zip(ids, msg["tool_calls"], results, strict=True):
                _require(res["role"] == "tool", f"expected tool result after {i}")
                _require(res["tool_call_id"] == call_id, f"result id mismatch after {i}")
                _require(res["name"] == tc["function"]["name"], f"result name mismatch {i}")
                _require(isinstance(res["content"], str), f"non-text result after {i}")
            i += 1 + len(ids)
            continue
        _require(isinstance(msg["content"], str) and msg["content"] != "", f"empty text at {i}")
        i += 1
    total_chars = sum(len(m["content"] or "") for m in messages) + sum(
        len(tc["function"]["arguments"]) for m in messages for tc in m.get("tool_calls", [])
    )
    _require(messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls"), "end")
    _require(messages[-2]["role"] == "user", "second to last must be a user message")
    return len(messages), total_chars


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


if __name__ == "__main__":
    demo = build_demo_conversation()
    count, chars = _check_conversation(demo)
    msgs = demo["messages"]
    _require(400 <= count <= 600, f"message count {count} out of range")
    _require(300_000 <= chars <= 600_000, f"total characters {chars} out of range")
    users = [m for m in msgs if m["role"] == "user"]
    zh_users = [m for m in users if _has_cjk(m["content"])]
    _require(sum(m["role"] == "user" for m in msgs[-20:]) >= 2, "need 2 user msgs at the end")
    big_results = [m for m in msgs if m["role"] == "tool" and len(m["content"]) >= 2048]
    contents = [m["content"] for m in msgs if m["role"] == "tool"]
    repeated = len(contents) - len(set(contents))
    text_by_index = [
        (m["content"] or "")
        + "".join(tc["function"]["arguments"] for tc in m.get("tool_calls", []))
        for m in msgs
    ]
    for needle in DEMO_NEEDLES:
        first = next((k for k, t in enumerate(text_by_index) if needle in t), None)
        _require(first is not None, f"needle {needle!r} missing")
        _require(first < count / 3, f"needle {needle!r} first appears at {first}, too late")
        hits = sum(needle in t for t in text_by_index)
        print(f"  needle {needle!r}: first at message {first}, in {hits} messages")
    print(f"messages:            {count}")
    print(f"total characters:    {chars}")
    print(f"user messages:       {len(users)} ({len(zh_users)} with Chinese)")
    print(f"tool calls:          {sum(len(m.get('tool_calls', [])) for m in msgs)}")
    print(f"tool results >= 2KB: {len(big_results)} (max {max(len(c) for c in contents)})")
    print(f"repeated results:    {repeated}")
    small = build_small_conversation()
    small_count, small_chars = _check_conversation(small)
    demo_ids = {tc["id"] for m in msgs for tc in m.get("tool_calls", [])}
    small_ids = {tc["id"] for m in small["messages"] for tc in m.get("tool_calls", [])}
    _require(not demo_ids & small_ids, "tool call ids shared between sessions")
    print(f"small conversation:  {small_count} messages, {small_chars} characters")
    print("OK")
