"""The rows of a page of hits, read in one statement and built without the ORM's per-row work.

A search answers in a few milliseconds; compiling a queryset with two joins and building a full
model instance per message, session and channel cost more than the rest of the answer (excerpts,
windows and bookmarks) together. Here one hand-written statement reads only the columns an
answer shows, the database's own converters turn them into what the ORM would have answered,
and instances are made the way Django unpickles them. A column not read here loads on first
access, as a deferred field does, so a caller that wants more still gets it right.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import lru_cache
from typing import Any, TypeVar, cast

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.base import ModelState

from core import plain
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


@lru_cache(maxsize=16)  # one per database connection (a thread's); a few threads at most
def _reader(db: BaseDatabaseWrapper) -> tuple[str, list[_Converter]]:
    """The statement (up to its list of ids) and, per column, the converters the ORM would
    apply to it (core.plain.converters): worked out once, not on every search."""
    message_cols, message_exprs = _columns(Message, MESSAGE_COLUMNS, "m")
    session_cols, session_exprs = _columns(Session, SESSION_COLUMNS, "s")
    channel_cols, channel_exprs = _columns(Channel, CHANNEL_COLUMNS, "c")
    sql = (
        f"SELECT {', '.join(message_cols + session_cols + channel_cols)} "  # noqa: S608 - our names
        f"FROM {Message._meta.db_table} m "
        f"JOIN {Session._meta.db_table} s ON s.id = m.session_id "
        f"JOIN {Channel._meta.db_table} c ON c.id = s.channel_id "
        "WHERE m.id IN "
    )
    converters: list[_Converter] = []
    for pos, col in enumerate(message_exprs + session_exprs + channel_exprs):
        convs = plain.converters(col, db)
        if convs:
            converters.append((pos, convs, col))
    return sql, converters


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
    On PostgreSQL both statements go in one round trip, each planned on its own: a statement
    of both, tried first, took as long to plan (0.4-0.5 ms) as the two together."""
    if not pks:
        return {}, {}
    db = connections[DEFAULT_DB_ALIAS]
    sql, converters = _reader(db)
    hits = f"{sql}({', '.join(['%s'] * len(pks))})"
    params = list(pks)
    nearby: dict[int, list[Nearby]] = {}
    with db.cursor() as cursor:
        if not around:
            cursor.execute(hits, params)
            fetched = cursor.fetchall()
        else:
            columns, join = nearby_join("h.session_id", "h.position - %s", "h.position + %s")
            table = Message._meta.db_table
            rows = (
                f"WITH h AS (SELECT m.id, m.session_id, m.position FROM {table} m "  # noqa: S608
                f"WHERE m.id IN ({', '.join(['%s'] * len(around))})) "
                f"SELECT h.id, {', '.join(columns)} FROM h {join}"
            )
            rows_params = [*around, slack, slack]
            if db.vendor == "postgresql":  # one round trip, two results
                cursor.execute(f"{hits}; {rows}", [*params, *rows_params])
                fetched = cursor.fetchall()
                cursor.nextset()
            else:
                cursor.execute(hits, params)
                fetched = cursor.fetchall()
                cursor.execute(rows, rows_params)
            for row in cursor.fetchall():
                nearby.setdefault(row[0], []).append(Nearby(row, 1))
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
