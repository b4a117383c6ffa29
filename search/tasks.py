"""django-q2 tasks of the recall layer."""

from __future__ import annotations

from django.db import connection, transaction

from search import fts


def trim_recent_index() -> int:
    """Scheduled every minute: keep the SQLite recent indexes to the newest
    ``search.recent_rows`` messages; returns how many ids the floor rose.

    Small steps, each its own write transaction, so appends wait for one step at most. If this
    never runs the recent indexes only grow: ranking gets slower, never wrong.
    """
    if connection.vendor != "sqlite":
        return 0
    moved = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            step = fts.trim_step(cursor)
        if not step:
            return moved
        moved += step
