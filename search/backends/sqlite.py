"""Running routed queries against the SQLite FTS5 indexes, with filters, BM25 ranking and the
bounded scan that ends every fallback chain."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from django.db import connection

from search import ranked
from search.backends import common
from search.backends.common import filters_sql, like_pattern
from search.filters import Filters
from search.fts import CHANNEL_INDEX, FLOOR, MESSAGE_TABLE, table
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


def _join(filtered: bool, channel_only: bool) -> str:
    """The messages joined to an FTS5 table ``%(t)s``: none without filters (every indexed row
    is searchable), the channel's index alone when the channel is the only filter."""
    if not filtered:
        return ""
    index = f" INDEXED BY {CHANNEL_INDEX}" if channel_only else ""
    return f" JOIN {MESSAGE_TABLE} m{index} ON m.id = %(t)s.rowid"


def run_fts(
    route: Route, filters: Filters, limit: int, offset: int
) -> tuple[list[tuple[int, float]], bool, int, bool]:
    """BM25-ranked hits, whether ranking was limited to the newest ``filters.rank_window``
    matches, how many matched (at most ``rank_window``: phase 1 counts them anyway, unless a
    common query's best rows count them all) and whether that count is exact.

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
    others = filters_sql(replace(filters, channel_id=None))
    join = _join(bool(conditions), channel_only=not (others[0] or likes))

    def select(t: str, columns: str) -> str:
        clause = " AND ".join([f"{t} MATCH %s", *conditions])
        return f"SELECT {columns} FROM {t}{join % {'t': t}} WHERE {clause}"

    full = table(route.index)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        # The recent indexes' floor, read with the newest matches (once, not per row).
        below: int | None = None

        def newest(above: int = 0) -> list[int]:
            nonlocal below
            cursor.execute(
                select(full, f"{full}.rowid, {FLOOR}")
                + f" AND {full}.rowid > %s ORDER BY {full}.rowid DESC LIMIT %s",
                [route.expression, *filter_params, above, filters.rank_window_size],
            )
            rows = cursor.fetchall()
            if rows:
                below = rows[0][1]
            return [row[0] for row in rows]

        candidates: list[int] | None = None

        def window_ranked(n: int, skip: int = 0) -> list[tuple[int, float]]:
            nonlocal candidates
            if candidates is None:
                candidates = newest()
            if not candidates:
                return []
            oldest, newest_id = candidates[-1], candidates[0]
            recent = table(route.index, recent=True)
            scored: list[tuple[int, float]] = []
            # Known, the floor spares a statement bound to find nothing when the window reaches
            # below it (the statement's own check stays: a trim may raise it in between).
            tables: list[tuple[str, str, list]] = [(full, "", [])]
            if below is not None and oldest > below:
                tables.insert(0, (recent, f" AND %s > {FLOOR}", [oldest]))
            for t, floor_check, floor_params in tables:
                cursor.execute(
                    select(t, f"{t}.rowid, bm25({t})")
                    + f" AND {t}.rowid BETWEEN %s AND %s{floor_check}"
                    + " ORDER BY 2, 1 LIMIT %s OFFSET %s",  # by score, then id
                    [route.expression, *filter_params, oldest, newest_id, *floor_params, n, skip],
                )
                scored = [(rowid, float(score)) for rowid, score in cursor.fetchall()]
                if scored or skip >= len(candidates):  # a page past the end is empty anywhere
                    break
            return scored

        # A query whose best rows the worker keeps (a common or a slow one): with the scope
        # alone (a channel, or none) it reads only its newer matches; narrowed further (a
        # session, a role, a time), the newest window first, which may hold every match.
        best = None
        if not route.like:
            best = ranked.lookup(cursor, route.index, route.expression, filters.channel_id)

        def window_complete() -> bool:
            return candidates is not None and len(candidates) < filters.rank_window_size

        def over_every_match(best: ranked.Best, newer: list[int]) -> tuple:
            return _over_every_match(
                cursor, route, filters, best, newer, select, filter_params,
                (window_ranked, window_complete), others, limit, offset,
            )  # fmt: skip

        if best is not None and not others[0]:
            newer = newest(best.upto) if best.anything_newer else []
            if len(newer) < filters.rank_window_size:
                return over_every_match(best, newer)
        candidates = newest()
        capped = len(candidates) >= filters.rank_window_size
        if best is not None and capped and candidates[-1] <= best.upto:
            return over_every_match(best, [pk for pk in candidates if pk > best.upto])
        if not candidates:
            return [], False, 0, True
        page = window_ranked(limit, offset)
        slow = time.perf_counter() - started > ranked.SLOW_SECONDS
        if (capped or (slow and best is None)) and not route.like:
            ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
        return page, capped, len(candidates), not capped


def _over_every_match(
    cursor,
    route: Route,
    filters: Filters,
    best: ranked.Best,
    newer: list[int],
    select: Callable[[str, str], str],
    filter_params: list,
    window: tuple[Callable[[int], list[tuple[int, float]]], Callable[[], bool]],
    others: tuple[list[str], list],
    limit: int,
    offset: int,
) -> tuple[list[tuple[int, float]], bool, int, bool]:
    """A common query ranked over every match: its best rows, kept by the worker
    (search.ranked), and its ``newer`` matches (fewer than a window), scored now. Asks for a
    refresh once those reach a tenth of a window."""
    if len(newer) * ranked.REFRESH_SHARE >= filters.rank_window_size:
        ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
    fresh: list[tuple[int, float]] = []
    if newer:
        # Scored on the full index, as the kept rows were (the recent twin's statistics are
        # the newest rows', not comparable).
        t = table(route.index)
        cursor.execute(
            select(t, f"{t}.rowid, bm25({t})") + f" AND {t}.rowid BETWEEN %s AND %s",
            [route.expression, *filter_params, newer[-1], newer[0]],
        )
        fresh = [(rowid, float(score)) for rowid, score in cursor.fetchall()]
    where, params = others
    kept = ranked.kept(cursor, best, where, params, offset + limit)
    page, exact = ranked.combine(best, kept, fresh, window[0], limit, offset, window[1])
    if not where:  # the scope alone: the kept count is of the same rows
        return page, not exact, best.matched + len(newer), True
    # Narrowed further: at least a window's worth (it filled one), or what was seen.
    seen = len({pk for pk, _ in kept} | {pk for pk, _ in fresh})
    return page, not exact, max(filters.rank_window_size, seen), False


def best_rows(route: Route, channel_id: int | None, upto: int, n: int) -> tuple[list, int]:
    """Every match up to ``upto`` in the scope, scored on the full index: the best ``n`` and
    how many matched. (FTS5 scores each one: ~2 µs a match, in the worker.)"""
    t = table(route.index)
    join = _join(channel_id is not None, channel_only=True) % {"t": t}
    where = f" WHERE {t} MATCH %s AND {t}.rowid <= %s"
    params: list = [route.expression, upto]
    if channel_id is not None:
        where += " AND m.channel_id = %s"
        params.append(channel_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {t}.rowid, bm25({t}) FROM {t}{join}{where} ORDER BY 2, 1 LIMIT %s",
            [*params, n],
        )
        rows = [(rowid, float(score)) for rowid, score in cursor.fetchall()]
        cursor.execute(f"SELECT count(*) FROM {t}{join}{where}", params)
        return rows, cursor.fetchone()[0]


# The bounded scan that ends every fallback chain, with this backend's substring match.
run_scan = partial(common.run_scan, _like_clauses)
