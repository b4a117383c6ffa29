"""PostgreSQL: a common query ranked over every match -- its best rows, kept by the worker
(search.ranked), and its matches newer than them, scored now -- apart from the lookup that
decides to (search.backends.postgres.run_fts)."""

from __future__ import annotations

from collections.abc import Callable

from search import pg, ranked
from search.backends.common import INDEXED, filters_sql
from search.filters import Filters
from search.fts import MESSAGE_TABLE
from search.query import Route


def over_every_match(
    cursor,
    route: Route,
    filters: Filters,
    best: ranked.Best,
    tsquery: tuple[str, list],
    window_ranked: Callable[[int], list[tuple]],
    others: tuple[list[str], list],
    limit: int,
    offset: int,
) -> tuple[list[tuple[int, float]], bool, int, bool] | None:
    """A common query ranked over every match: its best rows, kept by the worker
    (search.ranked), and its matches newer than them, scored now (``ts_rank`` needs no corpus
    statistics, so a kept score is what a lookup would compute). None, and a refresh asked
    for, when the newer matches fill a window."""
    query, query_params = tsquery
    vector = pg.vector(route.index)
    where, params = filters_sql(filters)
    clauses = [INDEXED, f"{vector} @@ q.query", "m.id > %s", *where]
    # The matches since the refresh are the newest rows: walk the primary key down to it,
    # whatever the statistics say (without them the planner may fetch every match of a common
    # word through its GIN index, or read the table, and sort them). The walk stops at a window
    # of matches.
    fresh: list[tuple[int, float]] = []
    if best.anything_newer:
        newer = pg.run_planned(
            cursor,
            pg.WALK_PLAN,
            f"WITH q AS (SELECT {query} AS query) SELECT m.id, -ts_rank({vector}, q.query) "
            f"FROM {MESSAGE_TABLE} m, q WHERE {' AND '.join(clauses)} "
            "ORDER BY m.id DESC LIMIT %s",
            [*query_params, best.upto, *params, filters.rank_window_size],
            "id bigint, score real",
        )
        fresh = [(pk, float(score)) for pk, score in newer]
    if len(fresh) * ranked.REFRESH_SHARE >= filters.rank_window_size:
        ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
    if len(fresh) >= filters.rank_window_size:
        return None
    if best.head is not None and not others[0]:
        kept = list(best.head)  # read with the entry
    else:
        kept = ranked.kept(cursor, best, *others, offset + limit)
    counted: list[int] = []

    def tail(n: int) -> list[tuple[int, float]]:
        rows = window_ranked(n)
        counted.append(rows[0][2] if rows else 0)
        return [(pk, float(score)) for pk, score, _ in rows]

    page, exact = ranked.combine(
        best, kept, fresh, tail, limit, offset, lambda: counted[-1] < filters.rank_window_size
    )
    if not others[0]:  # the scope alone: the kept count is of the same rows
        return page, not exact, best.matched + len(fresh), True
    seen = len({pk for pk, _ in kept} | {pk for pk, _ in fresh})
    return page, not exact, max(filters.rank_window_size, seen), False
