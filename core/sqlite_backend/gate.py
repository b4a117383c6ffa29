"""A queue for SQLite's single write lock that wakes waiters when it is free.

A writer that finds the lock taken is parked by SQLite's busy handler, which sleeps in growing
steps (up to 100 ms) and re-checks: under steady writes a waiter keeps missing the short gaps
between other writers' transactions, and the slowest appends waited seconds behind writes that
each took milliseconds. The gate puts writers in line before they ask SQLite: threads of one
process on a lock (woken as soon as it is released), processes on an advisory file lock polled
every millisecond or two by one thread per process. SQLite's own lock still guarantees
correctness; the gate only decides who asks next, and a writer that does not use it (the
``sqlite3`` shell, a backup) is waited for by the busy timeout as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path

_POLL_FIRST = 0.0005
_POLL_MAX = 0.002


class GateTimeout(Exception):
    """Waited the whole busy timeout for other writers."""


class WriteGate:
    def __init__(self, database: str) -> None:
        self.path = Path(f"{database}-writegate")
        self._threads = threading.Lock()
        self._fd: int | None = None
        self._pid = 0

    def _file(self) -> int:
        if self._fd is None or self._pid != os.getpid():  # a forked child opens its own
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def acquire(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if not self._threads.acquire(timeout=max(timeout, 0)):
            raise GateTimeout
        try:
            fd = self._file()
            pause = _POLL_FIRST
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise GateTimeout from None
                    time.sleep(pause)
                    pause = min(pause * 2, _POLL_MAX)
        except BaseException:
            self._threads.release()
            raise

    def release(self) -> None:
        try:
            if self._fd is not None and self._pid == os.getpid():
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            if self._threads.locked():  # not after a fork reset it (see _after_fork)
                self._threads.release()

    def _after_fork(self) -> None:
        """In a forked child (gunicorn's and django-q2's workers): a lock another thread of the
        parent held at the fork would be held for ever here, and the parent's file description
        is the parent's. Start afresh."""
        self._threads = threading.Lock()
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._pid = None, 0


_gates: dict[str, WriteGate] = {}
_gates_lock = threading.Lock()


def _after_fork() -> None:
    global _gates_lock
    _gates_lock = threading.Lock()
    for gate in _gates.values():
        gate._after_fork()


os.register_at_fork(after_in_child=_after_fork)


def gate_for(database: str) -> WriteGate:
    with _gates_lock:
        gate = _gates.get(database)
        if gate is None:
            gate = _gates[database] = WriteGate(database)
        return gate
