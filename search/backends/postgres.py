"""Running routed queries against the PostgreSQL indexes (search.pg): the same routes, filters,
rank window and bounded scan as the SQLite backend, so both give the same hits.

Ranking: ``ts_rank`` for the word and bigram indexes (PostgreSQL has no BM25; hits are the same,
order may differ where the scores do), newest first for trigram matches, which ``pg_trgm`` finds
but does not score. Scores are negated so that, as with FTS5's ``bm25()``, lower is better.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, replace
from functools import partial

from django.db import connection

from search import pg, ranked
from search.backends import common, postgres_first, postgres_kept
from search.backends.common import INDEXED, filters_sql, like_pattern
from search.filters import Filters
from search.fts import MESSAGE_TABLE
from search.query import Route
from search.rows import FirstPage, call_with_first_page, first_page


def _like_clauses(needles: tuple[str, ...], *, narrowed: bool = False) -> tuple[list[str], list]:
    """Case-insensitive substring matches, as SQLite's ``LIKE`` and trigram ``MATCH`` are: LIKE
    on each case variant where there are few (a CJK or punctuation needle has one), ILIKE
    otherwise -- the same rows either way, LIKE at a fraction of ILIKE's cost per row.
    ``narrowed`` (walks only, see pg.narrowed_match): ILIKE only where LIKE found a piece."""
    folds = postgres_first.folds()
    clauses: list[str] = []
    params: list = []
    for needle in needles:
        variants = pg.case_variants(needle, folds)
        pairs = pg.narrowing_pair(needle, folds) if narrowed and variants is None else None
        if variants is not None:
            clauses.append(pg.substring_match(patterns=len(variants), operator="LIKE"))
            params += [like_pattern(v) for v in variants] * 2
        elif pairs is not None:
            clauses.append(pg.narrowed_match(len(pairs)))
            params += [like_pattern(p) for p in pairs] + [like_pattern(needle)] * 2
        else:
            clauses.append(pg.substring_match())
            params += [like_pattern(needle)] * 2
    return clauses, params


def _tsquery(route: Route) -> tuple[str, list]:
    # The phrases go through the same folding as the indexed text (bigram phrases are already
    # cut into pairs by the router, so only folded and split here).
    parts = ["hermes_phrase(hermes_words(%s), %s)" for _ in route.phrases]
    params: list = []
    for phrase, prefix in route.phrases:
        params += [phrase, prefix]
    return "(" + " && ".join(parts) + ")", params


# The trigram route's newest-first search (_trigram_candidates): the first walk's length; how
# far it walks before it judges the density (a channel's or a session's rows come in runs: the
# newest 1,000 ids may hold none of a channel's); and how many rows a walk reads for the cost of
# one match read through the trigram index (its heap page, often not in memory, its text
# checked again).
#
# The probe is short: a fragment it finds nowhere goes to the index at once, and one rarer than
# a match in 141 rows (WALK_PER_MATCH and a window of 1,000 at 1,000,000 rows) ends there after
# MIN_WALK whatever the probe found, so a longer probe only walked longer first. At 1,000,000
# messages (first lookups, 60 of each kind) a rare fragment's answer p50 3.25 ms with 2,000 rows,
# 2.91 with 1,000, 2.55 with 500 (`fact_mixed`; `fact_substring` 3.96, 3.62, 3.50); the common
# fragments' the same with each (means 17.2-17.7 ms and 67-68 ms).
PROBE_ROWS = 500
# The first step through search.pg_trigram's kept plans where the shape allows (off: every
# statement written out, the baseline bench/search.py measures it against).
KEPT_FIRST = True
BOUNDS = f"SELECT min(id), max(id) FROM {MESSAGE_TABLE}"  # where the walks start and end
MIN_WALK = 8_000
WALK_PER_MATCH = 20
# A walk: the primary key backwards. Through the index: the trigram index's bitmap alone (not
# ANDed with the key's, which the planner would do or not by its estimates): search.pg.PLANNED.


def _kept_first(route: Route, filters: Filters) -> bool:
    """Whether a fragment's first step can run through search.pg_trigram's kept plans: one
    fragment, no other LIKE, no filter but the channel."""
    return (
        KEPT_FIRST
        and len(route.phrases) == 1
        and not route.like
        and not filters_sql(replace(filters, channel_id=None))[0]
    )


def trigram_statements(
    walk: list[str], index: list[str], where: list[str]
) -> tuple[str, str, str, str]:
    """The newest matches: of everything (``index`` clauses and ``where``, the planner's
    choice); in an id range (``walk`` clauses and ``where``); in an id range through the
    trigram index alone ("+ 0" keeps the key out of the plan); and the probe: every match of
    the ``walk`` clauses in an id range, each with whether ``where`` keeps it. Parameters: the
    clauses' (the probe's: ``where``'s first), then the bounds (lowest included, highest not),
    then the limit (not the probe's: its range is short)."""
    order = " ORDER BY m.id DESC"
    walk_base = f"SELECT m.id FROM {MESSAGE_TABLE} m WHERE {' AND '.join([*where, *walk])}"
    index_base = f"SELECT m.id FROM {MESSAGE_TABLE} m WHERE {' AND '.join([*index, *where])}"
    kept = " AND ".join(where) or "true"
    probe = f"SELECT m.id, {kept} FROM {MESSAGE_TABLE} m WHERE {' AND '.join(walk)}"
    within = " AND m.id >= %s AND m.id < %s"
    return (
        index_base + order + " LIMIT %s",
        walk_base + within + order + " LIMIT %s",
        index_base + " AND m.id + 0 >= %s AND m.id + 0 < %s" + order + " LIMIT %s",
        probe + within + order,
    )


@dataclass(frozen=True)
class _Written:
    """A trigram route's statements written out (trigram_statements) and their parameters."""

    whole: str
    walk: str
    rest: str
    probe: str
    params: list
    walk_params: list


def _trigram_candidates(
    route: Route,
    filters: Filters,
    where: list[str],
    where_params: list,
    *,
    want: int | None = None,
    above: int = 0,
    below: int | None = None,
    bounds: tuple[int | None, int | None] | None = None,
    along: FirstPage | None = None,
    stepped: list[tuple] | None = None,
) -> list[int]:
    """The newest ``want`` (``rank_window``) matching rows with ids between ``above`` and
    ``below`` (both left out; ``below``: the filters' ``before_id``, or none), newest first.
    With ``along``, a first step answered by the index read brings page one's rows with it.
    ``stepped``: that first step's rows, read already (postgres_first.lookup_and_first_step).

    Reading every match of a common fragment through the trigram index and sorting them by
    recency costs more the longer the history (at 1,000,000 messages, 130,000 rows for a common
    CJK word: 0.7-2 s), and without statistics the planner cannot tell a common fragment from a
    rare one. So the newest rows are walked first (the primary key backwards, as the scan does,
    with a cheap LIKE before any ILIKE): where matches are dense that finds them soonest. The
    density found decides what is next: walking on while that reads fewer rows than
    WALK_PER_MATCH for each match the index would fetch below, else the trigram index reads
    what is left. Each statement's plan is fixed, so none hinges on the planner's estimates;
    the hits are the same either way. (A session's rows have their own index: there the planner
    chooses.)"""
    needles = tuple(p for p, _ in route.phrases)

    @functools.cache
    def written() -> _Written:
        """The statements written out for this route, with their parameters: made only when
        one runs (a first step through the kept plans that answers needs none; their case
        variants cost 0.1-0.2 ms to work out)."""
        match, match_params = _like_clauses(needles)
        extra, extra_params = _like_clauses(route.like)
        walk_match, walk_match_params = _like_clauses(needles, narrowed=True)
        walk_extra, walk_extra_params = _like_clauses(route.like, narrowed=True)
        # The first walk, the probe, reads every channel's matches in its rows, each flagged
        # whether the filters keep it: an empty probe says the fragment is rare, not just this
        # channel's.
        whole, walk, rest, probe = trigram_statements(
            [INDEXED, *walk_match, *walk_extra], [INDEXED, *match, *extra], where
        )
        fragment_params = [*walk_match_params, *walk_extra_params]
        return _Written(
            whole, walk, rest, probe,
            params=[*match_params, *extra_params, *where_params],
            walk_params=[*where_params, *fragment_params],  # the probe's too
        )  # fmt: skip

    want = want or filters.rank_window_size
    with connection.cursor() as cursor:
        if filters.session_id is not None:
            cursor.execute(written().whole, [*written().params, want])
            return [row[0] for row in cursor.fetchall()]
        if bounds is None:
            cursor.execute(BOUNDS)
            bounds = cursor.fetchone()
        lowest, highest = bounds
        if lowest is None or highest is None:  # no rows (min and max are null together)
            return []
        lowest = max(lowest, above + 1)
        reached = min(below or filters.before_id or highest + 1, highest + 1)
        found: list[int] = []
        matches: list[tuple[int, bool]] = []
        read, rows = 0, PROBE_ROWS
        # One fragment, filtered by its channel at most: the probe, and the index read where it
        # finds nothing, in one call with plans kept for the connection (search.pg_trigram).
        kept = _kept_first(route, filters)
        while reached > lowest and len(found) < want:
            lower = max(reached - rows, lowest)
            if not read and kept:
                if stepped is not None and not above and below is None:
                    first = stepped
                else:
                    # With page one's hits and windows, if the index read is the answer.
                    call, step = postgres_first.first_step(
                        needles[0], filters.channel_id, rows, want, along
                    )
                    step[3:3] = [lowest, reached]
                    first = call_with_first_page(cursor, f"SELECT * FROM {call}", step, along)
                if first and first[0][2]:  # the probe found nothing; these are the index's
                    return [row[0] for row in first]
                matches = [(pk, keep) for pk, keep, _ in first]
                found = [pk for pk, keep in matches if keep][:want]
                if not matches:  # nothing at all: the index found none either
                    return []
            elif not read:
                matches = pg.run_planned(
                    cursor, pg.WALK_PLAN, written().probe,
                    [*written().walk_params, lower, reached], "id bigint, keep boolean",
                )  # fmt: skip
                found = [pk for pk, keep in matches if keep][:want]
            else:
                walked = pg.run_planned(
                    cursor, pg.WALK_PLAN, written().walk,
                    [*written().walk_params, lower, reached, want - len(found)], "id bigint",
                )  # fmt: skip
                found += [row[0] for row in walked]
            read, reached = read + reached - lower, lower
            if not matches:
                # No channel has the fragment in the newest rows: the trigram index, which
                # reads every channel's matches, has few to read. (Had another channel some,
                # this one's rows may come in a run further down: the walk goes on.)
                break
            density = len(found) / read
            to_walk = (want - len(found)) / density if found else math.inf
            if read < MIN_WALK:  # too few rows to judge by: a channel's rows come in runs
                rows = MIN_WALK - read
            elif to_walk > WALK_PER_MATCH * density * (reached - lowest):
                break
            else:
                rows = int(min(to_walk * 1.25, 4 * read)) + 1
        if reached > lowest and len(found) < want:
            indexed = pg.run_planned(
                cursor,
                pg.INDEX_PLAN,
                written().rest,
                [*written().params, lowest, reached, want - len(found)],
                "id bigint",
            )
            found += [row[0] for row in indexed]
        return found


def _run_trigram(
    route: Route, filters: Filters, where: list[str], params: list, limit: int, offset: int
) -> tuple[list[tuple[int, float | None]], bool, int, bool]:
    """Newest first. A query whose newest rows the worker keeps (one that fills its window or
    is slow, as for the ranked indexes; search.ranked) reads only its matches newer than the
    refresh and the page: not a window of matches to count them (at 1,000,000 messages, a
    common fragment's window is a walk of 30-50 ms), for an exact count."""
    started = time.perf_counter()
    others = filters_sql(replace(filters, channel_id=None))
    best = None
    bounds = None
    along = first_page(limit, offset)
    stepped = None
    if not route.like and not others[0]:
        both = None
        if ranked.enabled() and _kept_first(route, filters):
            both = postgres_first.lookup_and_first_step(
                route, filters, PROBE_ROWS, offset + limit, along
            )
        if both is not None:
            best, bounds, stepped = both
        else:
            with connection.cursor() as cursor:  # the walks' bounds come along: one round trip
                best, (bounds,) = ranked.lookup_beside(
                    cursor, route.index, route.expression, filters.channel_id, offset + limit,
                    BOUNDS, [],
                )  # fmt: skip
        if (
            best is not None
            and (
                answer := _trigram_over_kept(
                    route, filters, where, params, best, limit, offset, bounds
                )
            )
            is not None
        ):
            return answer
    candidates = _trigram_candidates(
        route, filters, where, params, bounds=bounds, along=along, stepped=stepped
    )
    capped = len(candidates) >= filters.rank_window_size
    took = time.perf_counter() - started
    slow = took > (ranked.SLOW_SECONDS if candidates else ranked.EMPTY_SLOW_SECONDS)
    # A slow fragment is kept even with no match: the answer "none" is then a lookup too.
    if best is None and not route.like and not others[0] and (capped or slow):
        ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
    page: list[tuple[int, float | None]] = [
        (pk, None) for pk in candidates[offset : offset + limit]
    ]
    return page, capped, len(candidates), not capped


def _trigram_over_kept(
    route: Route,
    filters: Filters,
    where: list[str],
    params: list,
    best: ranked.Best,
    limit: int,
    offset: int,
    bounds: tuple[int | None, int | None] | None = None,
) -> tuple[list[tuple[int, float | None]], bool, int, bool] | None:
    """The kept newest rows (scored minus their id, so that the shared merge orders them
    newest first), the matches newer than them, and below them a walk for a page past them.
    None, and a refresh asked for, when the newer matches fill a window."""
    newer: list[int] = []
    if best.anything_newer:
        newer = _trigram_candidates(route, filters, where, params, above=best.upto, bounds=bounds)
    if len(newer) * ranked.REFRESH_SHARE >= filters.rank_window_size:
        ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
    if len(newer) >= filters.rank_window_size:
        return None
    kept = list(best.head or ())  # read with the entry

    def older(n: int) -> list[tuple[int, float]]:
        below = _trigram_candidates(
            route, filters, where, params, want=n, below=best.floor_id, bounds=bounds
        )
        return [(pk, -float(pk)) for pk in below]

    fresh = [(pk, -float(pk)) for pk in newer]
    page, _ = ranked.combine(best, kept, fresh, older, limit, offset)
    return [(pk, None) for pk, _ in page], False, best.matched + len(newer), True


def run_fts(
    route: Route, filters: Filters, limit: int, offset: int
) -> (
    tuple[list[tuple[int, float | None]], bool, int]
    | tuple[list[tuple[int, float | None]], bool, int, bool]
):
    """Ranked hits, whether they were ranked within the newest ``rank_window`` matches only, how
    many matched and (where known) whether that count is exact. A word or bigram query that
    fills its window is ranked over every match from its kept best rows (search.ranked) once
    the worker has them; trigram matches are newest first."""
    where, params = filters_sql(filters)
    if route.index == "trigram":
        return _run_trigram(route, filters, where, params, limit, offset)
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

    def window_ranked(n: int, skip: int = 0) -> list[tuple]:
        cursor.execute(sql, [*query_params, *params, filters.rank_window_size, n, skip])
        return cursor.fetchall()

    started = time.perf_counter()
    with connection.cursor() as cursor:
        # A query whose best rows the worker keeps (a common or a slow one): with the scope
        # alone (a channel, or none) only its newer matches are read and scored; narrowed
        # further, the newest window first, which may hold every match there is.
        others = filters_sql(replace(filters, channel_id=None))
        # With the scope alone, the kept rows a page needs come with the entry.
        first = None if others[0] else offset + limit
        rows: list[tuple] | None = None
        if first is None:
            best = ranked.lookup(cursor, route.index, route.expression, filters.channel_id, first)
        else:
            # The entry or, for a query without one, the first page of its newest window: one
            # round trip (the function runs the window only then).
            window = [*query_params, *params, filters.rank_window_size, limit, offset]
            statement = connection.ops.compose_sql(sql, window)  # type: ignore[attr-defined]
            head = ranked.Window(route.phrases, filters.rank_window_size, limit, offset)
            # The page the search reads next, if this window answers: along, in this round trip.
            best, rows = ranked.lookup_or(
                cursor,
                route.index,
                route.expression,
                filters.channel_id,
                first,
                statement,
                head,
                first_page(limit, offset),
            )
            if rows is not None:  # the function's rows come unordered: the window's order
                rows.sort(key=lambda row: (row[1], row[0]))

        def over_every_match(best: ranked.Best) -> tuple | None:
            return postgres_kept.over_every_match(
                cursor, route, filters, best, (query, query_params), window_ranked, others,
                limit, offset,
            )  # fmt: skip

        if best is not None and not others[0] and (answer := over_every_match(best)) is not None:
            return answer
        if rows is None:
            rows = window_ranked(limit, offset)
        if not rows and offset:
            # A page past the end: the count still says how many there are.
            top = window_ranked(1)
            count = top[0][2] if top else 0
        else:
            count = rows[0][2] if rows else 0
        took = time.perf_counter() - started
        slow = took > (ranked.SLOW_SECONDS if count else ranked.EMPTY_SLOW_SECONDS)
        # A slow query is kept even with no match (a phrase whose words are common, together
        # nowhere): "none" is then a lookup too.
        if best is None and (count >= filters.rank_window_size or slow):
            ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
        elif best is not None and count >= filters.rank_window_size and others[0]:
            answer = over_every_match(best)
            if answer is not None:
                return answer
    page: list[tuple[int, float | None]] = [(pk, float(score)) for pk, score, _ in rows]
    return page, count >= filters.rank_window_size, count


def best_rows(route: Route, channel_id: int | None, upto: int, n: int) -> tuple[list, int]:
    """Every match up to ``upto`` in the scope, scored: the best ``n`` and how many matched."""
    if route.index == "trigram":
        return _trigram_best_rows(route, channel_id, upto, n)
    query, query_params = _tsquery(route)
    vector = pg.vector(route.index)
    clauses = [INDEXED, f"{vector} @@ q.query", "m.id <= %s"]
    params: list = [upto]
    if channel_id is not None:
        clauses.append("m.channel_id = %s")
        params.append(channel_id)
    body = f"FROM {MESSAGE_TABLE} m, q WHERE {' AND '.join(clauses)}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH q AS (SELECT {query} AS query) SELECT m.id, -ts_rank({vector}, q.query) "
            f"{body} ORDER BY 2, 1 LIMIT %s",
            [*query_params, *params, n],
        )
        rows = [(pk, float(score)) for pk, score in cursor.fetchall()]
        cursor.execute(
            f"WITH q AS (SELECT {query} AS query) SELECT count(*) {body}",
            [*query_params, *params],
        )
        return rows, cursor.fetchone()[0]


def _trigram_best_rows(route: Route, channel_id: int | None, upto: int, n: int) -> tuple[list, int]:
    """The newest ``n`` matches up to ``upto`` in the scope (scored minus their id: newest
    first) and how many there are, counted through the trigram index (in the worker: at
    1,000,000 messages 0.02-0.4 s, and 2 s for a CJK word in one message of eight)."""
    filters = Filters(channel_id=channel_id).resolved()
    where, params = filters_sql(filters)
    newest = _trigram_candidates(route, filters, where, params, want=n, below=upto + 1)
    match, match_params = _like_clauses(tuple(p for p, _ in route.phrases))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {MESSAGE_TABLE} m WHERE "
            + " AND ".join([INDEXED, *match, *where, "m.id <= %s"]),
            [*match_params, *params, upto],
        )
        return [(pk, -float(pk)) for pk in newest], cursor.fetchone()[0]


# The bounded scan that ends every fallback chain, with this backend's substring match.
run_scan = partial(common.run_scan, _like_clauses)
