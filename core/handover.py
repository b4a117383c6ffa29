"""Database connections opened and warmed ahead of the request threads that will use them.

A new connection costs its first request dearly: on PostgreSQL a server process started for it,
its catalog read and the search functions compiled (a first search p50 10.8 ms at 1,000,000
messages against 0.8 on a kept connection), on SQLite an empty page cache (1.5 against 0.4).
gunicorn's threads exist before any request, so each warms its own (hermes_site.warm). granian
starts a process's request threads in Rust as requests come and ends them when idle: none can
be reached before its first request. So a web process opens and warms as many connections as
it has threads when it starts (:func:`prepare`), and a thread's first connect takes one
(:func:`take`, from the backends' ``get_new_connection``) instead of opening a cold one. A
connection closed after a request, for its age (``server.db_conn_max_age``) or an error, is
replaced the same way on a thread of its own (:func:`replace`), never on a request's path. And
granian ends a request thread idle for its timeout: the thread's connection, open and warm, is
handed back then (:class:`_HandsBack`) for the next thread it starts.

Only a process that called :func:`enable` hands connections over; everywhere else (tests,
management commands, gunicorn) :func:`take` finds none and the backends connect as Django does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

logger = logging.getLogger(__name__)

THREAD_NAME = "hermes-handover"
# After a warm-up that failed (the database away), no replacement is made for this long: each
# try would hold a thread (a connect that times out) and log.
RETRY_AFTER_SECONDS = 30.0

_lock = threading.Lock()
_ready: deque[tuple[float, Any]] = deque()  # (opened at, the driver's connection)
_state: dict[str, Any] = {"target": 0, "making": 0, "failed_at": None, "warm": None}


def enable(target: int, warm: Callable[[], bool]) -> None:
    """Hand connections over in this process, keeping up to ``target`` ready, each opened by
    ``warm`` on the thread that makes it (search.warm.warm_connection: core imports no app)."""
    _state["target"], _state["warm"] = target, warm


def enabled() -> bool:
    return _state["target"] > 0


def ready() -> int:
    return len(_ready)


def take(alias: str, max_age: float | None) -> tuple[Any, float] | None:
    """A ready connection and when it was opened, or None. One older than ``max_age`` (the
    connection's age limit) is closed instead of handed over."""
    if alias != DEFAULT_DB_ALIAS or not enabled() or _making_here():
        return None
    while True:
        with _lock:
            if not _ready:
                return None
            opened, raw = _ready.popleft()
        if not max_age or time.monotonic() - opened < max_age:
            return raw, opened
        with contextlib.suppress(Exception):
            raw.close()


def _making_here() -> bool:
    """Whether this thread is one making a connection ready (it opens a new one)."""
    return threading.current_thread().name == THREAD_NAME


def give_back(wrapper: Any) -> bool:
    """Keep ``wrapper``'s open connection ready for another thread, if it is between
    transactions and fewer than the target are ready (else it is closed); the wrapper lets go
    of it. True when it was kept."""
    raw = wrapper.connection
    if raw is None or not enabled() or not _idle(raw):
        return False
    wrapper.connection = None
    with _lock:
        if len(_ready) < _state["target"]:
            _ready.append((getattr(wrapper, "handover_opened", time.monotonic()), raw))
            return True
    with contextlib.suppress(Exception):
        raw.close()
    return False


def _idle(raw: Any) -> bool:
    """Open and between transactions: sqlite3's ``in_transaction``, psycopg's status."""
    try:
        if getattr(raw, "closed", False):
            return False
        info = getattr(raw, "info", None)
        if info is not None:  # psycopg
            from psycopg.pq import TransactionStatus

            return bool(info.transaction_status == TransactionStatus.IDLE)
        return not raw.in_transaction  # sqlite3 (a closed one raises)
    except Exception:
        return False


class _HandsBack:
    """Kept in a request thread's locals beside its Django connection, and pointing to nothing
    that points back, so it is freed as soon as the thread ends (granian ends a thread idle for
    its timeout; the wrapper itself, in reference cycles, waits for the garbage collector):
    it hands the thread's connection back."""

    __slots__ = ("wrapper",)

    def __init__(self, wrapper: Any) -> None:
        self.wrapper = wrapper

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # a finalizer never raises
            give_back(self.wrapper)


_threads = threading.local()


def prepare(count: int, wait: float) -> int:
    """Open and warm ``count`` connections, each on a thread of its own, and keep them ready;
    waits at most ``wait`` seconds and returns how many were ready by then (one still warming
    is kept when it is done)."""
    results: list[bool] = []
    threads = [
        threading.Thread(target=_make, args=(results,), name=THREAD_NAME, daemon=True)
        for _ in range(count)
    ]
    with _lock:
        _state["making"] += count
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + wait
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return sum(results)


def replace(alias: str) -> bool:
    """A connection of this process was closed: make another ready on a thread of its own, if
    fewer than the target are ready or being made. Not from a thread that is making one (its
    failure closes its connection), nor for a while after a warm-up failed."""
    if alias != DEFAULT_DB_ALIAS or not enabled() or _making_here():
        return False
    failed_at = _state["failed_at"]
    if failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_SECONDS:
        return False
    with _lock:
        if len(_ready) + _state["making"] >= _state["target"]:
            return False
        _state["making"] += 1
    threading.Thread(target=_make, args=([],), name=THREAD_NAME, daemon=True).start()
    return True


def _make(results: list[bool]) -> None:
    """On a thread of its own: open this thread's connection and warm it (the ``warm`` given to
    :func:`enable`), and keep the driver's connection, which the thread's Django wrapper lets go
    of without closing."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    made = False
    try:
        if _state["warm"]() and wrapper.connection is not None:
            raw, wrapper.connection = wrapper.connection, None
            with _lock:
                _ready.append((time.monotonic(), raw))
            made = True
    except Exception as exc:  # a warm-up is never worth a thread: the request connects itself
        logger.warning("preparing a database connection failed: %s", exc)
    finally:
        with _lock:
            _state["making"] -= 1
        _state["failed_at"] = None if made else time.monotonic()
        wrapper.close()  # only where the warm-up failed and left one open
        results.append(made)


class TakesHandedOver:
    """For a backend's DatabaseWrapper: connect with a ready connection where there is one,
    and have one made ready when a connection is closed."""

    alias: str
    settings_dict: dict[str, Any]
    connection: Any
    close_at: float | None

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        max_age = self.settings_dict["CONN_MAX_AGE"]
        taken = take(self.alias, max_age)
        if taken is None:
            raw, opened = super().get_new_connection(conn_params), time.monotonic()  # type: ignore[misc]
        else:
            raw, opened = taken
            if self.close_at is not None:  # its age counts from when it was opened
                self.close_at = opened + max_age
        if enabled() and self.alias == DEFAULT_DB_ALIAS and not _making_here():
            self.handover_opened = opened
            _threads.hands_back = _HandsBack(self)
        return raw

    def close(self) -> None:
        had = self.connection is not None
        super().close()  # type: ignore[misc]
        # Not where connections are per request (CONN_MAX_AGE 0): each request's end closes
        # its connection, and a warm-up for every request would double the database's work.
        if had and self.connection is None and self.settings_dict["CONN_MAX_AGE"] != 0:
            replace(self.alias)
