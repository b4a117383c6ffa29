"""What both backends share: the filters as SQL over the messages table (alias ``m``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection

from search import pg
from search.filters import Filters
from search.fts import MESSAGE_TABLE

KIND_SQL = {
    "live": "(m.active AND NOT m.is_summary)",
    "summary": "(m.active AND m.is_summary)",
    "archived": "(m.compressed)",
}
INDEXED = "(m.active OR m.compressed)"
ROLLED_BACK = "(NOT m.active AND NOT m.compressed AND NOT m.is_notice)"


def like_pattern(needle: str) -> str:
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filters_sql(filters: Filters) -> tuple[list[str], list]:
    from sessions_app.models import Session

    where: list[str] = []
    params: list = []
    if filters.session_id is not None:
        where.append("m.session_id = %s")
        params.append(Session._meta.pk.get_db_prep_value(filters.session_id, connection))
    if filters.channel_id is not None:
        # On the row itself (Message.channel): no per-query list of the channel's sessions.
        where.append("m.channel_id = %s")
        params.append(filters.channel_id)
    if filters.role:
        where.append("m.role = %s")
        params.append(filters.role)
    if filters.kind:
        where.append(KIND_SQL[filters.kind])
    if filters.since is not None:
        where.append("m.created_at >= %s")
        params.append(connection.ops.adapt_datetimefield_value(filters.since))
    if filters.until is not None:
        where.append("m.created_at < %s")
        params.append(connection.ops.adapt_datetimefield_value(filters.until))
    if filters.before_id is not None:
        where.append("m.id < %s")
        params.append(filters.before_id)
    return where, params


def _walk(cursor, sql: str, params: list) -> list:
    """A chunk of the scan: the primary key backwards, stopping at the page. On PostgreSQL that
    plan is fixed (search.pg.PLANNED): without statistics the planner guessed one match per
    chunk and read the whole chunk in a bitmap scan, then sorted it -- 90 ms instead of 9 at
    100,000 messages."""
    if connection.vendor == "postgresql":
        return pg.run_planned(cursor, pg.WALK_PLAN, sql, params, "id bigint")
    cursor.execute(sql, params)
    return cursor.fetchall()


@dataclass
class Scan:
    """A scan's hits and how far it read: ``reached`` is the oldest id it examined (None: it
    read everything the filters allow), ``exhausted`` whether nothing older is left."""

    hits: list[tuple[int, None]]
    reached: int | None
    exhausted: bool


def run_scan(
    like_clauses: Callable[[tuple[str, ...]], tuple[list[str], list]],
    needles: tuple[str, ...],
    filters: Filters,
    limit: int,
    offset: int,
    *,
    rolled_back: bool = False,
) -> Scan:
    """The answer of last resort, on either backend (``like_clauses`` is its substring match).

    A session's rows are read whole. Otherwise the scan reads ``filters.scan_rows`` rows at a
    time, newest first, and goes on to older chunks until it has the page (``offset + limit``
    hits) or ``filters.scan_seconds`` have passed -- so no statement is ever a full-table scan,
    and where it stops, the answer says so (``reached``) and can be continued below it
    (``filters.before_id``)."""
    where, params = filters_sql(filters)
    likes, like_params = like_clauses(needles)
    kind = ROLLED_BACK if rolled_back else INDEXED
    want = offset + limit
    with connection.cursor() as cursor:
        if filters.session_id is not None:  # left to the planner: a session's rows are indexed
            sql = (
                f"SELECT m.id FROM {MESSAGE_TABLE} m WHERE {' AND '.join([kind, *where, *likes])} "
                "ORDER BY m.id DESC LIMIT %s OFFSET %s"
            )
            cursor.execute(sql, [*params, *like_params, limit, offset])
            return Scan([(row[0], None) for row in cursor.fetchall()], None, True)
        cursor.execute(f"SELECT min(id), max(id) FROM {MESSAGE_TABLE}")
        lowest, highest = cursor.fetchone()
        if lowest is None:
            return Scan([], None, True)
        upper = min(filters.before_id or highest + 1, highest + 1)
        deadline = time.monotonic() + (filters.scan_seconds or 0)
        hits: list[int] = []
        sql = (
            f"SELECT m.id FROM {MESSAGE_TABLE} m WHERE "
            + " AND ".join([kind, "m.id >= %s", "m.id < %s", *where, *likes])
            + " ORDER BY m.id DESC LIMIT %s"
        )
        reached = upper
        while reached > lowest and len(hits) < want:
            lower = max(reached - (filters.scan_rows or 200_000), lowest)
            chunk = [lower, reached, *params, *like_params, want - len(hits)]
            hits += [row[0] for row in _walk(cursor, sql, chunk)]
            # A full page may have stopped inside the chunk: everything from its last hit up
            # was read, the rest of the chunk not.
            reached = hits[-1] if len(hits) >= want else lower
            if time.monotonic() > deadline:
                break
    exhausted = reached <= lowest and len(hits) < want
    return Scan([(pk, None) for pk in hits[offset:want]], None if exhausted else reached, exhausted)
