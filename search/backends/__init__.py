"""The query runners of each database (sqlite, postgres), chosen by the connection's vendor."""

from __future__ import annotations

from types import ModuleType

from django.db import connection


def current() -> ModuleType:
    if connection.vendor == "postgresql":
        from search.backends import postgres

        return postgres
    from search.backends import sqlite

    return sqlite
