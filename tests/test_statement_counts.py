"""How many statements the hot read paths send, counted, never timed (issue 33 item 5): a
statement added to the live context or to a search's first lookup fails here, and so does one
whose count grows with the history the answer does not show."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from search.service import Filters, search
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Session
from sessions_app.selectors import live_context
from sessions_app.services.errors import NotFound
from sessions_app.services.sessions import get_session_for_channel
from tests.test_compression import turn

# The live context: its rows (one read of the live-rows index) and the memory blocks.
LIVE_CONTEXT_STATEMENTS = 2


def _session(turns: int, name: str):
    channel = create_channel(name)[0]
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(session, [m for n in range(turns) for m in turn(n)], run_hooks=False)
    session.refresh_from_db()
    return session


def _statements(fn) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        fn()
    return [q["sql"] for q in queries.captured_queries]


@pytest.mark.django_db
def test_the_live_context_is_two_statements_for_ten_rows_and_for_a_thousand():
    small, large = _session(3, "counts-small"), _session(250, "counts-large")
    assert large.live_messages > 900
    for session in (small, large):
        sent = _statements(lambda s=session: live_context(s))
        assert len(sent) == LIVE_CONTEXT_STATEMENTS, "\n".join(sent)


QUERIES = {
    "word": "item",
    "cjk": "缓存",
    "substring": "tem-1",
    "identifier": "run_shell",
}


WARM = {"word": "zebra", "cjk": "配置", "substring": "zzz-9", "identifier": "read_file"}


def _searchable(turns: int, name: str):
    session = _session(turns, name)
    services.append_messages(
        session, [{"role": "user", "content": "缓存配置 again"}], run_hooks=False
    )
    return session


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(QUERIES))
def test_a_first_lookup_sends_as_many_statements_whatever_the_history(kind, monkeypatch):
    """The full answer of a query never asked before (lookup, ranking, excerpts, windows of 2,
    the channel filter): the same statements for a session of 16 rows and one of 1,000."""
    from search.backends import postgres

    # PostgreSQL's trigram route walks the newest rows in steps, as many as the matches'
    # density asks for (its own tests): here its first step, the probe, holds either history.
    monkeypatch.setattr(postgres, "PROBE_ROWS", 2_000)
    counts = []
    for turns in (3, 250):
        session = _searchable(turns, f"first-{kind}-{turns}")
        filters = Filters(channel_id=session.channel_id)
        # What a process reads once, at its first lookup of a kind (PostgreSQL's case-folding
        # table for the substring route), is not this query's: read it with another query.
        search(WARM[kind], filters, limit=20, window=2)
        sent = _statements(lambda f=filters: search(QUERIES[kind], f, limit=20, window=2))
        counts.append(len(sent))
    assert counts[0] == counts[1], counts
    assert counts[0] == FIRST_LOOKUP_STATEMENTS[connection.vendor][kind], counts


# SQLite: the ranked-query cache looked up, the index matched (its "recent" table ranks), the
# hits read with their sessions, the windows in one statement; the substring route after the
# words route found nothing. PostgreSQL: the lookup, the match and page one's hits and windows
# in one round trip (search.rows.FirstPage) inside a savepoint (SAVEPOINT and RELEASE are
# statements too). On the substring route the words route's call finds nothing; then the trigram
# route's lookup, its bounds, its first step (search.pg_trigram) and the hits with the windows
# in one round trip (two until 2026-12-07: the lookup with its bounds, then the rest); each
# route in its savepoint.
FIRST_LOOKUP_STATEMENTS: dict[str, dict[str, int]] = {
    "sqlite": {"cjk": 5, "identifier": 5, "substring": 7, "word": 5},
    "postgresql": {"cjk": 3, "identifier": 3, "substring": 7, "word": 3},
}


@pytest.mark.django_db
def test_a_warmed_process_reads_nothing_once_per_process_on_its_first_substring_lookup():
    """gunicorn's post_worker_init runs search.warm: PostgreSQL's case-folding table (about
    40 ms) is read then, not by the first agent's question."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite's substring index folds case itself")
    from search import pg
    from search.warm import warm_up

    session = _searchable(3, "warm")
    pg._FOLDS.clear()
    warm_up(close=False)
    assert pg._FOLDS  # read
    sent = _statements(lambda: search("tem-1", Filters(channel_id=session.channel_id)))
    assert not any("generate_series" in sql or "server_encoding" in sql for sql in sent)
    assert len(sent) == FIRST_LOOKUP_STATEMENTS["postgresql"]["substring"]


@pytest.mark.django_db
def test_authenticating_a_request_is_one_statement_and_touching_the_key_one_more_a_minute():
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.keys import authenticate_key
    from sessions_app.models import ApiKey

    channel, issued = create_channel("counts-auth")
    key = issued.plaintext
    first = _statements(lambda: authenticate_key(key))
    assert len(first) == 2, "\n".join(first)  # the read, and last_used_at on its first use
    again = _statements(lambda: authenticate_key(key))
    assert len(again) == 1, "\n".join(again)
    found = authenticate_key(key)
    assert found is not None and found.channel.name == "counts-auth"
    assert found.channel == channel and found.channel.description == channel.description
    ApiKey.objects.filter(pk=found.pk).update(last_used_at=timezone.now() - timedelta(minutes=2))
    assert len(_statements(lambda: authenticate_key(key))) == 2


@pytest.mark.django_db
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: the key is read through a function"
)
def test_the_key_is_read_through_its_function_whose_columns_are_the_models_then_the_channels():
    """An API request's key is read through sessions_app.keys.LIVE_KEY, whose plan is kept for
    the connection; its columns are fixed in its migration and read by position as an ApiKey's:
    a column added to the model needs the function made again."""
    from sessions_app.keys import LIVE_KEY, authenticate_key
    from sessions_app.models import ApiKey

    channel, issued = create_channel("counts-key-function")
    authenticate_key(issued.plaintext)  # its first use of the minute: the touch comes after
    sent = _statements(lambda: authenticate_key(issued.plaintext))
    assert sent == [f"SELECT * FROM {LIVE_KEY}('{issued.api_key.prefix}')"], sent  # noqa: S608
    found = authenticate_key(issued.plaintext)
    assert found is not None and found.pk == issued.api_key.pk and found.channel == channel

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {LIVE_KEY}(%s) LIMIT 0", ["-"])  # noqa: S608 - our name
        names = [column.name for column in cursor.description]
        cursor.execute(
            "SELECT format_type(t.oid, NULL) FROM pg_proc p, unnest(p.proallargtypes) WITH "
            "ORDINALITY AS a(oid, n) JOIN pg_type t ON t.oid = a.oid WHERE p.proname = %s "
            "ORDER BY a.n OFFSET 1",  # the argument, then the columns
            [LIVE_KEY],
        )
        types = [row[0] for row in cursor.fetchall()]
    fields = list(ApiKey._meta.concrete_fields)
    assert names == [f"o_{f.column}" for f in fields] + ["o_channel_name", "o_channel_description"]
    declared = [f.db_type(connection).split("(")[0] for f in fields]
    declared = [{"varchar": "character varying"}.get(t, t) for t in declared]
    assert types == [*declared, "character varying", "text"]


@pytest.mark.django_db
def test_a_gateway_finds_its_session_in_one_statement_as_the_orm_reads_it():
    session = _session(3, "counts-session")
    channel = session.channel
    other = create_channel("counts-other")[0]

    sent = _statements(lambda: get_session_for_channel(channel, str(session.pk)))
    found = get_session_for_channel(channel, session.pk.hex.upper())

    assert len(sent) == 1, "\n".join(sent)
    orm = Session.objects.get(pk=session.pk)
    fields = [f.attname for f in Session._meta.concrete_fields]
    assert [getattr(found, f) for f in fields] == [getattr(orm, f) for f in fields]
    assert found.channel is channel
    assert get_session_for_channel(channel, session.pk).pk == session.pk  # a UUID, not text
    for who, asked in ((other, str(session.pk)), (channel, "not-a-uuid"), (channel, "0" * 32)):
        with pytest.raises(NotFound, match="No session"):
            get_session_for_channel(who, asked)
    assert get_session_for_channel(None, str(session.pk)).channel == channel  # an operator
