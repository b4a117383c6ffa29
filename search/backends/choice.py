"""Which query runner answers: the connection's vendor chooses. A module of its own, so that the
package's ``__init__`` imports none of its modules (the import checker saw that as a cycle)."""

from __future__ import annotations

from types import ModuleType

from django.db import connection


def current() -> ModuleType:
    if connection.vendor == "postgresql":
        from search.backends import postgres

        return postgres
    from search.backends import sqlite

    return sqlite
