"""django-q2 tasks of the recall layer."""

from __future__ import annotations

import logging

from django.db import connection, transaction

from search import fts
from search.backends import choice

logger = logging.getLogger(__name__)


def trim_recent_index() -> int:
    """Scheduled every minute: keep the SQLite recent indexes to the newest
    ``search.recent_rows`` messages; returns how many ids the floor rose. On PostgreSQL: the
    list of the words its statistics count common, as they count them now (search.pg.COMMON,
    which decides how a first lookup plans its window); returns 0.

    Small steps, each its own write transaction, so appends wait for one step at most. If this
    never runs, the recent indexes grow towards the full ones' size and ranking loses their
    speed-up; nothing is lost. ``recent_rows`` set to 0 empties them and turns them off; set
    back, this fills them again (one transaction of a few seconds per 100,000 messages).
    """
    if connection.vendor == "postgresql":
        from search import pg

        with transaction.atomic(), connection.cursor() as cursor:
            pg.refresh_common(cursor)
        return 0
    if connection.vendor != "sqlite":
        return 0
    keep = fts.recent_rows()
    with transaction.atomic(), connection.cursor() as cursor:
        if (version := fts.stale(cursor)) is not None:
            logger.error(
                "search indexes hold text version %s, the code computes %s: not trimming the "
                "recent indexes until manage.py reindex runs",
                version,
                fts.TEXT_VERSION,
            )
            return 0
        if (keep == 0) != (fts.floor(cursor) is None):  # switched on or off
            low = fts.fill_recent(cursor, keep)
            logger.info("recent search indexes %s", f"from id {low}" if keep else "off")
            return 0
    return trim(keep)


def trim(keep: int, batch: int = 2_000) -> int:
    """Raise the floor to the newest ``keep`` ids in steps of ``batch``, each step its own write
    transaction; returns how far it rose."""
    moved = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            step = fts.trim_step(cursor, keep, batch)
        if not step:
            return moved
        moved += step


def refresh_ranked(
    index: str,
    expression: str,
    phrases: list[list],
    channel_id: int | None,
    request_id: str | None = None,
) -> dict:
    """Score every match of a common query in its scope and keep its best rows (search.ranked):
    asked for by a lookup that filled its rank window. Reads without the write lock (the
    scoring: ~2 µs a match on SQLite), then one short write transaction."""
    from core.config import get_config
    from core.logs import bind_request_id, unbind
    from search import ranked
    from search.query import Route

    bound = bind_request_id(request_id)
    try:
        config = get_config().search
        backend = choice.current()
        route = Route(index, expression, phrases=tuple((str(t), bool(p)) for t, p in phrases))
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {fts.MESSAGE_TABLE}")
            upto = cursor.fetchone()[0]
        best, matched = backend.best_rows(route, channel_id, upto, config.rank_keep + 1)
        ranked.store(
            index,
            expression,
            channel_id,
            upto,
            matched,
            best,
            config.rank_keep,
            config.rank_queries,
        )
        return {"expression": expression, "channel_id": channel_id, "matched": matched}
    finally:
        unbind(bound)
