"""Ranking over every match of a common query: its best rows, kept by the worker.

A lookup reads the newest ``search.rank_window`` matches first. A query that matches more (a
common word) could only be ranked within those, so an older, better match was never returned
however far one paged. For such a query -- and for one whose lookup is slow
(``SLOW_SECONDS``) -- the worker keeps its *best rows*: every match up to a message id
(``upto``) scored once, the best ``search.rank_keep`` kept with their scores, for one
scope (a channel, or every channel). A lookup then merges them with the matches newer than
``upto`` -- the newest window holds those -- scored on the same index, and the page is exact as
far as it stays ahead of the worst kept row (``floor``, by score then id, the order of every
ranking here): every match that was not kept comes after it.
A page past that point is filled from the newest window's ranking and says so
(``ranked_within``), as does the first lookup of a common query (it asks for the refresh) and one
whose newer matches fill the whole window (it asks again).

The kept scores are those of their refresh. BM25's statistics (how many rows hold a term, the
mean length) move slowly as rows arrive; a refresh is asked for once the query's new matches
reach a tenth of a window, which bounds the drift. PostgreSQL's ``ts_rank`` has no such statistics.

Stored: the index, the query's index expression, message ids and scores -- never message text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from django.db import connection, transaction
from django.utils import timezone

from core import later
from search import rows
from search.fts import MESSAGE_TABLE

# The tables and functions (their schema); the names stay readable here as search.ranked's.
from search.ranked_schema import (  # noqa: F401
    ALL_CHANNELS,
    CREATE_HEAD_FUNCTION,
    CREATE_HEAD_OR_FUNCTION,
    CREATE_HEAD_OR_PAGE_FUNCTION,
    DROP_HEAD_FUNCTION,
    DROP_HEAD_OR_FUNCTION,
    DROP_STATEMENTS,
    HEAD_FUNCTION,
    HEAD_OR_FUNCTION,
    HEAD_OR_PAGE_FUNCTION,
    ROWS,
    TERMS,
    create_statements,
)

logger = logging.getLogger(__name__)


# A lookup asks for a refresh at most this often per query and scope, per process...
ASK_EVERY_SECONDS = 30.0
# ...once the matches newer than the kept rows reach this share of a window (1/10): each costs
# the lookup a moment to score (on SQLite, a pass over the term's matches to count them).
REFRESH_SHARE = 10
# A query that matches fewer than a window is kept too when its lookup took this long (a phrase
# of common words, whose position lists the index intersects on every lookup): then only its
# matches newer than the refresh are read. A kept lookup takes 0.2-0.5 ms at 1,000,000 messages
# on either backend. The bar is not lower because a refresh is not free: a queued task, the
# worker's read and its write, which runs beside the requests that come next (and on SQLite
# makes every web connection read its pages again). A rare question's first lookup took 1-2.5 ms
# at 1,000,000 messages on either backend (more on a busy machine: a bar near that time asks
# more refreshes the busier the machine is), to save under a millisecond on a repeat. Under
# `manage.py serve` on SQLite, each of 240 rare facts asked in turn, a first request took p95
# 6.36 ms with this bar against 7.43 with 1 ms, and the HTTP path beside its search 3.79
# against 4.79 (four rounds alternated); on PostgreSQL a request after a new rare question took
# 2-3 ms longer at p50 with 1 ms.
SLOW_SECONDS = 0.003
# On PostgreSQL a query that matched nothing is kept once its lookup took this long: answering
# "none" from its entry (one call, ~0.1 ms) costs less than asking the index again (a phrase of
# common words intersects their long lists to find nothing: 1-2 ms at 1,000,000 messages).
EMPTY_SLOW_SECONDS = 0.0005

Scored = tuple[int, float]


@dataclass(frozen=True)
class Window:
    """A first page of a query's newest window, as lookup_or reads it for a rare query: the
    route's phrases (text, prefix), the window's size, the page."""

    phrases: tuple[tuple[str, bool], ...]
    size: int
    limit: int
    offset: int


@dataclass(frozen=True)
class Best:
    id: int
    upto: int  # every match with an id up to this one was scored
    matched: int  # how many of them there were (in the scope)
    floor: float | None  # the worst kept row's score; None: every match is kept
    floor_id: int | None  # ...and its id (ties are ranked by id)
    # The newest message id when it was looked up: none newer than ``upto``, nothing to read.
    newest: int | None = None
    # The first kept rows that still count, read with the entry (``lookup``'s ``first``, on
    # PostgreSQL); None: not read.
    head: tuple[Scored, ...] | None = None

    @property
    def anything_newer(self) -> bool:
        return self.newest is None or self.newest > self.upto


def scope(channel_id: int | None) -> int:
    return ALL_CHANNELS if channel_id is None else channel_id


def enabled() -> bool:
    from core.config import get_config

    return get_config().search.rank_queries > 0


def lookup(
    cursor, index: str, expression: str, channel_id: int | None, first: int | None = None
) -> Best | None:
    """The query's entry; with ``first``, on PostgreSQL, its ``first`` kept rows that still
    count too (``Best.head``: what ``kept`` would read without other filters), in one call."""
    if not enabled():
        return None
    if first is not None and connection.vendor == "postgresql":
        cursor.execute(*head_call(index, expression, channel_id, first))
        return _from_head(cursor.fetchall())
    cursor.execute(
        f"SELECT id, upto, matched, floor, floor_id, (SELECT max(id) FROM {MESSAGE_TABLE}) "
        f"FROM {TERMS} WHERE idx = %s AND expression = %s AND channel_id = %s",
        [index, expression, scope(channel_id)],
    )
    row = cursor.fetchone()
    return Best(*row) if row else None


def lookup_beside(
    cursor,
    index: str,
    expression: str,
    channel_id: int | None,
    first: int,
    sql: str,
    params: Sequence,
) -> tuple[Best | None, list[tuple]]:
    """``lookup`` with ``first`` on PostgreSQL, and ``sql`` (what the route reads next whether
    or not the query is kept) in the same round trip: the entry and ``sql``'s rows."""
    if not enabled():
        cursor.execute(sql, params)
        return None, cursor.fetchall()
    head, head_params = head_call(index, expression, channel_id, first)
    cursor.execute(f"{head}; {sql}", [*head_params, *params])
    best = _from_head(cursor.fetchall())
    cursor.nextset()
    return best, cursor.fetchall()


def head_call(index: str, expression: str, channel_id: int | None, first: int) -> tuple[str, list]:
    """``lookup``'s one call with ``first`` on PostgreSQL, for a round trip that carries other
    statements; its rows go to ``from_head``."""
    return (
        f"SELECT * FROM {HEAD_FUNCTION}(%s, %s, %s, %s)",
        [index, expression, scope(channel_id), first],
    )


def from_head(rows: list[tuple]) -> Best | None:
    """The entry read by ``head_call``, or None."""
    return _from_head(rows)


def lookup_or(
    cursor,
    index: str,
    expression: str,
    channel_id: int | None,
    first: int,
    statement: str,
    window: Window,
    page: rows.FirstPage | None = None,
) -> tuple[Best | None, list[tuple] | None]:
    """``lookup`` with ``first`` on PostgreSQL; for a query without an entry, the first page of
    its newest ``window`` instead (``(id, score, count)``), read in the same call: by
    ``statement`` (a complete statement, its values in its text) or, for a rare query, by the
    kept plan of search.pg.RARE_WINDOW. (the entry, None) or (None, the rows, in no order).
    With ``page``, that window's page of hits and their windows come in the same round trip too
    (HEAD_OR_PAGE_FUNCTION), kept for search.rows.read_page."""
    if not enabled():
        cursor.execute(statement)
        return None, cursor.fetchall()
    function = HEAD_OR_FUNCTION if page is None else HEAD_OR_PAGE_FUNCTION
    found = rows.call_with_first_page(
        cursor,
        f"SELECT * FROM {function}(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [
            index, expression, scope(channel_id), first, statement,
            [phrase for phrase, _ in window.phrases], [prefix for _, prefix in window.phrases],
            window.size, window.limit, window.offset,
        ],
        page,
    )  # fmt: skip
    best, window_rows = None, None
    if found and found[0][0] is not None:
        best = _from_head(found)
    else:
        window_rows = [(row[6], row[7], row[2]) for row in found]
    return best, window_rows


def _from_head(rows: list[tuple]) -> Best | None:
    if not rows:
        return None
    head = tuple((row[6], float(row[7])) for row in rows if row[6] is not None)
    entry, upto, matched, floor, floor_id, newest = rows[0][:6]
    return Best(entry, upto, matched, floor, floor_id, newest, head=head)


def kept(
    cursor, best: Best, conditions: Sequence[str], params: Sequence, first: int
) -> list[Scored]:
    """The ``first`` best kept rows that still count: indexed (not rolled back since), not
    erased, and within the lookup's other filters (``conditions`` over the messages table as
    ``m``). A page needs no more: with the newer matches, they rank ahead of every other row
    (``combine``), or they are all there are."""
    where = " AND ".join(["r.query_id = %s", "(m.active OR m.compressed)", *conditions])
    cursor.execute(
        f"SELECT r.message_id, r.score FROM {ROWS} r JOIN {MESSAGE_TABLE} m "
        f"ON m.id = r.message_id WHERE {where} ORDER BY r.score, r.message_id LIMIT %s",
        [best.id, *params, first],
    )
    return [(pk, float(score)) for pk, score in cursor.fetchall()]


def combine(
    best: Best,
    kept_rows: Sequence[Scored],
    fresh: Sequence[Scored],
    window_ranked: Callable[[int], list[Scored]],
    limit: int,
    offset: int,
    window_complete: Callable[[], bool] = lambda: False,
) -> tuple[list[Scored], bool]:
    """The page (lower scores first, then ids) and whether it is exactly ranked over every match.

    ``kept_rows``: the kept rows (scored at their refresh); ``fresh``: the matches newer than
    ``best.upto``, scored now. Together, the rows ranked up to the worst kept one (by score,
    then id: ties are common where ``ts_rank`` ignores length) are the true head of the
    ranking: a match not kept ranks after it, and a newer match tied with it has a greater id
    than every older one. Past that head, ``window_ranked(n)`` (the newest window's best
    ``n``) fills the page, without the head's rows: exact too if that window held every match
    (``window_complete()``, asked after it was read)."""
    scores = dict(kept_rows)
    scores.update(fresh)  # a fresh score is the newer one
    merged = sorted(scores.items(), key=lambda r: (r[1], r[0]))
    if best.floor is None:
        return merged[offset : offset + limit], True  # every match is scored
    worst = (best.floor, best.floor_id)
    head = [r for r in merged if (r[1], r[0]) <= worst]
    if offset + limit <= len(head):
        return head[offset : offset + limit], True
    seen = {pk for pk, _ in head}
    rest = [r for r in window_ranked(offset + limit + len(head)) if r[0] not in seen]
    return (head + rest)[offset : offset + limit], window_complete()


_asked: dict[tuple[str, str, int], float] = {}
_asked_lock = threading.Lock()
_pending = threading.local()


def request(index: str, expression: str, phrases: Sequence, channel_id: int | None) -> None:
    """Note that a query's best rows should be refreshed; ``flush()``, once the lookup has
    finished with the database, hands the ask to the enqueuer. At most once per
    ``ASK_EVERY_SECONDS`` per query and scope, per process."""
    if not enabled():
        return
    key = (index, expression, scope(channel_id))
    now = time.monotonic()
    with _asked_lock:
        if now - _asked.get(key, -ASK_EVERY_SECONDS) < ASK_EVERY_SECONDS:
            return
        _asked[key] = now
        if len(_asked) > 10_000:
            _asked.clear()
    asks = getattr(_pending, "asks", None)
    if asks is None:
        asks = _pending.asks = []
    asks.append((key, [list(p) for p in phrases], channel_id))


def forget_asks() -> None:
    """Drop the refreshes this thread's lookups asked for and have not flushed (a warm-up's)."""
    _pending.asks = []


def flush() -> None:
    """Hand the refreshes this thread's lookups asked for to the process's thread for writes
    made after the answer (core.later): queueing a task is a write -- on SQLite's ORM broker a
    write transaction that waits for the lock behind every append, and django-q2 may close the
    connection before it writes, so the next lookup would start on a cold one -- and a search
    makes no write on its request path. An ask is a hint: one lost when the process stops is
    asked again by a later lookup."""
    asks, _pending.asks = getattr(_pending, "asks", None) or [], []
    if not asks:
        return
    from core.logs import task_kwargs

    batch = [(*ask, task_kwargs()) for ask in asks]
    later.run_later(partial(_enqueue, batch), "queueing the ranking refreshes")


def drain(timeout: float = 5.0) -> bool:
    """Wait until the asks handed over are queued (tests and benches)."""
    return later.drain(timeout)


Ask = tuple[tuple[str, str, int], list, int | None, dict[str, str]]


def _enqueue(batch: Sequence[Ask]) -> None:
    """Queue each refresh. A refused queue (the broker is down) costs the search nothing: it is
    logged, and the next lookup asks again."""
    from django_q.tasks import async_task

    for key, phrases, channel_id, kwargs in batch:
        index, expression, _ = key
        try:
            async_task(
                "search.tasks.refresh_ranked",
                index,
                expression,
                phrases,
                channel_id,
                task_name=f"rank {index} {expression[:60]}",
                group="search",
                # A success is not kept: refreshes would push the compressions out of the
                # queue's list of done tasks, and their arguments hold the query's words.
                save=False,
                **kwargs,
            )
        except Exception:  # a search never fails for its background work
            logger.warning("could not queue the ranking refresh of %r", expression, exc_info=True)
            with _asked_lock:
                _asked.pop(key, None)


def store(
    index: str,
    expression: str,
    channel_id: int | None,
    upto: int,
    matched: int,
    best: Sequence[Scored],
    keep: int,
    max_queries: int,
) -> None:
    """Replace a query's best rows in one short write transaction; the least recently
    refreshed queries beyond ``max_queries`` go."""
    rows = list(best[:keep])
    last = rows[-1] if rows and (len(best) > keep or matched > len(rows)) else None
    floor, floor_id = (last[1], last[0]) if last else (None, None)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {ROWS} WHERE query_id IN (SELECT id FROM {TERMS} "
            "WHERE idx = %s AND expression = %s AND channel_id = %s)",
            [index, expression, scope(channel_id)],
        )
        cursor.execute(
            f"DELETE FROM {TERMS} WHERE idx = %s AND expression = %s AND channel_id = %s",
            [index, expression, scope(channel_id)],
        )
        cursor.execute(
            f"INSERT INTO {TERMS} (idx, expression, channel_id, upto, matched, floor, floor_id, "
            "refreshed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            # Two refreshes of one query racing on PostgreSQL (SQLite's write lock serialises
            # them): the second finds the first's row and leaves it, rather than failing.
            "ON CONFLICT (idx, expression, channel_id) DO NOTHING RETURNING id",
            [index, expression, scope(channel_id), upto, matched, floor, floor_id, _now()],
        )
        inserted = cursor.fetchone()
        if inserted is None:
            return
        query_id = inserted[0]
        if rows:
            cursor.executemany(
                f"INSERT INTO {ROWS} (query_id, message_id, score) VALUES (%s, %s, %s)",
                [(query_id, pk, score) for pk, score in rows],
            )
        cursor.execute(f"SELECT count(*) FROM {TERMS}")
        extra = cursor.fetchone()[0] - max_queries
        if extra > 0:
            oldest = f"SELECT id FROM {TERMS} ORDER BY refreshed_at, id LIMIT %s"
            cursor.execute(f"DELETE FROM {ROWS} WHERE query_id IN ({oldest})", [extra])
            cursor.execute(f"DELETE FROM {TERMS} WHERE id IN ({oldest})", [extra])


def _now():
    value = timezone.now()
    return connection.ops.adapt_datetimefield_value(value)


def forget_messages(cursor, ids: Sequence[int]) -> None:
    """Drop erased messages from every query's best rows (erasure's own step)."""
    if ids:
        marks = ", ".join(["%s"] * len(ids))
        cursor.execute(f"DELETE FROM {ROWS} WHERE message_id IN ({marks})", list(ids))


def clear(cursor) -> None:
    """Forget every query's best rows (a reindex changes what the indexes score)."""
    cursor.execute(f"DELETE FROM {ROWS}")
    cursor.execute(f"DELETE FROM {TERMS}")
