"""What a new web process loads before its first request, so no client's first request waits.

Django imports the URLconf -- and with it every view, django-ninja router and schema -- on a
process's first request, not when the WSGI application is built: about half a second here, which
the first request to each gunicorn worker paid (``bench/live_context.py --http`` measured 750 ms
for a first ``GET /context`` whose median is 7). gunicorn's ``post_worker_init`` runs this.

Each request thread has its own database connection, opened by the first request the thread
answers: on PostgreSQL a server process started for it, its catalog read and the search functions
compiled (a first search took p50 10.8 ms at 1,000,000 messages, 0.8 on a kept connection); on
SQLite an empty page cache (1.3 against 0.3). warm_threads starts every thread of the worker's
pool before it takes a request and opens and warms each one's connection
(search.warm.warm_connection); hermes_site.gunicorn_worker warms a thread's connection again
after the answer that closed it for its age (``server.db_conn_max_age``), which
close_aged_after_answers makes the end of a request, never its start.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from concurrent import futures

from django.core.signals import request_started
from django.db import close_old_connections, connection
from django.urls import URLResolver, get_resolver

from core import handover
from core.config import get_config
from search.warm import warm_connection, warm_up

logger = logging.getLogger(__name__)

# After a warm-up that failed (the database away), a thread's connection is left to its next
# request for this long: each try would hold a thread (a connect that times out) and log.
RETRY_AFTER_SECONDS = handover.RETRY_AFTER_SECONDS
_failed_at: float | None = None

# How long a starting worker waits for its threads' warm-up before it takes requests anyway
# (gunicorn replaces a worker that has not reported for its 60-second timeout).
THREADS_WAIT_SECONDS = 20.0


def warm_process() -> None:
    """Never raises for a database that is away (search.warm logs it and leaves the read to the
    first lookup); the URLconf does not touch the database."""
    _compile_routes(get_resolver())  # the property imports the URLconf
    warm_up()


def _compile_routes(resolver: URLResolver) -> None:
    """Compile every route's pattern: Django compiles each the first time a request is matched
    against it, which cost a process's first API request 3 ms (35 patterns)."""
    resolver.pattern.regex  # noqa: B018 -- compiled and kept on first use
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            _compile_routes(entry)
        else:
            entry.pattern.regex  # noqa: B018


def warm_threads(pool: futures.ThreadPoolExecutor, threads: int) -> int:
    """Start ``threads`` threads of ``pool`` (gunicorn's request threads) and warm each one's
    connection, each on a thread of its own; returns how many were warmed. Waits at most
    THREADS_WAIT_SECONDS: a thread still warming then answers its first request after it."""
    if not get_config().server.warm_connections:
        return 0
    began = time.monotonic()
    # A thread waits for the others before it warms, so that no thread takes two of these tasks
    # (the pool starts a thread for each task that finds none idle).
    together = threading.Barrier(threads)

    def warm_one() -> bool:
        with contextlib.suppress(threading.BrokenBarrierError):
            together.wait(THREADS_WAIT_SECONDS)
        return warm_connection()

    tasks = [pool.submit(warm_one) for _ in range(threads)]
    done, _ = futures.wait(tasks, THREADS_WAIT_SECONDS)
    warmed = sum(1 for task in done if task.exception() is None and task.result())
    _say_warmed(warmed, threads, began)
    return warmed


def warm_ahead(threads: int) -> int:
    """granian's ``warm_threads``: its request threads start with requests, out of reach, so
    ``threads`` connections are opened and warmed now and handed to them (core.handover);
    returns how many were ready within THREADS_WAIT_SECONDS."""
    if not get_config().server.warm_connections:
        return 0
    began = time.monotonic()
    handover.enable(threads, warm_connection)
    made = handover.prepare(threads, THREADS_WAIT_SECONDS)
    _say_warmed(made, threads, began)
    return made


def _say_warmed(warmed: int, threads: int, began: float) -> None:
    logger.info(
        "%d of %d request threads' connections warmed in %.0f ms",
        warmed,
        threads,
        (time.monotonic() - began) * 1000,
    )


def close_aged_after_answers() -> bool:
    """Close a connection past its age (``server.db_conn_max_age``) at the end of a request, no
    longer at the start of the next: Django does both (``close_old_connections`` on each
    signal), so a thread idle past the age opened a new connection in its next request. That
    request now uses the old one -- health-checked on first use as any kept connection, so one
    the server ended is replaced -- and rewarm_if_closed warms the new one after the answer. The
    start's check has nothing else to do: the end of the thread's last request checked the
    rest (errors, autocommit). Only where connections are warmed; returns whether it applies."""
    if not _rotated_here():
        return False
    return request_started.disconnect(close_old_connections)


def _rotated_here() -> bool:
    """Whether this process warms connections and replaces them at their age (neither applies
    where connections are per request)."""
    server = get_config().server
    return server.warm_connections and bool(server.db_conn_max_age)


def rewarm_if_closed() -> bool:
    """After a request: warm this thread's connection again if the request's end closed it (its
    age, ``server.db_conn_max_age``, or an error that left it unusable), so the thread's next
    request does not open it. Not where connections are per request (``db_conn_max_age`` 0)."""
    global _failed_at
    if connection.connection or not _rotated_here():
        return False
    if _failed_at is not None and time.monotonic() - _failed_at < RETRY_AFTER_SECONDS:
        return False
    warmed = warm_connection()
    _failed_at = None if warmed else time.monotonic()
    return warmed
