"""Recall: parse, route, fall back, assemble three-layer hits. No LLM anywhere (SPEC R5)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Annotated

from django.db import DatabaseError, connection, transaction
from pydantic import Field

from core.instruments import SEARCH_SECONDS
from search import ranked, results, rows
from search.backends import choice
from search.filters import Filters
from search.query import InvalidQuery, ParsedQuery, Route, parse
from search.text import search_text
from sessions_app.models import Message, Session

logger = logging.getLogger(__name__)

__all__ = ["Filters", "Hit", "InvalidQuery", "SearchResult", "search", "warm_routes"]


# The API's answer is made from these two (search.api): a field's type and description here are
# the answer's, but for the fields it shows in another form (a message, a session, the query).


@dataclass  # not frozen: a frozen dataclass is 4-5 times slower to build (one per hit)
class Hit:
    message: Message
    session: Session
    score: Annotated[float | None, Field(description="BM25 (lower is better); null for scan hits.")]
    excerpt_html: Annotated[str, Field(description="Escaped text; matches wrapped in <mark>.")]
    window: list[results.WindowRow]
    bookmarks: results.Bookmarks
    rolled_back: bool = False


@dataclass
class SearchResult:
    query: ParsedQuery
    index: Annotated[
        str | None, Field(description="words, bigram, trigram or scan; null if none matched.")
    ]
    tried: list[str] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    has_more: bool = False
    total: Annotated[
        int,
        Field(
            description="Messages that matched: exact when total_exact, else at least this many "
            "(the indexes count up to their rank window; the scan to one past this page). A "
            "carried copy and the row it repeats count as two and show as one."
        ),
    ] = 0
    total_exact: bool = True
    # The scan's time box ran out: continue with before=next_before to read older messages.
    scan_reached: Annotated[
        int | None,
        Field(
            description="Set when the scan (the answer of last resort) stopped before reading "
            "every message: the oldest message id it read. Older messages were not searched."
        ),
    ] = None
    next_before: Annotated[
        int | None,
        Field(
            description="Pass as `before` to go on searching older messages; null when nothing "
            "is left unread."
        ),
    ] = None
    ranked_within: Annotated[
        int | None,
        Field(
            description="Set when this page was ranked within the newest this-many matches "
            "only: the query matched more, and the best rows the worker keeps for ranking it "
            "over every match are not ready yet (asked for; try again shortly) or this page lies "
            "past them. Null: ranked over every match."
        ),
    ] = None
    lookup_seconds: float = 0.0  # routing, matching and ranking (what an unindexed scan does)
    total_seconds: float = 0.0  # including excerpts, windows and bookmarks


_backend = choice.current


@dataclass
class _Answer:
    found: list[tuple[int, float | None]]
    capped: bool = False  # ranking covered only the rank window
    matched: int | None = None  # how many matched (None: the scan, which cannot count, or an
    # index that failed)
    count_exact: bool | None = None  # None: exact unless capped
    reached: int | None = None  # the scan stopped here (the oldest id it read)


def _run(route: Route, filters: Filters, limit: int, offset: int) -> _Answer:
    backend = _backend()
    if route.index == "scan":
        scan = backend.run_scan(route.like, filters, limit, offset)
        return _Answer(scan.hits, reached=scan.reached)
    # On PostgreSQL a failed statement aborts the whole transaction unless it ran in a savepoint
    # (outside one, as a request runs, there is nothing to abort, and a transaction of its own
    # would cost two round trips); on SQLite an atomic block would BEGIN IMMEDIATE, taking the
    # write lock for a read.
    nested = connection.vendor == "postgresql" and connection.in_atomic_block
    guard = transaction.atomic() if nested else nullcontext()
    try:
        with guard:
            return _Answer(*backend.run_fts(route, filters, limit, offset))
    except DatabaseError:
        # Quoting makes this unreachable for user text; if the index still objects, fall back
        # rather than fail the request.
        logger.exception("the %s index rejected %r; falling back", route.index, route.expression)
        return _Answer([])


def search(
    text: str,
    filters: Filters | None = None,
    *,
    limit: int = 20,
    offset: int = 0,
    window: int = 2,
) -> SearchResult:
    """Raises InvalidQuery for an empty or oversized query; otherwise always answers."""
    started = time.perf_counter()
    filters = (filters or Filters()).resolved()
    parsed = parse(text)
    result = SearchResult(query=parsed, index=None)
    # One row either side of the page comes along (the one before it and the one after),
    # only to tell whether a row's carried copy sits just across the page's edge.
    start = max(0, offset - 1)
    before = offset - start
    answer = _Answer([])
    substrings_searched = False
    # Page one's hits and windows can come with the first route's lookup (search.rows.FirstPage).
    first_page = None
    if offset == 0 and not filters.include_rolled_back:
        first_page = rows.FirstPage(limit, results.window_slack(window) if window else None)
    rows.expect_first_page(first_page)
    try:
        for route in parsed.routes:
            if route.index == "scan" and substrings_searched:
                # The trigram route matched every term as a substring, case-blind, in the same rows
                # and text the scan reads: what it did not find, the scan cannot. (Without this, a
                # word found only in other channels' messages was looked for row by row.)
                break
            result.tried.append(route.index)
            answer = _run(route, filters, limit + 1 + before, start)
            last = route.index == "scan"
            if answer.found or answer.matched or (last and answer.reached is not None):
                result.index = route.index
                result.ranked_within = filters.rank_window if answer.capped else None
                if answer.matched is not None:
                    exact = answer.count_exact
                    result.total = answer.matched
                    result.total_exact = not answer.capped if exact is None else exact
                break
            substrings_searched = substrings_searched or (
                route.index == "trigram" and answer.matched == 0
            )
        found = answer.found
        page = found[before : before + limit]
        edges = [pk for pk, _ in found[:before] + found[before + limit :]]
        rolled: list[tuple[int, float | None]] = []
        if filters.include_rolled_back and parsed.terms:
            rolled = (
                _backend()
                .run_scan(
                    tuple(t.text for t in parsed.terms),
                    filters,
                    limit + 1,
                    offset,
                    rolled_back=True,
                )
                .hits
            )
        result.has_more = len(found) > before + limit or len(rolled) > limit
        if result.index == "scan":
            more = len(found) > before + limit
            result.total, result.total_exact = (
                offset + len(page) + more,
                not more and (answer.reached is None),
            )
            if answer.reached is not None and not more:
                # Cut short by its time box: older rows were not read. Continue below.
                result.scan_reached = answer.reached
                result.next_before = answer.reached
                result.has_more = True
        if rolled:
            # Rolled-back rows (operators only) are found by a scan, and count among the matches.
            result.index = result.index or "scan"
            more = len(rolled) > limit
            result.total += offset + min(len(rolled), limit) + more  # as the scan counts
            result.total_exact = result.total_exact and not more
        result.lookup_seconds = time.perf_counter() - started
        ordered = [(pk, score, False) for pk, score in page]
        ordered += [(pk, None, True) for pk, _ in rolled[:limit]]
        result.hits = _hits(ordered, parsed, window, filters.include_rolled_back, edges)
    finally:  # rows read along and not taken, or an expectation left by an error
        rows.expect_first_page(None)
    result.total_seconds = time.perf_counter() - started
    ranked.flush()  # the refreshes asked for go to the enqueuer thread (search.ranked)
    SEARCH_SECONDS.labels(result.index or "none").observe(result.total_seconds)
    return result


# What warm_routes runs: a word, a CJK pair, a CJK character and a fragment, each unlikely to
# match anything, so that each index route's statements run and read next to nothing. (A query
# no index route answers would go on to the bounded scan, which warm_routes leaves out.)
WARM_QUERIES = ("zqxjwarm", "齾齽", "齾", "zq_wr")


def warm_routes(limit: int = 20, window: int = 2) -> None:
    """Run the index routes of WARM_QUERIES once each, within a channel and without one (a
    gateway's search and an operator's), on this thread's connection: the statements a search
    runs there first. A new connection pays for them once: on PostgreSQL its server process
    compiles the search functions and loads the catalog and the unaccent rules; SQLite's page
    cache starts empty (search.warm.warm_connection). Nothing is recorded: no metric, no refresh
    asked. Raises DatabaseError where the database does not answer."""
    started = time.perf_counter()
    backend = _backend()
    try:
        for channel_id in (0, None):  # no channel has id 0: the channel's statements, no rows
            filters = Filters(channel_id=channel_id).resolved()
            for text in WARM_QUERIES:
                for route in parse(text).routes:
                    if route.index == "scan":
                        continue
                    rows.expect_first_page(rows.FirstPage(limit, results.window_slack(window)))
                    # Not through _run, whose fallback would log a database away as a failure.
                    backend.run_fts(route, filters, limit + 1, 0)
    finally:
        rows.expect_first_page(None)
        ranked.forget_asks()
    logger.debug("search routes warmed in %.1f ms", (time.perf_counter() - started) * 1000)


def _hits(
    ordered: list[tuple[int, float | None, bool]],
    parsed: ParsedQuery,
    window: int,
    include_rolled_back: bool,
    edges: Sequence[int] = (),
) -> list[Hit]:
    if not ordered:
        return []
    page = [pk for pk, _, _ in ordered]
    # The page and the rows just across its edges, with sessions and channels, and the rows
    # around the page's hits (their windows' first read), in one statement.
    slack = results.window_slack(window)
    read, nearby = rows.read_page([*page, *edges], page if window else (), slack)
    # A row carried into a continuation session (in_place: false) and the row it continues say
    # the same thing and rank the same, side by side: the continuation's copy is shown, once --
    # on this page, or on the next one when it is the row just past the page's edge.
    carried_on = {m.continues_id for m in read.values() if m.continues_id is not None}
    by_id = {pk: read[pk] for pk in dict.fromkeys(page) if pk in read}
    around = results.windows(list(by_id.values()), window, include_rolled_back, nearby)
    needles = parsed.needles
    hits = []
    for pk, score, rolled_back in ordered:
        message = by_id.get(pk)
        if message is None or pk in carried_on:
            continue
        shown = results.window_rows(around[pk], message)
        hits.append(
            Hit(
                message=message,
                session=message.session,
                score=score,
                excerpt_html=results.excerpt_html(
                    search_text(message.content, message.tool_calls), needles
                ),
                window=shown,
                bookmarks=results.bookmarks(shown, message.session.total_messages),
                rolled_back=rolled_back,
            )
        )
    return hits
