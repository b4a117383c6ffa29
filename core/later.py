"""Writes an answer need not wait for -- a search's refreshes queued, an API key's last use --
made by one thread per process, in the order handed over, right after.

A read makes no write on its request path. On SQLite a write waits for the database's one
writer, behind every append in flight; on PostgreSQL its commit waits for the WAL to reach the
disk; and django-q2 may close the connection before it queues a task, so the request's next
statement would start on a new one. Here the thread keeps its own connection between pieces of
work as a request's thread does (``CONN_MAX_AGE``: opening one for a single write cost a SQLite
web process 3 ms, 0.4 on a kept one), and closes it once nothing has come for IDLE_SECONDS.

Where background work runs where it is asked (django-q2's ``sync``, the tests' setting), each
piece runs at once, in the caller's thread. Work handed over and not yet run when the process
stops is lost: it is bookkeeping, asked for again by a later request.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

IDLE_SECONDS = 60.0
THREAD_NAME = "hermes-later"

Work = tuple[Callable[[], object], str]
_queue: queue.Queue[Work] | None = None
_pid: int | None = None
_lock = threading.Lock()


def run_later(work: Callable[[], object], what: str) -> None:
    """Run ``work`` on this process's thread after what was handed over before it. ``what``
    says what it does, for the log line if it fails (it never reaches the caller)."""
    from django_q.conf import Conf

    if Conf.SYNC:
        _run(work, what)
    else:
        _thread_queue().put((work, what))


def drain(timeout: float = 5.0) -> bool:
    """Wait until the work handed over has run (tests and benches); False after ``timeout``."""
    handed = _queue
    if handed is None:
        return True
    deadline = time.monotonic() + timeout
    while handed.unfinished_tasks:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _thread_queue() -> queue.Queue[Work]:
    """The process's queue and thread: started on first use, and again in a forked child (a
    thread does not survive the fork of a server's worker)."""
    global _queue, _pid
    with _lock:
        if _queue is None or _pid != os.getpid():
            _queue, _pid = queue.Queue(), os.getpid()
            threading.Thread(target=_serve, args=(_queue,), name=THREAD_NAME, daemon=True).start()
        return _queue


def _serve(handed: queue.Queue[Work]) -> None:
    from django.db import connection as own  # this thread's connection, not a request's

    while True:
        try:
            work, what = handed.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            _let_go(own.close)  # idle: hold no connection until more work comes
            work, what = handed.get()
        try:
            _run(work, what)
        finally:
            # As at a request's end: closed if broken or past its age (at once in the tests').
            _let_go(own.close_if_unusable_or_obsolete)
            handed.task_done()


def _run(work: Callable[[], object], what: str) -> None:
    try:
        work()
    except Exception:  # the thread lives on, and the request was answered long ago
        logger.warning("%s failed", what, exc_info=True)


def _let_go(close: Callable[[], None]) -> None:
    """Close the thread's connection, or log why not: the thread must outlive a failed close."""
    try:
        close()
    except Exception as exc:  # a dropped socket, say: its message says enough
        logger.warning("the %s thread could not close its connection: %s", THREAD_NAME, exc)
