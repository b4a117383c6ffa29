"""Running routed queries against the SQLite FTS5 indexes, with filters, BM25 ranking and the
bounded scan that ends every fallback chain."""

from __future__ import annotations

from functools import partial

from django.db import connection

from search.backends import common
from search.backends.common import filters_sql, like_pattern
from search.filters import Filters
from search.fts import MESSAGE_TABLE, table
from search.query import Route


def _like_clauses(needles: tuple[str, ...]) -> tuple[list[str], list]:
    clauses = []
    params = []
    for needle in needles:
        clauses.append("(m.content LIKE %s ESCAPE '\\' OR m.tool_calls LIKE %s ESCAPE '\\')")
        params += [like_pattern(needle), like_pattern(needle)]
    return clauses, params


def run_fts(
    route: Route, filters: Filters, limit: int, offset: int
) -> tuple[list[tuple[int, float]], bool]:
    """BM25-ranked hits, and whether ranking was limited to the newest ``filters.rank_window``
    matches.

    FTS5 has no top-k pruning: ranking a word that matches 150,000 of a million rows scores every
    one of them (hundreds of milliseconds, as slow as a scan). So ranking is bounded: phase 1
    walks the matches newest first, with the filters, and stops at ``rank_window``; phase 2 scores
    only the rowid range those candidates span. Scores are still true BM25 (FTS5's statistics are
    global); only older matches beyond the window are left out, and the result says so.
    """
    t = table(route.index)
    where, params = filters_sql(filters)
    likes, like_params = _like_clauses(route.like)
    clauses = [f"{t} MATCH %s", *where, *likes]
    with connection.cursor() as cursor:
        if where or likes:
            cursor.execute(
                f"SELECT {t}.rowid FROM {t} JOIN {MESSAGE_TABLE} m ON m.id = {t}.rowid "
                f"WHERE {' AND '.join(clauses)} ORDER BY {t}.rowid DESC LIMIT %s",
                [route.expression, *params, *like_params, filters.rank_window],
            )
        else:  # every indexed row is searchable: no need to join (operators, the CLI)
            cursor.execute(
                f"SELECT rowid FROM {t} WHERE {t} MATCH %s ORDER BY rowid DESC LIMIT %s",
                [route.expression, filters.rank_window],
            )
        candidates = {row[0] for row in cursor.fetchall()}
        if not candidates:
            return [], False
        cursor.execute(
            f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH %s AND rowid BETWEEN %s AND %s",
            [route.expression, min(candidates), max(candidates)],
        )
        scored = sorted(
            ((rowid, float(score)) for rowid, score in cursor.fetchall() if rowid in candidates),
            key=lambda pair: (pair[1], pair[0]),
        )
    return scored[offset : offset + limit], len(candidates) >= filters.rank_window


# The bounded scan that ends every fallback chain, with this backend's substring match.
run_scan = partial(common.run_scan, _like_clauses)
