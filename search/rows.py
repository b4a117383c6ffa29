"""The rows of a page of hits, read in one statement and built without the ORM's per-row work.

A search answers in a few milliseconds; compiling a queryset with two joins and building a full
model instance per message, session and channel cost more than the rest of the answer (excerpts,
windows and bookmarks) together. Here one hand-written statement reads only the columns an
answer shows, the database's own converters turn them into what the ORM would have answered,
and instances are made the way Django unpickles them. A column not read here loads on first
access, as a deferred field does, so a caller that wants more still gets it right.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar, cast

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.base import ModelState

from core import plain
from search import pg
from search.ranked_schema import PAGE_SETTING
from search.results import Nearby, nearby_join
from sessions_app.models import Channel, Message, Session

MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "position",
    "role",
    "content",
    "tool_calls",
    "active",
    "compressed",
    "is_summary",
    "is_notice",
    "created_at",
    "continues_id",
    "summarized_by_id",  # an archived hit's summary, which the MCP search names
)
SESSION_COLUMNS = ("id", "title", "external_id", "total_messages", "channel_id")
CHANNEL_COLUMNS = ("id", "name")

_Converter = tuple[int, list[Callable[..., Any]], Any]


def _columns(model: type[Model], names: tuple[str, ...], alias: str) -> tuple[list[str], list]:
    fields = [cast(Field, model._meta.get_field(name)) for name in names]  # each a column
    return [f"{alias}.{f.column}" for f in fields], [f.get_col(alias) for f in fields]


def _hits_select() -> str:
    """The hits' statement, up to its condition on the ids."""
    columns, _ = _page_columns()
    return (
        f"SELECT {', '.join(columns)} "  # noqa: S608 - our names
        f"FROM {Message._meta.db_table} m "
        f"JOIN {Session._meta.db_table} s ON s.id = m.session_id "
        f"JOIN {Channel._meta.db_table} c ON c.id = s.channel_id "
        "WHERE m.id "
    )


@lru_cache(maxsize=16)  # one per database connection (a thread's); a few threads at most
def _reader(db: BaseDatabaseWrapper) -> tuple[str, list[_Converter]]:
    """The hits' statement (_hits_select) and, per column, the converters the ORM would apply
    to it (core.plain.converters): worked out once, not on every search."""
    _, fields = _page_columns()
    converters: list[_Converter] = []
    for pos, col in enumerate(fields):
        convs = plain.converters(col, db)
        if convs:
            converters.append((pos, convs, col))
    return _hits_select(), converters


def _page_columns() -> tuple[list[str], list]:
    message_cols, message_exprs = _columns(Message, MESSAGE_COLUMNS, "m")
    session_cols, session_exprs = _columns(Session, SESSION_COLUMNS, "s")
    channel_cols, channel_exprs = _columns(Channel, CHANNEL_COLUMNS, "c")
    return message_cols + session_cols + channel_cols, message_exprs + session_exprs + channel_exprs


def _nearby_statement(ids: str, slack: str) -> str:
    """The rows within ``slack`` positions of each message of ``ids`` (SQL for both)."""
    columns, join = nearby_join("h.session_id", f"h.position - {slack}", f"h.position + {slack}")
    return (
        f"WITH h AS (SELECT m.id, m.session_id, m.position FROM {Message._meta.db_table} m "  # noqa: S608
        f"WHERE m.id {ids}) SELECT h.id, {', '.join(columns)} FROM h {join}"
    )


# PostgreSQL: a page's two statements as functions, so each is planned once per connection, not
# on every search. Planned afresh, the hits' statement took 0.15-0.25 ms to plan for a 0.02 ms
# run, and for a page of 20 its planner, with the sessions table's statistics, chose a hash join
# over every session (0.45 ms at 2,000 sessions) where looking each hit's session up takes
# 0.02: at 1,000,000 messages a page of one hit read in 0.28 ms instead of 0.57, of 20 in 0.72
# instead of 1.45 (p50, through this module's cursor). The plan is fixed as the trigram route's
# are (search.pg.PLANNED): a generic one, of key and range seeks, whatever the statistics say or
# lack. A change to the columns read needs a migration that runs page_function_statements()
# again (reindex does too).
PAGE_HITS, PAGE_NEARBY = "hermes_page_hits", "hermes_page_nearby"
PAGE_PLAN = {
    "plan_cache_mode": "force_generic_plan",
    "enable_seqscan": "off",
    "enable_bitmapscan": "off",
    "enable_hashjoin": "off",
    "enable_mergejoin": "off",
    **pg.QUIET,
}


def page_statements() -> tuple[str, str]:
    """The statements PAGE_HITS and PAGE_NEARBY run, ``$1`` the ids (``bigint[]``) and ``$2``
    the slack (``integer``), as a function's body and PREPARE take them."""
    return f"{_hits_select()}= ANY($1)", _nearby_statement("= ANY($1)", "$2")


def page_function_statements(db: BaseDatabaseWrapper) -> list[str]:
    _, fields = _page_columns()
    hits_out = [f"o{i} {col.target.db_type(db)}" for i, col in enumerate(fields)]
    nearby_fields = [cast(Field, Message._meta.get_field(name)) for name in Nearby.COLUMNS[:-1]]
    nearby_out = ["o0 bigint"] + [f"o{i + 1} {f.db_type(db)}" for i, f in enumerate(nearby_fields)]
    nearby_out.append(f"o{len(nearby_out)} text")  # created_at, as text (nearby_join)
    settings = " ".join(f"SET {name} = {value}" for name, value in PAGE_PLAN.items())
    hits, nearby = page_statements()
    return [
        f"CREATE OR REPLACE FUNCTION {PAGE_HITS}(bigint[]) RETURNS TABLE ({', '.join(hits_out)}) "
        f"LANGUAGE plpgsql STABLE {settings} AS $f$ BEGIN RETURN QUERY {hits}; END $f$",
        f"CREATE OR REPLACE FUNCTION {PAGE_NEARBY}(bigint[], integer) "
        f"RETURNS TABLE ({', '.join(nearby_out)}) LANGUAGE plpgsql STABLE {settings} "
        f"AS $f$ BEGIN RETURN QUERY {nearby}; END $f$",
    ]


class FirstPage(NamedTuple):
    """The page a search will read if its first route's lookup answers with its window (page
    one, no rolled-back rows): how many of the window's rows are its hits (a row past them is
    the page's edge, read without a window) and its windows' slack (None: no windows)."""

    size: int
    slack: int | None


class _Kept(NamedTuple):
    pks: frozenset[int]
    around: frozenset[int]
    slack: int | None
    hits: list[tuple]
    nearby: list[tuple]


_first = threading.local()  # this thread's search: .expected (FirstPage), .kept (_Kept)
# The page's ids as a lookup's function kept them for the rest of the round trip ('' once a
# transaction has ended; nothing before it is first set).
_KEPT_IDS = f"coalesce(nullif(current_setting('{PAGE_SETTING}', true), ''), '{{}}')::bigint[]"


def expect_first_page(page: FirstPage | None) -> None:
    """Set (or, with None, clear) the page this thread's search reads if a lookup answers with
    its first rows, and forget any rows kept for an earlier one."""
    _first.expected, _first.kept = page, None


def first_page(limit: int, offset: int) -> FirstPage | None:
    """The page a lookup of ``limit`` rows from ``offset`` can read along: the expected one, if
    this lookup is for it (page one, its hits and the row past them)."""
    page = getattr(_first, "expected", None)
    return page if page is not None and not offset and limit == page.size + 1 else None


def call_with_first_page(
    cursor, call: str, params: list, page: FirstPage | None, then: tuple[str, list] | None = None
) -> list[tuple]:
    """Run a lookup's ``call`` and return its rows. With ``page``, the call is to a function that
    keeps the ids of the page it answers (search.ranked_schema.HEAD_OR_PAGE_FUNCTION,
    search.pg_trigram.FIRST_PAGE), and the page's hits and windows are read for them in the
    same round trip and kept for ``read_page``, which takes them only if they are the rows it
    would read itself (the same hits, windows around the same hits, the same slack: each row
    names its hit). ``then``: statements after those, in the same round trip; the cursor is
    left before their results (``cursor.nextset()`` reaches each)."""
    after, after_params = then or ("", [])
    if page is None:
        cursor.execute(call + (f"; {after}" if after else ""), [*params, *after_params])
        return cursor.fetchall()
    call += f"; SELECT * FROM {PAGE_HITS}({_KEPT_IDS})"  # noqa: S608 - our names
    if page.slack is not None:
        call += f"; SELECT * FROM {PAGE_NEARBY}(({_KEPT_IDS})[1:%s], %s)"  # noqa: S608
        params = [*params, page.size, page.slack]
    if after:
        call, params = f"{call}; {after}", [*params, *after_params]
    cursor.execute(call, params)
    found = cursor.fetchall()
    hits = cursor.fetchall() if cursor.nextset() else []
    nearby = cursor.fetchall() if page.slack is not None and cursor.nextset() else []
    if hits:  # none: an entry, walks to come, or nothing found
        pks, around = frozenset(row[0] for row in hits), frozenset(row[0] for row in nearby)
        _first.kept = _Kept(pks, around, page.slack, list(hits), list(nearby))
    return found


def _kept_page(
    pks: Collection[int], around: Collection[int], slack: int
) -> tuple[list[tuple], list[tuple]] | None:
    """The rows kept by the first lookup if they are these (then forgotten either way)."""
    kept, _first.kept = getattr(_first, "kept", None), None
    if kept is None or frozenset(pks) != kept.pks:
        return None
    if around:
        same = kept.slack == slack and frozenset(around) == kept.around
    else:
        same = kept.slack is None
    return (kept.hits, kept.nearby) if same else None


def drop_page_function_statements() -> list[str]:
    return [
        f"DROP FUNCTION IF EXISTS {PAGE_HITS}(bigint[])",
        f"DROP FUNCTION IF EXISTS {PAGE_NEARBY}(bigint[], integer)",
    ]


def _convert(row: list, converters: list[_Converter], db: BaseDatabaseWrapper) -> None:
    for pos, convs, col in converters:
        value = row[pos]
        for convert in convs:
            value = convert(value, col, db)
        row[pos] = value


_M = TypeVar("_M", bound=Model)


def instance(model: type[_M], values: dict[str, Any], db: str = DEFAULT_DB_ALIAS) -> _M:
    """A saved instance holding these attribute values, made as unpickling makes one (no
    ``__init__``: no signals, no defaults for the columns left out, which stay deferred)."""
    obj = model.__new__(model)
    state = ModelState()
    state.adding, state.db = False, db
    obj._state = state
    obj.__dict__.update(values)
    return obj


def read_hits(pks: Collection[int]) -> dict[int, Message]:
    """The messages with these ids, each with its session and the session's channel loaded
    (``message.session.channel`` costs no query), in one statement that seeks the primary keys."""
    return read_page(pks)[0]


def read_page(
    pks: Collection[int], around: Collection[int] = (), slack: int = 0
) -> tuple[dict[int, Message], dict[int, list[Nearby]]]:
    """``read_hits``, and the rows within ``slack`` positions of each message of ``around`` (a
    window's first read, search.results.windows: each hit's range an index seek), by hit id.
    On PostgreSQL both go in one round trip, each through its function (PAGE_HITS and
    PAGE_NEARBY, planned once per connection); one statement of both, tried first, took as
    long to plan (0.4-0.5 ms) as the two together."""
    if not pks:
        return {}, {}
    db = connections[DEFAULT_DB_ALIAS]
    sql, converters = _reader(db)
    nearby: dict[int, list[Nearby]] = {}
    kept = _kept_page(pks, around, slack)
    if kept is not None:  # read along with the lookup (FirstPage)
        fetched, rows = kept
    else:
        fetched, rows = _read_page(db, sql, pks, around, slack)
    for near in rows:
        nearby.setdefault(near[0], []).append(Nearby(near, 1))
    n_message, n_session = len(MESSAGE_COLUMNS), len(SESSION_COLUMNS)
    session_at = MESSAGE_COLUMNS.index("session_id")
    # The session's columns are converted once per session (a page's hits share a channel and
    # often sessions), and the message's session_id is that session's converted id.
    of_message = [c for c in converters if c[0] < n_message and c[0] != session_at]
    of_session = [c for c in converters if c[0] >= n_message]
    sessions: dict[Any, Session] = {}
    out: dict[int, Message] = {}
    for raw in fetched:
        row = list(raw)
        session = sessions.get(row[n_message])
        if session is None:
            key = row[n_message]
            _convert(row, of_session, db)
            channel = instance(
                Channel,
                dict(zip(CHANNEL_COLUMNS, row[n_message + n_session :], strict=True)),
                db.alias,
            )
            session = instance(
                Session,
                dict(zip(SESSION_COLUMNS, row[n_message : n_message + n_session], strict=True)),
                db.alias,
            )
            session._state.fields_cache["channel"] = channel
            sessions[key] = session
        _convert(row, of_message, db)
        row[session_at] = session.pk
        message = instance(
            Message, dict(zip(MESSAGE_COLUMNS, row[:n_message], strict=True)), db.alias
        )
        message._state.fields_cache["session"] = session
        out[message.pk] = message
    return out, nearby


def _read_page(
    db: BaseDatabaseWrapper, sql: str, pks: Collection[int], around: Collection[int], slack: int
) -> tuple[list[tuple], list[tuple]]:
    with db.cursor() as cursor:
        if db.vendor == "postgresql":  # one round trip, two results
            statement = f"SELECT * FROM {PAGE_HITS}(%s::bigint[])"  # noqa: S608 - our names
            params: list = [list(pks)]
            if around:
                statement += f"; SELECT * FROM {PAGE_NEARBY}(%s::bigint[], %s)"  # noqa: S608
                params += [list(around), slack]
            cursor.execute(statement, params)
            fetched = cursor.fetchall()
            rows = cursor.fetchall() if around and cursor.nextset() else []
        else:
            cursor.execute(f"{sql}IN ({', '.join(['%s'] * len(pks))})", list(pks))
            fetched = cursor.fetchall()
            rows = []
            if around:
                ids = f"IN ({', '.join(['%s'] * len(around))})"
                cursor.execute(_nearby_statement(ids, "%s"), [*around, slack, slack])
                rows = cursor.fetchall()
    return fetched, rows
