"""SQLite with writers queued by a :class:`~core.sqlite_backend.gate.WriteGate` before
``BEGIN IMMEDIATE``; released when the transaction ends however it ends. Under granian it
connects with a connection opened and warmed ahead (core.handover). Its cursors remember how
a statement's ``%s`` became ``?`` (:class:`Cursor`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db import OperationalError
from django.db.backends.sqlite3 import base

from core.handover import TakesHandedOver
from core.sqlite_backend.gate import GateTimeout, WriteGate, gate_for

# Longer statements (a bulk insert's thousands of placeholders) are converted each time, as
# Django does: the cache holds at most 1,024 statements of up to this many characters.
_CACHED_UP_TO = 4096


@lru_cache(maxsize=1024)
def _qmark(query: str) -> str:
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


def qmark(query: str) -> str:
    """``query`` with Django's ``%s`` placeholders as the driver's ``?``, as Django's SQLite
    cursor converts it (kept for statements of up to 4,096 characters)."""
    if len(query) <= _CACHED_UP_TO:
        return _qmark(query)
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class Cursor(base.SQLiteCursorWrapper):
    """Django's SQLite cursor, converting each statement's ``%s`` to ``?`` once per statement
    text instead of on every run: the regular expression took 10 µs a run on a short
    statement and 24 on a search's (bench: 33 against 10 µs for the whole run of a long one).
    A search request runs about seven. (django-stubs leave convert_query out.)"""

    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None:
            return qmark(query)
        return super().convert_query(query, param_names=param_names)  # type: ignore[misc]


def _in_memory(name: str) -> bool:
    return name == ":memory:" or "mode=memory" in name


class DatabaseWrapper(TakesHandedOver, base.DatabaseWrapper):
    _held: WriteGate | None = None
    # Django's own attribute (from OPTIONS, by get_connection_params); django-stubs leaves it
    # out, as it does the private methods overridden below (hence their type: ignore).
    transaction_mode: str | None

    def create_cursor(self, name: str | None = None) -> Cursor:
        return self.connection.cursor(factory=Cursor)

    def _gate(self) -> WriteGate | None:
        name = str(self.settings_dict["NAME"])
        if self.transaction_mode != "IMMEDIATE" or _in_memory(name):
            return None
        return gate_for(name)

    def _start_transaction_under_autocommit(self) -> None:
        gate = self._gate()
        if gate is not None:
            timeout = float(self.settings_dict["OPTIONS"].get("timeout", 5))
            try:
                gate.acquire(timeout)
            except GateTimeout:
                raise OperationalError(
                    f"database is locked: other writers held it for {timeout:g} s "
                    "(server.sqlite_busy_timeout_seconds)"
                ) from None
            self._held = gate
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        gate, self._held = self._held, None
        if gate is not None:
            gate.release()

    def _commit(self) -> None:
        try:
            super()._commit()  # type: ignore[misc]
        finally:
            self._release()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]
        finally:
            self._release()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]
        finally:
            self._release()
