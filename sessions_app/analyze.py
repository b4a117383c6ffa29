"""Fresh planner statistics after a bulk change.

PostgreSQL plans with the statistics it has; a database just loaded, restored or reindexed has
none until autovacuum gets to it (and many small installs run without it). Without them the
planner guesses -- one row for a channel's sessions, say -- and can pick a plan a thousand times
slower. Whatever loads or rebuilds many rows analyzes what it touched. SQLite plans without
statistics here, and an ``ANALYZE`` could change plans the search was built on, so it is left
alone."""

from __future__ import annotations

from django.db import connections

TABLES = ("sessions_app_session", "sessions_app_message", "sessions_app_channel")


def analyze(alias: str = "default", tables: tuple[str, ...] = TABLES) -> bool:
    """ANALYZE the tables on PostgreSQL; True when it ran."""
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    return True
