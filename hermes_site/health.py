"""``/healthz`` (the process answers) and ``/readyz`` (it can do its job), for load balancers,
process managers and container orchestrators. JSON, no key, and nothing secret: no URLs, paths,
versions or error texts beyond a one-line reason."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)

# The idle sweep is scheduled every minute, so a running worker finishes a task at least that
# often; a little more than twice that without one means no worker is taking tasks.
WORKER_SILENCE = timedelta(seconds=150)
WORKER_HINT = "is the worker running (bin/serve, or manage.py worker)?"


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return None


def _migrations() -> str | None:
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return f"{len(pending)} migration(s) not applied: run manage.py migrate" if pending else None


def _search_indexes() -> str | None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            from search import pg

            broken = pg.invalid_indexes(cursor)
            return f"search indexes missing or invalid: {', '.join(broken)}" if broken else None
        from search import fts

        if not (fts.state_present(cursor) and fts.triggers_present(cursor)):
            return "the search indexes or their triggers are missing: run manage.py reindex"
        if fts.stale(cursor) is not None:
            return "the search indexes hold another text version: run manage.py reindex"
    return None


def _worker() -> str | None:
    from django_q.models import Task

    last = Task.objects.order_by("-stopped").values_list("stopped", flat=True).first()
    if last is None:
        return f"no background task has finished yet: {WORKER_HINT}"
    if timezone.now() - last > WORKER_SILENCE:
        seconds = int((timezone.now() - last).total_seconds())
        return f"no background task finished for {seconds} s: {WORKER_HINT}"
    return None


def _broker() -> str | None:
    """Redis: a ping, whose refusal raises. The ORM broker's own ping answers True without
    looking, so its queue table is read instead (it may live in another database)."""
    from django_q.brokers import get_broker
    from django_q.conf import Conf
    from django_q.models import OrmQ

    try:
        if Conf.ORM:
            OrmQ.objects.using(Conf.ORM).exists()
        elif not get_broker().ping():
            return "the task broker does not answer"
    except Exception:
        logger.warning("readiness check broker: the broker does not answer", exc_info=True)
        return "the task broker does not answer"
    return None


CHECKS: dict[str, Callable[[], str | None]] = {
    "database": _database,
    "migrations": _migrations,
    "search_indexes": _search_indexes,
    "worker": _worker,
    "broker": _broker,
}


@require_GET
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when every check passes, else 503; each check says ok or why not."""
    checks = {}
    for name, check in CHECKS.items():
        try:
            problem = check()
        except DatabaseError:
            problem = "the database does not answer"
            logger.exception("readiness check %s", name)
        except Exception:  # a check that cannot run is a failed check, never a 500
            problem = "the check could not run; see the service log"
            logger.exception("readiness check %s", name)
        checks[name] = {"ok": problem is None, **({"problem": problem} if problem else {})}
        if name == "database" and problem:
            break  # nothing else can answer without it
    ready = all(c["ok"] for c in checks.values()) and len(checks) == len(CHECKS)
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status=200 if ready else 503,
    )
