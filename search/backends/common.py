"""What both backends share: the filters as SQL over the messages table (alias ``m``)."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection

from search.filters import Filters
from search.fts import MESSAGE_TABLE

SESSION_TABLE = "sessions_app_session"
KIND_SQL = {
    "live": "(m.active AND NOT m.is_summary)",
    "summary": "(m.active AND m.is_summary)",
    "archived": "(m.compressed)",
}
INDEXED = "(m.active OR m.compressed)"
ROLLED_BACK = "(NOT m.active AND NOT m.compressed)"


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
        where.append(f"m.session_id IN (SELECT id FROM {SESSION_TABLE} WHERE channel_id = %s)")
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
    return where, params


def run_scan(
    like_clauses: Callable[[tuple[str, ...]], tuple[list[str], list]],
    needles: tuple[str, ...],
    filters: Filters,
    limit: int,
    offset: int,
    *,
    rolled_back: bool = False,
) -> list[tuple[int, None]]:
    """The answer of last resort, on either backend (``like_clauses`` is its substring match):
    at most ``filters.scan_rows`` of the newest rows (a session's rows when one is given), so it
    can never become a full-table scan."""
    where, params = filters_sql(filters)
    likes, like_params = like_clauses(needles)
    bound: list[str] = []
    bound_params: list = []
    if filters.session_id is None:
        bound.append(f"m.id > (SELECT coalesce(max(id), 0) FROM {MESSAGE_TABLE}) - %s")
        bound_params.append(filters.scan_rows)
    clauses = [ROLLED_BACK if rolled_back else INDEXED, *bound, *where, *likes]
    sql = (
        f"SELECT m.id FROM {MESSAGE_TABLE} m WHERE {' AND '.join(clauses)} "
        "ORDER BY m.id DESC LIMIT %s OFFSET %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*bound_params, *params, *like_params, limit, offset])
        return [(row[0], None) for row in cursor.fetchall()]
