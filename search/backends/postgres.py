"""Running routed queries against the PostgreSQL indexes (search.pg): the same routes, filters,
rank window and bounded scan as the SQLite backend, so both give the same hits.

Ranking: ``ts_rank`` for the word and bigram indexes (PostgreSQL has no BM25; hits are the same,
order may differ where the scores do), newest first for trigram matches, which ``pg_trgm`` finds
but does not score. Scores are negated so that, as with FTS5's ``bm25()``, lower is better.
"""

from __future__ import annotations

from functools import partial

from django.db import connection

from search import pg
from search.backends import common
from search.backends.common import INDEXED, filters_sql, like_pattern
from search.filters import Filters
from search.fts import MESSAGE_TABLE
from search.query import Route


def _like_clauses(needles: tuple[str, ...]) -> tuple[list[str], list]:
    """Case-insensitive substring matches, as SQLite's ``LIKE`` and trigram ``MATCH`` are."""
    params: list = []
    for needle in needles:
        params += [like_pattern(needle)] * 2
    return [pg.substring_match() for _ in needles], params


def _tsquery(route: Route) -> tuple[str, list]:
    # The phrases go through the same folding as the indexed text (bigram phrases are already
    # cut into pairs by the router, so only folded and split here).
    parts = ["hermes_phrase(hermes_words(%s), %s)" for _ in route.phrases]
    params: list = []
    for phrase, prefix in route.phrases:
        params += [phrase, prefix]
    return "(" + " && ".join(parts) + ")", params


def run_fts(
    route: Route, filters: Filters, limit: int, offset: int
) -> tuple[list[tuple[int, float | None]], bool, int]:
    """Ranked hits among the newest ``rank_window`` matches, whether the window was full, and
    how many matched (at most ``rank_window``)."""
    where, params = filters_sql(filters)
    if route.index == "trigram":
        match, match_params = _like_clauses(tuple(p for p, _ in route.phrases))
        extra, extra_params = _like_clauses(route.like)
        clauses = [INDEXED, *match, *where, *extra]
        sql = (
            f"SELECT m.id FROM {MESSAGE_TABLE} m WHERE {' AND '.join(clauses)} "
            "ORDER BY m.id DESC LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*match_params, *params, *extra_params, filters.rank_window])
            candidates = [row[0] for row in cursor.fetchall()]
        page = [(pk, None) for pk in candidates[offset : offset + limit]]
        return page, len(candidates) >= filters.rank_window, len(candidates)
    query, query_params = _tsquery(route)
    vector = pg.vector(route.index)
    clauses = [INDEXED, f"{vector} @@ q.query", *where]
    sql = (
        f"WITH q AS (SELECT {query} AS query), "
        f"candidates AS (SELECT m.id, ts_rank({vector}, q.query) AS rank "
        f"FROM {MESSAGE_TABLE} m, q WHERE {' AND '.join(clauses)} "
        "ORDER BY m.id DESC LIMIT %s) "
        "SELECT id, -rank, (SELECT count(*) FROM candidates) FROM candidates "
        "ORDER BY rank DESC, id ASC LIMIT %s OFFSET %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*query_params, *params, filters.rank_window, limit, offset])
        rows = cursor.fetchall()
        if not rows and offset:
            # A page past the end: the count still says how many there are.
            cursor.execute(sql, [*query_params, *params, filters.rank_window, 1, 0])
            first = cursor.fetchall()
            count = first[0][2] if first else 0
            return [], count >= filters.rank_window, count
    if not rows:
        return [], False, 0
    count = rows[0][2]
    return [(pk, float(score)) for pk, score, _ in rows], count >= filters.rank_window, count


# The bounded scan that ends every fallback chain, with this backend's substring match.
run_scan = partial(common.run_scan, _like_clauses)
