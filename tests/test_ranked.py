"""Ranking over every match of a common query (search.ranked): the worker keeps a query's best
rows, and a lookup that fills its rank window merges them with its newer matches."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import DataError, connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st

from core import later
from search import pg, ranked
from search.service import Filters, search
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message
from tests.test_query_plans import _explain

FILLER = [f"filler{n}" for n in range(40)]
WINDOW = Filters(rank_window=100)


@pytest.fixture(autouse=True)
def _fresh_asks():
    ranked._asked.clear()
    yield
    ranked._asked.clear()


def _said(times: int, filler: list[str] = (), role: str = "user") -> dict:
    return {"role": role, "content": " ".join(["alpha"] * times + list(filler))}


def _conversation(name: str, newer: int = 150):
    """One strong, old match of ``alpha`` followed by ``newer`` weaker ones, each saying it
    fewer times (both BM25 and ``ts_rank`` rank by that), at many lengths."""
    channel = create_channel(name)[0]
    session = services.open_session(channel, model="gpt-4o").session
    old = services.append_messages(session, [_said(40)], run_hooks=False).messages[0]
    services.append_messages(
        session, [_said(1 + n % 30, FILLER[: 3 + n % 37]) for n in range(newer)], run_hooks=False
    )
    return channel, session, old


def test_an_older_better_match_of_a_common_word_comes_first_once_its_best_rows_are_kept(db):
    channel, _, old = _conversation("ranked-old")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    first = search("alpha", filters, limit=5)
    # Asked for the refresh (run at once by the test's synchronous queue); this answer is
    # still the newest window's.
    assert first.ranked_within == 100
    assert old.pk not in [h.message.pk for h in first.hits]
    again = search("alpha", filters, limit=5)
    assert again.hits[0].message.pk == old.pk
    assert again.ranked_within is None
    assert (again.total, again.total_exact) == (151, True)


def test_a_match_newer_than_the_kept_rows_is_scored_beside_them(db):
    channel, session, old = _conversation("ranked-newer")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)  # the refresh
    newest = services.append_messages(session, [_said(50)], run_hooks=False).messages[0]
    answer = search("alpha", filters, limit=5)
    assert [h.message.pk for h in answer.hits[:2]] == [newest.pk, old.pk]
    assert answer.ranked_within is None
    assert (answer.total, answer.total_exact) == (152, True)


def test_with_nothing_newer_than_the_kept_rows_a_lookup_walks_no_matches(db):
    channel, _, old = _conversation("ranked-settled")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)  # the refresh
    with CaptureQueriesContext(connection) as queries:
        answer = search("alpha", filters, limit=5)
    assert answer.hits[0].message.pk == old.pk and answer.total_exact
    assert not _walks(queries)
    # Another session's message, in another channel, is newer than the refresh: now there is.
    services.append_messages(_conversation("ranked-elsewhere", newer=1)[1], [_said(2)])
    with CaptureQueriesContext(connection) as queries:
        assert search("alpha", filters, limit=5).total == 151
    assert _walks(queries)


def _walks(queries) -> list[str]:
    """The statements that read matches newest first. On PostgreSQL a first lookup's call
    carries the window's first page, which the function runs only for a query without an entry
    (search.ranked.HEAD_OR_FUNCTION, tested below): not a walk of a kept query."""
    return [
        q["sql"]
        for q in queries
        if "DESC LIMIT" in q["sql"] and ranked.HEAD_OR_FUNCTION not in q["sql"]
    ]


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite's lookup is in process"
)
def test_on_postgresql_a_first_lookup_matches_in_the_call_that_finds_no_entry(db):
    channel, session, _ = _conversation("ranked-beside", newer=5)
    with CaptureQueriesContext(connection) as queries:
        first = search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    assert first.total == 6 and first.index == "words"
    (call,) = [q["sql"] for q in queries if ranked.HEAD_OR_FUNCTION in q["sql"]]
    assert "ts_rank" in call
    assert not _walks(queries)  # nothing read the window again
    # The same page, in the same order, as the window read by itself (a session filter).
    alone = search("alpha", Filters(rank_window=100, session_id=session.pk), limit=5)
    assert [(h.message.pk, h.score) for h in first.hits] == [
        (h.message.pk, h.score) for h in alone.hits
    ]


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite's lookup is in process"
)
def test_on_postgresql_the_lookup_runs_the_routes_statement_only_for_a_query_without_an_entry(
    db,
):
    channel = create_channel("ranked-or")[0]
    failing = "SELECT 1 / 0, 0.5::real, 1::bigint"  # division by zero if it runs
    with connection.cursor() as cursor:  # neither rare: the statement is the way
        pg.count_as_common(cursor, "kept other")
    kept = ranked.Window((("kept", False),), 100, 5, 0)
    with connection.cursor() as cursor:
        with pytest.raises(DataError), transaction.atomic():
            ranked.lookup_or(cursor, "words", '"kept"', channel.pk, 5, failing, kept)
        ranked.store("words", '"kept"', channel.pk, 10, 1, [(1, -1.0)], 5, 2)
        best, rows = ranked.lookup_or(cursor, "words", '"kept"', channel.pk, 5, failing, kept)
        assert best is not None and best.upto == 10 and rows is None
        answer = "SELECT 7::bigint, -0.25::real, 3::bigint"
        other = ranked.Window((("other", False),), 100, 5, 0)
        best, rows = ranked.lookup_or(cursor, "words", '"other"', channel.pk, 5, answer, other)
        assert best is None and rows == [(7, -0.25, 3)]


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite plans in process"
)
def test_on_postgresql_a_rare_query_is_read_through_the_kept_plan_and_not_the_statement(db):
    """A word the statistics do not count common makes the query rare: its window is read by
    search.pg.RARE_WINDOW, and the route's statement (which would fail here) never runs. A
    prefix is rare when no common word starts with it (the planner's own estimate), and not
    when one does: then its statement runs."""
    channel = create_channel("ranked-rare")[0]
    failing = "SELECT 1 / 0, 0.5::real, 1::bigint"
    with connection.cursor() as cursor:
        pg.count_as_common(cursor, "common")
    with connection.cursor() as cursor:
        for phrases in (
            (("common", False), ("rarest", False)),
            (("common rarest", False),),
            (("rarest", True),),
            (("rarest comm", True),),
            (("common", False), ("comm", True), ("rarest", True)),
        ):
            window = ranked.Window(phrases, 100, 5, 0)
            best, rows = ranked.lookup_or(cursor, "words", "x", channel.pk, 5, failing, window)
            assert (best, rows) == (None, []), phrases  # nothing matched, and nothing failed
        for phrases in (
            (("common", False),),
            (("comm", True),),  # "common" starts with it
            (("common comm", True),),
            (("common", False), ("", False)),
        ):
            window = ranked.Window(phrases, 100, 5, 0)
            with pytest.raises(DataError), transaction.atomic():
                ranked.lookup_or(cursor, "words", "x", channel.pk, 5, failing, window)


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite plans in process"
)
@pytest.mark.parametrize("analyzed", [False, True])
@pytest.mark.parametrize("index", ["words", "bigram"])
def test_on_postgresql_the_kept_plan_of_a_rare_window_reads_the_gin_index(db, index, analyzed):
    """search.pg.RARE_WINDOW's statement, planned as PL/pgSQL plans it (its variables parameters,
    one generic plan kept for the connection, under its SET clauses), reads the vector column's
    GIN index: the plan is fixed, so it cannot become a walk of every row with statistics or
    without them."""
    import re

    _conversation("ranked-plan", newer=30)
    names = ["p_query", "p_channel", "p_window", "p_n", "p_skip"]
    sql = pg._rare_window_query(index)
    for n, name in enumerate(names, 1):
        sql = re.sub(rf"\b{name}\b", f"${n}", sql)
    with transaction.atomic(), connection.cursor() as cursor:
        if analyzed:
            cursor.execute(f"ANALYZE {Message._meta.db_table}")
        else:  # as after a restore
            cursor.execute(
                "DELETE FROM pg_statistic WHERE starelid = %s::regclass",
                [Message._meta.db_table],
            )
        for setting, value in pg.RARE_WINDOW_SETTINGS.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [setting, value])
        cursor.execute(
            f"PREPARE hermes_rare_plan (tsquery, bigint, integer, integer, integer) AS {sql}"
        )
        try:
            cursor.execute(
                "EXPLAIN EXECUTE hermes_rare_plan(to_tsquery('simple', 'alpha'), NULL, 100, 5, 0)"
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE hermes_rare_plan")
        transaction.set_rollback(True)
    assert f"Bitmap Index Scan on search_pg_{index}" in plan, plan
    assert "$1" in plan, plan  # the generic plan, as the function keeps it
    assert "Seq Scan" not in plan, plan


def _first_pages(query: str, filters: Filters) -> tuple[list, int]:
    """Pages 1 and 2 of ``query``'s first lookup, as ((id, score)..., total, index), and how many
    of them search.pg.RARE_WINDOW read (PostgreSQL counts a function's calls in a transaction
    when asked to)."""
    from search import pg

    pages = []
    calls = (
        "SELECT coalesce(sum(calls), 0)::integer FROM pg_stat_xact_user_functions "
        "WHERE funcname = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL track_functions = 'pl'")
        cursor.execute(calls, [pg.RARE_WINDOW])
        before = cursor.fetchone()[0]
        for offset in (0, 3):
            ranked.clear(cursor)
            ranked._asked.clear()
            answer = search(query, filters, limit=3, offset=offset)
            hits = [(h.message.pk, h.score) for h in answer.hits]
            pages.append((hits, answer.total, answer.index))
        cursor.execute(calls, [pg.RARE_WINDOW])
        return pages, cursor.fetchone()[0] - before


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite plans in process"
)
@pytest.mark.parametrize(
    "query",
    ["alpha", "filler3 alpha", '"alpha filler0 filler1"', "数据库 集群", "alph*", "filler3 alph*"],
)
@pytest.mark.parametrize("scoped", [True, False])
def test_on_postgresql_the_kept_plan_gives_the_page_the_planned_statement_gives(db, query, scoped):
    """The same hits, in the same order, with the same scores and count, whichever way the first
    lookup reads its window: every word counted common (the statement, planned) or none."""
    from search import pg

    channel, session, _ = _conversation(f"ranked-same-{scoped}", newer=60)
    services.append_messages(
        session,
        [{"role": "user", "content": f"数据库 集群 alpha {n}"} for n in range(8)],
        run_hooks=False,
    )
    filters = Filters(rank_window=20, channel_id=channel.pk if scoped else None)
    rare, read = _first_pages(query, filters)
    assert read == 2
    with connection.cursor() as cursor:
        pg.count_as_common(cursor, query)
    planned, read_again = _first_pages(query, filters)
    assert read_again == 0  # each page's statement was planned
    assert rare == planned
    (hits, total, index) = rare[0]
    assert hits and total > 3 and index in ("words", "bigram")


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: FTS5 answers 'none' at once"
)
def test_on_postgresql_a_slow_query_that_matches_nothing_is_kept_and_then_reads_nothing(
    db, monkeypatch
):
    # Every lookup that found nothing counts as slow (a real one: over 0.5 ms).
    monkeypatch.setattr(ranked, "EMPTY_SLOW_SECONDS", 0.0)
    channel, _, _ = _conversation("ranked-nothing", newer=5)
    filters = Filters(rank_window=100, channel_id=channel.pk)
    assert search('"alpha omega"', filters).total == 0
    with CaptureQueriesContext(connection) as queries:
        again = search('"alpha omega"', filters)
    assert (again.total, again.hits, again.index) == (0, [], None)
    assert not _walks(queries)


def test_the_lower_bar_for_an_empty_answer_does_not_keep_a_query_that_found_something(
    db, monkeypatch
):
    monkeypatch.setattr(ranked, "EMPTY_SLOW_SECONDS", 0.0)  # SLOW_SECONDS stays unreachable
    channel, _, _ = _conversation("ranked-found", newer=5)
    assert search("alpha", Filters(rank_window=100, channel_id=channel.pk)).total == 6
    assert _kept_queries() == 0


@pytest.mark.parametrize("bar_reached", [True, False])
def test_a_lookup_that_fills_no_window_is_kept_only_once_it_takes_longer_than_the_bar(
    db, monkeypatch, bar_reached
):
    """One bar on both backends: a refresh runs beside the requests after it, so a lookup must
    cost more than a repeat would save."""
    monkeypatch.setattr(ranked, "SLOW_SECONDS", 0.0 if bar_reached else float("inf"))
    channel, _, _ = _conversation(f"ranked-bar-{bar_reached}", newer=5)
    assert search("alpha", Filters(rank_window=100, channel_id=channel.pk)).total == 6
    assert _kept_queries() == (1 if bar_reached else 0)


def _kept_queries() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {ranked.TERMS}")  # noqa: S608 - our table
        return cursor.fetchone()[0]


def test_the_kept_rows_of_one_channel_are_never_another_channel_s(db):
    mine, _, old = _conversation("ranked-mine")
    theirs, _, their_old = _conversation("ranked-theirs")
    for channel, own, other in ((mine, old, their_old), (theirs, their_old, old)):
        filters = Filters(rank_window=100, channel_id=channel.pk)
        search("alpha", filters, limit=5)
        answer = search("alpha", filters, limit=200)
        ids = {h.message.pk for h in answer.hits}
        assert answer.hits[0].message.pk == own.pk and other.pk not in ids
        assert set(Message.objects.filter(pk__in=ids).values_list("channel_id", flat=True)) == {
            channel.pk
        }


def test_a_kept_row_that_left_the_index_is_not_returned(db):
    channel, _, old = _conversation("ranked-gone")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)
    Message.objects.filter(pk=old.pk).update(active=False)  # rolled back
    answer = search("alpha", filters, limit=5)
    assert old.pk not in [h.message.pk for h in answer.hits]


def test_pages_past_the_kept_head_say_they_are_ranked_within_the_window_and_never_repeat(
    db, hermes_config
):
    hermes_config(search={"rank_keep": 20})
    channel, _, old = _conversation("ranked-deep")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=10)
    pages = [search("alpha", filters, limit=10, offset=n * 10) for n in range(16)]
    assert pages[0].hits[0].message.pk == old.pk and pages[0].ranked_within is None
    assert pages[-1].ranked_within == 100
    ids = [h.message.pk for page in pages for h in page.hits]
    assert len(ids) == len(set(ids))


def test_other_filters_narrow_the_kept_rows_and_the_count_says_at_least(db):
    channel, session, old = _conversation("ranked-role")
    services.append_messages(session, [_said(60, role="assistant")], run_hooks=False)
    scope = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", scope, limit=5)
    users = search("alpha", Filters(rank_window=100, channel_id=channel.pk, role="user"), limit=5)
    assert users.hits[0].message.pk == old.pk
    assert users.total_exact is False


def _kept() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {ranked.ROWS}")  # noqa: S608 - a constant
        return cursor.fetchone()[0]


def test_an_erasure_forgets_every_kept_row(db):
    channel, session, _ = _conversation("ranked-erase")
    search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    assert _kept() > 0
    from sessions_app.services import erase

    erase.erase(erase.plan_sessions([session.pk]), actor="test")
    assert _kept() == 0


def test_a_reindex_forgets_every_kept_row(transactional_db):
    # transactional: PostgreSQL's reindex alters the table, refused inside a test transaction
    channel, _, _ = _conversation("ranked-reindex")
    search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    assert _kept() > 0
    call_command("reindex", verbosity=0)
    assert _kept() == 0


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite has no such functions"
)
def test_on_postgresql_a_reindex_makes_the_kept_queries_functions_again(transactional_db):
    """An operator's way back from a restore that lost them (a schema-only dump of tables)."""
    channel, _, _ = _conversation("ranked-reindex-functions")
    names = [ranked.HEAD_FUNCTION, ranked.HEAD_OR_FUNCTION, ranked.HEAD_OR_PAGE_FUNCTION]
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(f"DROP FUNCTION {name}")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    assert search("alpha", filters, limit=5).index != "words"  # the indexes failed: a scan
    call_command("reindex", verbosity=0, stdout=io.StringIO(), stderr=io.StringIO())
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE proname = ANY(%s)", [names])
        assert sorted(row[0] for row in cursor.fetchall()) == sorted(names)
    again = search("alpha", filters, limit=5)
    assert again.index == "words" and len(again.hits) == 5


def test_the_least_recently_refreshed_queries_go_beyond_the_cap(db, hermes_config):
    hermes_config(search={"rank_queries": 2})
    for n in range(3):
        ranked.store("words", f'"q{n}"', None, 10, 1, [(1, -1.0)], 5, 2)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT expression FROM {ranked.TERMS} ORDER BY id")  # noqa: S608
        assert [row[0] for row in cursor.fetchall()] == ['"q1"', '"q2"']


def test_a_slow_query_that_fills_no_window_is_kept_too_and_then_reads_only_newer_matches(
    db, monkeypatch
):
    monkeypatch.setattr(ranked, "SLOW_SECONDS", 0.0)  # every lookup counts as slow
    channel, session, old = _conversation("ranked-slow", newer=30)
    filters = Filters(rank_window=100, channel_id=channel.pk)
    first = search("alpha", filters, limit=5)
    assert first.ranked_within is None and first.hits[0].message.pk == old.pk
    newest = services.append_messages(session, [_said(50)], run_hooks=False).messages[0]
    read: list[tuple[str, list]] = []

    def record(execute, sql, params, many, context):
        read.append((sql, list(params or [])))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        again = search("alpha", filters, limit=5)
    assert [h.message.pk for h in again.hits[:2]] == [newest.pk, old.pk]
    assert (again.total, again.total_exact, again.ranked_within) == (32, True, None)
    # The matches are walked newest first only down to the refresh, never the whole window
    # (on PostgreSQL the walk is the statement its planned function runs: search.pg.PLANNED).
    read = [
        (params[0], []) if sql.startswith(_PLANNED_CALL) else (sql, params) for sql, params in read
    ]
    walks = [
        (sql, params)
        for sql, params in read
        if "DESC LIMIT" in sql and ranked.HEAD_OR_FUNCTION not in sql
    ]
    assert walks, read
    for sql, params in walks:
        if connection.vendor == "sqlite":
            assert params[-2] >= old.pk + 30, (sql, params)  # rowid > upto
        else:
            assert f"m.id > {old.pk + 30}" in sql, sql


_PLANNED_CALL = "SELECT * FROM hermes_walk_plan("


def test_a_page_past_the_kept_head_of_a_query_that_fills_no_window_is_still_exact(
    db, hermes_config, monkeypatch
):
    hermes_config(search={"rank_keep": 20})
    monkeypatch.setattr(ranked, "SLOW_SECONDS", 0.0)
    channel, _, _ = _conversation("ranked-slow-deep", newer=60)
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=10)
    whole = [
        h.message.pk
        for h in search(
            "alpha", Filters(rank_window=100, channel_id=channel.pk, role="user"), limit=61
        ).hits
    ]
    pages = [search("alpha", filters, limit=10, offset=n * 10) for n in range(7)]
    assert all(page.ranked_within is None for page in pages)
    assert [h.message.pk for page in pages for h in page.hits] == whole


def test_no_refresh_is_asked_for_when_ranking_over_every_match_is_off(db, hermes_config):
    hermes_config(search={"rank_queries": 0})
    channel, _, old = _conversation("ranked-off")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    for _ in range(2):
        answer = search("alpha", filters, limit=5)
        assert answer.ranked_within == 100 and old.pk not in [h.message.pk for h in answer.hits]


def test_a_refused_queue_costs_the_lookup_nothing(db, monkeypatch):
    import django_q.tasks

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(django_q.tasks, "async_task", refuse)
    channel, _, _ = _conversation("ranked-refused")
    answer = search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    assert answer.ranked_within == 100 and len(answer.hits) == 5
    assert ranked._asked == {}  # the next lookup asks again


# The merge itself, against a brute-force ranking of every match.
matches = st.dictionaries(
    st.integers(1, 400), st.sampled_from([-5.0, -4.0, -3.5, -3.0, -2.0, -1.0]), max_size=120
)


@settings(max_examples=300, deadline=None)
@given(
    matches=matches,
    upto=st.integers(0, 400),
    keep=st.integers(1, 40),
    window=st.integers(1, 60),
    limit=st.integers(1, 15),
    offset=st.integers(0, 60),
)
def test_a_page_said_to_be_exact_is_the_true_ranking_of_every_match(
    matches, upto, keep, window, limit, offset
):
    truth = sorted(matches.items(), key=lambda r: (r[1], r[0]))
    older = sorted(((pk, s) for pk, s in matches.items() if pk <= upto), key=lambda r: (r[1], r[0]))
    newer = [(pk, s) for pk, s in matches.items() if pk > upto]
    last = older[keep - 1] if len(older) > keep else None
    best = ranked.Best(1, upto, len(older), last and last[1], last and last[0])
    newest = sorted(matches)[-window:]

    def window_ranked(n: int) -> list[tuple[int, float]]:
        return sorted(((pk, matches[pk]) for pk in newest), key=lambda r: (r[1], r[0]))[:n]

    page, exact = ranked.combine(best, older[:keep], newer, window_ranked, limit, offset)
    if exact:
        assert page == truth[offset : offset + limit]
    assert len({pk for pk, _ in page}) == len(page)
    assert all(matches[pk] == score for pk, score in page)
    assert len(page) <= limit


def test_a_lookup_reads_its_query_and_kept_rows_through_their_keys(db):
    channel, _, _ = _conversation("ranked-plans", newer=120)
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)
    statements: list[tuple[str, list]] = []

    def record(execute, sql, params, many, context):
        if ranked.TERMS in sql or ranked.ROWS in sql or ranked.HEAD_FUNCTION in sql:
            statements.append((sql, list(params)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert search("alpha", filters, limit=5).ranked_within is None
    if connection.vendor == "postgresql":
        # One call (the entry, the newest id, the first kept rows, read by HEAD_FUNCTION within
        # HEAD_OR_FUNCTION, itself within HEAD_OR_PAGE_FUNCTION, which reads page one along when
        # there is no entry); what it runs, the tables' counters say: not one of them read whole.
        called = [sql.split("(")[0].split()[-1] for sql, _ in statements]
        assert called == [ranked.HEAD_OR_PAGE_FUNCTION]
        scans = _scans()
        with connection.cursor() as cursor:
            best = ranked.lookup(cursor, "words", '"alpha"', channel.pk, 6)
        assert best is not None and len(best.head) == 6
        after = _scans()
        for table in (ranked.TERMS, ranked.ROWS, "sessions_app_message"):
            assert after[table][0] == scans[table][0], (table, scans, after)  # no sequential
            assert after[table][1] > scans[table][1], (table, scans, after)  # by an index
        return
    assert len(statements) == 2  # the query's entry, then its kept rows
    for sql, params in statements:
        plan = _explain(sql, params)
        # Every table is searched by a key, none scanned (the newest message id is read off
        # the key's end, in a subquery).
        lines = [line for line in plan.splitlines() if line != "SCALAR SUBQUERY 1"]
        assert all(line.startswith("SEARCH") for line in lines), plan


@pytest.mark.postgres
def test_on_postgresql_an_entry_whose_kept_rows_all_left_the_index_is_still_found(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: the one-call lookup")
    channel, session, _ = _conversation("ranked-all-gone", newer=120)
    search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)  # kept
    Message.objects.filter(session=session).update(active=False, compressed=False)
    with connection.cursor() as cursor:
        best = ranked.lookup(cursor, "words", '"alpha"', channel.pk, 5)
    assert best is not None and best.head == () and best.matched == 121


def _scans() -> dict[str, tuple[int, int]]:
    """PostgreSQL: this transaction's sequential and index scans of the tables a lookup reads."""
    if connection.vendor != "postgresql":
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables "
            "WHERE relname IN (%s, %s, %s)",
            [ranked.TERMS, ranked.ROWS, "sessions_app_message"],
        )
        found = {name: (seq, idx) for name, seq, idx in cursor.fetchall()}
    return {t: found.get(t, (0, 0)) for t in (ranked.TERMS, ranked.ROWS, "sessions_app_message")}


@pytest.mark.postgres
def test_on_postgresql_the_newer_matches_are_a_walk_down_the_primary_key_without_statistics(db):
    _newer_matches_walk_the_key(outside=False)


@pytest.mark.postgres
def test_so_they_are_outside_any_transaction_as_a_request_looks_up(transactional_db):
    """A request's lookup runs without a transaction: the plan's settings (a function's, which
    sets them for the statement it runs) hold there too."""
    try:
        _newer_matches_walk_the_key(outside=True)
    finally:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # committed: put the statistics back
                cursor.execute("ANALYZE sessions_app_message")


def _newer_matches_walk_the_key(outside: bool) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite walks its FTS5 index")
    channel, session, _ = _conversation("ranked-fresh-plan", newer=120)
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)
    services.append_messages(session, [_said(2)], run_hooks=False)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'sessions_app_message'::regclass")
    plans: list[str] = []

    def explain(execute, sql, params, many, context):
        # The walk to the refresh: explained by the function that runs it, under its settings.
        inner = params[0] if sql.startswith(_PLANNED_CALL) else ""
        if "ts_rank" in inner and "m.id > " in inner and not inner.startswith("EXPLAIN"):
            context["cursor"].execute(f"{_PLANNED_CALL}%s) AS t(line text)", ["EXPLAIN " + inner])
            plans.append("\n".join(row[0] for row in context["cursor"].fetchall()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explain):
        assert search("alpha", filters, limit=5).ranked_within is None
    assert connection.in_atomic_block is not outside
    assert len(plans) == 1
    assert "Index Scan Backward using sessions_app_message_pkey" in plans[0], plans[0]
    assert "Bitmap" not in plans[0], plans[0]


def test_a_refresh_that_succeeds_leaves_no_record_in_the_task_queue(db):
    from django_q.models import Task

    channel, _, old = _conversation("ranked-unsaved")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)
    assert search("alpha", filters, limit=5).hits[0].message.pk == old.pk  # it ran
    assert not Task.objects.filter(func="search.tasks.refresh_ranked").exists()


@pytest.mark.postgres
def test_two_refreshes_of_one_query_racing_on_postgresql_leave_one_entry_and_no_error(
    transactional_db,
):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite's write lock serialises the refreshes")
    import threading

    import psycopg

    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"], port=settings["PORT"], user=settings["USER"],
        dbname=settings["NAME"],
    )  # fmt: skip
    with other.cursor() as cursor:  # a refresh in flight: its row written, not yet committed
        cursor.execute(
            f"INSERT INTO {ranked.TERMS} (idx, expression, channel_id, upto, matched, "  # noqa: S608
            "floor, refreshed_at) VALUES ('words', '\"race\"', 0, 5, 1, NULL, now())"
        )
    commit = threading.Timer(0.5, other.commit)  # the second refresh waits on it meanwhile
    commit.start()
    ranked.store("words", '"race"', None, 9, 1, [(1, -1.0)], 5, 100)
    commit.join()  # the commit's answer read before its connection closes
    other.close()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT upto FROM {ranked.TERMS} WHERE expression = %s", ['"race"'])  # noqa: S608
        assert cursor.fetchall() == [(5,)]


def test_a_lookup_returns_before_its_refresh_is_queued_and_the_enqueuer_queues_it_after(
    db, monkeypatch
):
    """With a real (not synchronous) queue, queueing is a write made off the request path."""
    import threading

    import django_q.tasks
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)
    release, queued = threading.Event(), []

    def slow_broker(func, *args, **kwargs):
        release.wait(10)
        queued.append((func, args[1], threading.current_thread().name, kwargs["request_id"]))

    monkeypatch.setattr(django_q.tasks, "async_task", slow_broker)
    channel, _, _ = _conversation("ranked-enqueuer")
    from core.logs import bind_request_id, unbind

    token = bind_request_id("req-ranked-1")
    try:
        answer = search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    finally:
        unbind(token)
    assert answer.ranked_within == 100 and queued == []  # answered while the broker waits
    release.set()
    assert ranked.drain()
    assert queued == [("search.tasks.refresh_ranked", '"alpha"', "hermes-later", "req-ranked-1")]


def test_the_enqueuer_keeps_its_connection_between_asks_as_a_request_does_and_closes_it_idle(
    db, monkeypatch
):
    """Reopening it for each ask cost a SQLite web process 3 ms beside the next requests."""
    import threading
    import time

    import django_q.tasks
    from django.db import connection as requests_connection
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(later, "IDLE_SECONDS", 0.3)
    # Kept connections, as deployed (the tests' settings close each at its request's end).
    monkeypatch.setitem(requests_connection.settings_dict, "CONN_MAX_AGE", 600)
    opened, closes, idle_closed = [], [], threading.Event()

    def broker(*args, **kwargs):
        from django.db import connections

        own = connections["default"]  # the enqueuer thread's own, not a proxy

        if not opened:
            own.connect()  # its age counted from now, whatever an earlier test left open
            real_close = own.close

            def close():
                closes.append(time.monotonic())
                idle_closed.set()
                real_close()

            monkeypatch.setattr(own, "close", close)
        opened.append(own.connection)

    monkeypatch.setattr(django_q.tasks, "async_task", broker)
    channel, _, _ = _conversation("ranked-enqueuer-kept")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    for _ in range(2):
        ranked._asked.clear()
        search("alpha", filters, limit=5)
        assert ranked.drain()
    assert len(opened) == 2 and opened[0] is opened[1] and closes == []
    assert idle_closed.wait(5)  # no ask for later.IDLE_SECONDS: closed
    assert len(closes) == 1


def test_the_enqueuer_outlives_a_connection_it_could_not_close(db, monkeypatch, caplog):
    import django_q.tasks
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)
    queued = []

    def broker(*args, **kwargs):
        from django.db import connections

        def refuse():
            raise OSError("the socket is gone")

        monkeypatch.setattr(connections["default"], "close_if_unusable_or_obsolete", refuse)
        queued.append(args[2])

    monkeypatch.setattr(django_q.tasks, "async_task", broker)
    channel, _, _ = _conversation("ranked-enqueuer-close")
    for _ in range(2):
        ranked._asked.clear()
        search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
        assert ranked.drain()
    assert queued == ['"alpha"', '"alpha"']
    assert "could not close its connection" in caplog.text


def test_a_queue_refused_off_the_request_path_lets_the_next_lookup_ask_again(db, monkeypatch):
    import django_q.tasks
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(django_q.tasks, "async_task", refuse)
    channel, _, _ = _conversation("ranked-refused-later")
    search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    assert ranked.drain()
    assert ranked._asked == {}


def test_a_forked_child_starts_its_own_enqueuer_instead_of_feeding_its_parent_s_dead_one(
    db, monkeypatch
):
    import django_q.tasks
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)
    queued = []
    monkeypatch.setattr(django_q.tasks, "async_task", lambda *a, **k: queued.append(a[2]))
    channel, _, _ = _conversation("ranked-forked")
    filters = Filters(rank_window=100, channel_id=channel.pk)
    search("alpha", filters, limit=5)
    assert ranked.drain()
    parent = later._queue
    # As a server's forked worker sees it: the queue object is inherited, its thread is not.
    monkeypatch.setattr(later, "_pid", -1)
    ranked._asked.clear()
    search("alpha", filters, limit=5)
    assert ranked.drain()
    assert later._queue is not parent
    assert queued == ['"alpha"', '"alpha"']


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: the function and its statement"
)
@pytest.mark.parametrize("q", ["O'Brien's", "back\\slash", "100%", "''quoted''", "a;b"])
def test_on_postgresql_query_text_inside_the_functions_statement_is_matched_as_text(db, caplog, q):
    """The window goes to ``hermes_ranked_head_or`` as the text of a statement, the query in it
    quoted by the client: quotes, backslashes, percent signs and semicolons are words' edges, not
    SQL, and the words route finds the message (a broken statement would fall back, logged)."""
    channel = create_channel("ranked-quoted")[0]
    session = services.open_session(channel, model="gpt-4o").session
    said = services.append_messages(
        session, [{"role": "user", "content": f"we said {q} once"}], run_hooks=False
    ).messages[0]
    with caplog.at_level("ERROR"):
        answer = search(q, Filters(channel_id=channel.pk))
    assert answer.index == "words", (answer.index, answer.tried)
    assert [h.message.pk for h in answer.hits] == [said.pk]
    assert not [r for r in caplog.records if "falling back" in r.getMessage()]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite has no such function"
)
def test_on_postgresql_the_head_or_function_migrations_go_back_and_forth():
    from django.db.migrations.executor import MigrationExecutor

    from search import pg

    def present() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_proc WHERE proname = %s", [ranked.HEAD_OR_FUNCTION]
            )
            return cursor.fetchone()[0] == 1

    def arguments() -> int:  # 0012's function takes 5, 0013's 10
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pronargs FROM pg_proc WHERE proname = %s", [ranked.HEAD_OR_FUNCTION]
            )
            return cursor.fetchone()[0]

    def common() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [pg.COMMON])
            return cursor.fetchone()[0]

    def trigram_first() -> bool:  # search 0014's (search.pg_trigram)
        from search import pg_trigram

        names = [pg_trigram.FIRST, pg_trigram.PROBE, pg_trigram.INDEX_READ]
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = ANY(%s)", [names])
            return cursor.fetchone()[0] == 3

    def with_page() -> int:  # search 0016's and 0017's
        from search import pg_trigram

        names = [ranked.HEAD_OR_PAGE_FUNCTION, pg_trigram.FIRST_PAGE]
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = ANY(%s)", [names])
            return cursor.fetchone()[0]

    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    assert present() and arguments() == 10 and common() and trigram_first()
    assert with_page() == 2
    executor.migrate([("search", "0016_first_page")])
    assert with_page() == 1 and trigram_first()
    executor = MigrationExecutor(connection)
    executor.migrate([("search", "0015_rare_prefix")])
    assert present() and arguments() == 10 and with_page() == 0
    executor = MigrationExecutor(connection)
    executor.migrate([("search", "0012_ranked_head_or_function")])
    assert present() and arguments() == 5 and not common() and not trigram_first()
    executor = MigrationExecutor(connection)
    executor.migrate([("search", "0011_page_functions")])
    assert not present()
    executor = MigrationExecutor(connection)
    executor.migrate(leaves)
    assert present() and arguments() == 10 and common() and trigram_first()
    assert with_page() == 2


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite plans in process"
)
def test_on_postgresql_the_common_words_follow_the_statistics_and_are_written_only_when_they_change(
    db,
):
    from search import pg
    from search.tasks import trim_recent_index

    channel = create_channel("ranked-common")[0]
    session = services.open_session(channel, model="gpt-4o").session
    services.append_messages(session, [_said(1, [f"once{n}"]) for n in range(60)], run_hooks=False)

    def listed() -> set[tuple[str, str]]:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT idx, lexeme FROM {pg.COMMON}")  # noqa: S608
            return set(cursor.fetchall())

    def written() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n_tup_ins + n_tup_del FROM pg_stat_xact_user_tables WHERE relname = %s",
                [pg.COMMON],
            )
            return cursor.fetchone()[0]

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_message")
    assert trim_recent_index() == 0  # the minute's task refreshes the list on PostgreSQL
    assert {("words", "alpha"), ("bigram", "alpha")} <= listed()
    before = written()
    with connection.cursor() as cursor:
        pg.refresh_common(cursor)
    assert written() == before  # the statistics did not change: nothing written
    with connection.cursor() as cursor:  # as after a restore: no statistics at all
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'sessions_app_message'::regclass")
        pg.refresh_common(cursor)
    assert listed() == set()


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite has no such function"
)
def test_on_postgresql_the_head_or_function_the_migrations_made_is_the_one_the_code_makes(db):
    """A change to search.ranked.HEAD_OR_FUNCTION needs a migration that makes it again (each
    keeps the text it made): this fails until it has one."""

    def made() -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_get_function_arguments(oid), pg_get_function_result(oid), prosrc "
                "FROM pg_proc WHERE proname = %s",
                [ranked.HEAD_OR_FUNCTION],
            )
            return cursor.fetchall()

    before = made()
    assert len(before) == 1
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(ranked.CREATE_HEAD_OR_FUNCTION)
        assert made() == before
        transaction.set_rollback(True)


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite has no such function"
)
def test_on_postgresql_the_head_or_page_function_the_migrations_made_is_the_one_the_code_makes(db):
    """A change to search.ranked.HEAD_OR_PAGE_FUNCTION needs a migration that makes it again."""

    def made() -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_get_function_arguments(oid), pg_get_function_result(oid), prosrc, "
                "provolatile FROM pg_proc WHERE proname = %s",
                [ranked.HEAD_OR_PAGE_FUNCTION],
            )
            return cursor.fetchall()

    before = made()
    assert len(before) == 1
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(ranked.CREATE_HEAD_OR_PAGE_FUNCTION)
        assert made() == before
        transaction.set_rollback(True)


def _answers(query: str, filters: Filters, **page) -> list[dict]:
    """Each page's whole answer as the API serialises it, every lookup a first one."""
    from search.api import serialize

    answers = []
    for offset in (0, page.get("limit", 20)):
        with connection.cursor() as cursor:
            ranked.clear(cursor)
        ranked._asked.clear()
        result = search(query, filters, offset=offset, **page)
        answers.append(serialize(result, page.get("limit", 20), offset))
    return answers


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite reads in process"
)
@pytest.mark.parametrize(
    "query",
    [
        "alpha",
        "filler3",
        "filler3 alpha",
        '"alpha filler0"',
        "数据库",
        "alph*",
        "ilter3",
        "ller17",
        "nowhere",
    ],
)
@pytest.mark.parametrize(("limit", "window"), [(3, 2), (20, 0), (1, 5)])
@pytest.mark.parametrize("probe", [500, 1])
def test_on_postgresql_page_one_read_with_its_lookup_is_the_page_read_after_it(
    db, monkeypatch, query, limit, window, probe
):
    """The hits, windows, excerpts, bookmarks and counts of page one (and page two, which reads
    after its lookup as before) are the same whether page one's rows came in the lookup's round
    trip (search.rows.FirstPage: the words and bigram routes' call, or the trigram route's first
    step when its index read is the answer) or were read after it -- the window's rows past the
    page, and rows in other channels, included; and nothing is read again for it."""
    from search.backends import postgres

    monkeypatch.setattr(postgres, "PROBE_ROWS", probe)  # 1: the trigram index answers
    channel, session, _ = _conversation(f"ranked-page-{limit}-{window}", newer=40)
    services.append_messages(
        session,
        [{"role": "user", "content": f"数据库 集群 alpha {n}"} for n in range(6)],
        run_hooks=False,
    )
    other = create_channel(f"ranked-page-other-{limit}-{window}")[0]
    services.append_messages(
        services.open_session(other, model="gpt-4o").session,
        [_said(3, FILLER[:5]) for _ in range(5)],
        run_hooks=False,
    )
    filters = Filters(rank_window=20, channel_id=channel.pk)
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    def reads_after(statements: list[str]) -> int:
        return sum(sql.startswith("SELECT * FROM hermes_page_hits(%s") for sql in statements)

    _answers(query, filters, limit=limit, window=window)  # what a process reads once, read
    with connection.execute_wrapper(record):
        along = _answers(query, filters, limit=limit, window=window)
    sent_along, sent = sent, []
    monkeypatch.setattr(postgres, "first_page", lambda limit, offset: None)
    with connection.execute_wrapper(record):
        after = _answers(query, filters, limit=limit, window=window)
    assert along == after
    # Only the page reads the lookups brought along are not sent again (a window short of rows
    # would be read again: the rows along were all of them).
    saved = reads_after(sent) - reads_after(sent_along)
    assert len(sent) - len(sent_along) == saved, (sent_along, sent)
    assert saved <= 1  # page one at most; page two (an offset) reads after its lookup
    if along[0]["hits"] and along[0]["tried"] == [along[0]["index"]] != ["trigram"]:
        assert saved == 1  # the words or bigram route answered page one: it came along
    if query in ("数据库", "ller17") and probe == 1:
        # The trigram index read's rows, along: first among the routes, or after a words route
        # that found nothing (a fragment of a word; the newest row, the probe's, has none).
        assert along[0]["index"] == "trigram" and saved == 1, along[0]["tried"]


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite reads in process"
)
def test_on_postgresql_rows_read_along_are_used_only_by_the_page_they_were_read_for(db):
    """A search whose lookup finds a kept entry (its page then read from the kept rows) or whose
    first route finds nothing reads its page itself: nothing read along is ever shown for
    another page."""
    from search import rows

    channel, _, _ = _conversation("ranked-page-entry", newer=150)
    filters = Filters(rank_window=100, channel_id=channel.pk)
    first = search("alpha", filters, limit=5)  # fills its window: the worker keeps its rows
    assert first.ranked_within == 100
    kept = search("alpha", filters, limit=5)  # the entry: the function kept no window ids
    assert kept.ranked_within is None and [h.message.pk for h in kept.hits]
    assert getattr(rows._first, "kept", None) is None and rows.first_page(6, 0) is None
    rows.expect_first_page(rows.FirstPage(5, 3))
    assert rows.first_page(6, 0) == (5, 3)  # page one's lookup: its 5 hits and the row past them
    assert rows.first_page(6, 5) is None and rows.first_page(21, 0) is None  # not page one's
    rows._first.kept = rows._Kept(frozenset({1, 2}), frozenset({1}), 3, [], [])
    assert rows._kept_page([1, 2], [1], 4) is None  # another slack: not these rows
    assert rows._first.kept is None  # and forgotten
    rows._first.kept = rows._Kept(frozenset({1, 2}), frozenset({1}), 3, [("hit",)], [])
    assert rows._kept_page([2, 1], [1], 3) == ([("hit",)], [])
    rows.expect_first_page(None)


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite reads in process"
)
def test_on_postgresql_a_search_that_fails_leaves_no_page_expected_or_kept(db, monkeypatch):
    from search import rows, service

    channel, _, _ = _conversation("ranked-page-error", newer=5)

    def fail(*args, **kwargs):
        assert rows.first_page(6, 0) == (5, 3)  # expected, and read along, until here
        assert getattr(rows._first, "kept", None) is not None
        raise RuntimeError("the page could not be built")

    monkeypatch.setattr(service, "_hits", fail)
    with pytest.raises(RuntimeError):
        search("alpha", Filters(rank_window=100, channel_id=channel.pk), limit=5)
    assert rows.first_page(6, 0) is None and getattr(rows._first, "kept", None) is None
