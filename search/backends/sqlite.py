"""Running routed queries against the SQLite FTS5 indexes, with filters, BM25 ranking and the
bounded scan that ends every fallback chain."""

from __future__ import annotations

from functools import partial

from django.db import connection

from search.backends import common
from search.backends.common import filters_sql, like_pattern
from search.filters import Filters
from search.fts import FLOOR, MESSAGE_TABLE, table
from search.query import Route


def _like_clauses(needles: tuple[str, ...]) -> tuple[list[str], list]:
    clauses = []
    params = []
    for needle in needles:
        # A tool call is matched by its name and arguments, as the indexes and PostgreSQL's
        # scan see it, not by its JSON (whose keys every call has).
        clauses.append(
            "(m.content LIKE %s ESCAPE '\\' OR (m.tool_calls IS NOT NULL AND "
            "hermes_index_text('trigram', NULL, m.tool_calls) LIKE %s ESCAPE '\\'))"
        )
        params += [like_pattern(needle), like_pattern(needle)]
    return clauses, params


def run_fts(
    route: Route, filters: Filters, limit: int, offset: int
) -> tuple[list[tuple[int, float]], bool, int]:
    """BM25-ranked hits, whether ranking was limited to the newest ``filters.rank_window``
    matches, and how many matched (at most ``rank_window``: phase 1 counts them anyway).

    FTS5 has no top-k pruning: ranking a word that matches 150,000 of a million rows scores every
    one of them (hundreds of milliseconds, as slow as a scan). So ranking is bounded: phase 1
    walks the matches newest first, with the filters, and stops at ``rank_window``; phase 2 scores
    only the rowid range those candidates span, which with the same filters holds exactly them.

    ``bm25()`` also counts, on every query, each term's matches across the whole table it runs
    on. When every candidate is newer than the recent indexes' floor, phase 2 runs on the recent
    twin, where that count is a fraction of the size; the statistics are then the newest
    messages' rather than all of them. A trim racing the query empties that answer (the floor
    check is part of the statement) and the full index answers instead. Each request chooses
    again, so a trim between two pages of one query can change the scores between them.
    """
    where, params = filters_sql(filters)
    likes, like_params = _like_clauses(route.like)
    conditions = [*where, *likes]
    filter_params = [*params, *like_params]

    def select(t: str, columns: str) -> str:
        # Every indexed row is searchable: without filters there is no need to join.
        join = f" JOIN {MESSAGE_TABLE} m ON m.id = {t}.rowid" if conditions else ""
        clause = " AND ".join([f"{t} MATCH %s", *conditions])
        return f"SELECT {columns} FROM {t}{join} WHERE {clause}"

    full = table(route.index)
    with connection.cursor() as cursor:
        cursor.execute(
            select(full, f"{full}.rowid") + f" ORDER BY {full}.rowid DESC LIMIT %s",
            [route.expression, *filter_params, filters.rank_window],
        )
        candidates = [row[0] for row in cursor.fetchall()]
        if not candidates:
            return [], False, 0
        oldest, newest = candidates[-1], candidates[0]
        recent = table(route.index, recent=True)
        for t, floor_check, floor_params in (
            (recent, f" AND %s > {FLOOR}", [oldest]),
            (full, "", []),
        ):
            cursor.execute(
                select(t, f"{t}.rowid, bm25({t})")
                + f" AND {t}.rowid BETWEEN %s AND %s{floor_check}"
                + " ORDER BY 2, 1 LIMIT %s OFFSET %s",  # by score, then id
                [route.expression, *filter_params, oldest, newest, *floor_params, limit, offset],
            )
            scored = [(rowid, float(score)) for rowid, score in cursor.fetchall()]
            if scored or offset >= len(candidates):  # a page past the end is empty anywhere
                break
    return scored, len(candidates) >= filters.rank_window, len(candidates)


# The bounded scan that ends every fallback chain, with this backend's substring match.
run_scan = partial(common.run_scan, _like_clauses)
