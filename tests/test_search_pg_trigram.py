"""PostgreSQL's trigram route walks the newest rows first and reads the trigram index for what
is left where matches are sparse: the same hits as one statement over everything, and plans fixed
whether or not the planner has statistics."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="PostgreSQL only: SQLite's trigram index is FTS5"
    ),
]

ROWS = 1_200


@pytest.fixture
def corpus(db):
    """Two channels, 150 rows of each in turn; in each, ``dense`` in every fourth message,
    ``sparse`` in every 75th (in upper case in every 150th), ``oldonly`` in the oldest 25."""
    channels = [create_channel(f"trigram-{n}")[0] for n in range(2)]
    sessions = [services.open_session(c, model="gpt-4o").session for c in channels]
    # Older filler, so that the planner weighs its choices on a table of some size (on a
    # thousand rows any plan is cheap): 20,000 rows of code and prose in a third session.
    filler = services.open_session(channels[0], model="gpt-4o").session
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO sessions_app_message (session_id, channel_id, position, role, content,"
            " token_count, active, compressed, is_summary, is_fallback_summary, created_at,"
            " rollback_reason) SELECT %s, %s, n, 'user', CASE n %% 3 WHEN 0 THEN"
            " 'def get_user_by_email(email): return ' || n WHEN 1 THEN '缓存失效 服务器超时 ' || n"
            " ELSE 'restart the worker queue after deploy ' || n END, 10, n %% 4 <> 0, n %% 4 = 0,"
            " false, false, now(), '' FROM generate_series(1, 20000) n",
            [filler.pk, channels[0].pk],
        )
    for start in range(0, ROWS // 2, 150):
        for session in sessions:
            batch = []
            for i in range(start, start + 150):
                words = ["filler text", f"row{i}"]
                if i % 4 == 0:
                    words.append("数据库dense")
                if i % 75 == 0:
                    words.append("SPARSEword" if i % 150 == 0 else "sparseword")
                if i < 25:
                    words.append("oldonly")
                batch.append({"role": "user", "content": " ".join(words)})
            services.append_messages(session, batch, run_hooks=False)
    return channels


def _reference(needle: str, filters, window: int) -> list[int]:
    """The newest ``window`` matches by one plain statement: what the ranges must equal."""
    from search.backends.common import filters_sql

    where, params = filters_sql(filters)
    clauses = " AND ".join(["m.content ILIKE %s", *where])  # the filters' constant SQL
    sql = (
        "SELECT m.id FROM sessions_app_message m WHERE (m.active OR m.compressed) AND "  # noqa: S608
        f"{clauses} ORDER BY m.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [f"%{needle}%", *params, window])
        return [row[0] for row in cursor.fetchall()]


def _walks(queries) -> list[str]:
    """The statements of ``queries`` that walk or read the trigram index: written out, or the
    first lookup's call that runs both (search.pg_trigram.FIRST). The lookup that calls it only
    where the fragment has no entry counts where its row says the entry was absent."""
    from search import pg_trigram

    return [
        q["sql"]
        for q in queries
        if "ORDER BY m.id DESC LIMIT" in q["sql"]
        or (pg_trigram.FIRST in q["sql"] and not q["sql"].startswith(LOOKUP_AND_STEP))
        or (q["sql"].startswith(LOOKUP_AND_STEP) and _was_absent(q["sql"]))
    ]


LOOKUP_AND_STEP = "SELECT * FROM hermes_trigram_head_or_first("  # search.pg_trigram


def _was_absent(sql: str) -> bool:
    """Run again, the lookup's first statement says whether the fragment had no entry (nothing
    was refreshed in between: the tests' worker runs when asked)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.split("; ")[0])
        return bool(cursor.fetchone()[0])


def _forget_statistics() -> None:
    with connection.cursor() as cursor:  # as after a restore, before any ANALYZE
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'sessions_app_message'::regclass")
        # ...and no row counts: an earlier test's ANALYZE wrote its own in place (outside its
        # rolled-back transaction), which a restored table does not have.
        cursor.execute(
            "UPDATE pg_class SET reltuples = -1 WHERE oid = 'sessions_app_message'::regclass "
            "OR oid IN (SELECT indexrelid FROM pg_index "
            "WHERE indrelid = 'sessions_app_message'::regclass)"
        )


def test_the_ranges_find_the_newest_matches_as_one_statement_does(corpus, monkeypatch):
    from search.backends import postgres
    from search.filters import Filters
    from search.query import parse

    _forget_statistics()
    for probe in (50, 2_000):  # judged after the first walk, a short one or a long one
        monkeypatch.setattr(postgres, "PROBE_ROWS", probe)
        monkeypatch.setattr(postgres, "MIN_WALK", probe)
        # Patterns of each kind search.pg_trigram.FIRST takes: an ILIKE with a narrowing
        # piece or without, and LIKE on one or two case variants (old filler rows alone: the
        # probe finds none of them, the index read does).
        for needle in (
            "数据库dense",
            "sparseword",
            "oldonly",
            "nowhere-at-all",
            "缓存失效",
            "5999",
            "w59",
        ):
            route = next(r for r in parse(needle).routes if r.index == "trigram")
            for channel, window in ((None, 100), (corpus[1].pk, 100), (corpus[0].pk, 1_000)):
                filters = Filters(channel_id=channel, rank_window=window)
                expected = _reference(needle, filters, window)
                with transaction.atomic():
                    page, capped, count, _ = postgres.run_fts(route, filters.resolved(), 20, 0)
                assert count == len(expected) and capped == (len(expected) >= window)
                assert [pk for pk, _ in page] == expected[:20], (needle, probe, channel)
                with transaction.atomic():
                    page, _, _, _ = postgres.run_fts(route, filters.resolved(), 20, 40)
                assert [pk for pk, _ in page] == expected[40:60], (needle, probe, channel)


def _explain(sql: str, params: list, plan: dict[str, str]) -> str:
    """The plan of ``sql`` under ``plan``'s settings, as its function (search.pg.PLANNED, whose
    settings the next test holds to the same) plans it; EXPLAIN cannot see into a function."""
    with transaction.atomic(), connection.cursor() as cursor:
        for setting, value in plan.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [setting, value])
        cursor.execute("EXPLAIN " + sql, params)
        explained = "\n".join(row[0] for row in cursor.fetchall())
        # Rolled back to the savepoint: a released one would keep the settings for the rest
        # of the test's transaction.
        transaction.set_rollback(True)
    return explained


def test_each_planned_function_runs_its_statement_under_its_settings_and_puts_them_back(db):
    from search import pg

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT proname, proconfig FROM pg_proc WHERE proname = ANY(%s)", [list(pg.PLANNED)]
        )
        found = {name: dict(c.split("=", 1) for c in config) for name, config in cursor.fetchall()}
        assert found == pg.PLANNED
        names = sorted({name for settings in pg.PLANNED.values() for name in settings})
        shown = "SELECT " + ", ".join(f"current_setting('{n}')" for n in names)
        cursor.execute(shown)
        before = cursor.fetchone()
        for function, plan in pg.PLANNED.items():
            # The statement sees the settings (planned under them), the session does not after.
            seen = pg.run_planned(
                cursor, function, shown, [], ", ".join(f"s{i} text" for i in range(len(names)))
            )
            assert dict(zip(names, seen[0], strict=True)) == {
                n: plan.get(n, was) for n, was in zip(names, before, strict=True)
            }
            cursor.execute(shown)
            assert cursor.fetchone() == before


@pytest.mark.parametrize("statistics", ["none", "analyzed"])
def test_the_walk_and_the_index_ranges_keep_their_plans_with_or_without_statistics(
    corpus, statistics
):
    if statistics == "none":
        _forget_statistics()
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE sessions_app_message")
    for needle in ("数据库dense", "SparseWord", "数据库"):
        _check_plans(needle, corpus[0].pk)


def _check_plans(needle: str, channel_id: int) -> None:
    from search import pg
    from search.backends import postgres
    from search.backends.common import INDEXED, filters_sql
    from search.filters import Filters

    match, match_params = postgres._like_clauses((needle,))
    narrowed, narrowed_params = postgres._like_clauses((needle,), narrowed=True)
    where, where_params = filters_sql(Filters(channel_id=channel_id))
    _, walk, rest, probe = postgres.trigram_statements(
        [INDEXED, *narrowed], [INDEXED, *match], where
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM sessions_app_message")
        lowest, highest = cursor.fetchone()
    middle = (lowest + highest) // 2
    # The walk: the primary key backwards, stopping at the page, never a bitmap or a sort.
    for bounds in ([middle, highest + 1], [lowest, highest + 1]):
        params = [*where_params, *narrowed_params, *bounds, 1000]
        plan = _explain(walk, params, pg.WALK)
        assert "Index Scan Backward using sessions_app_message_pkey" in plan, plan
        assert "Sort" not in plan and "Bitmap" not in plan, plan
        # The probe reads the same rows, every channel's match flagged.
        plan = _explain(probe, [*where_params, *narrowed_params, *bounds], pg.WALK)
        assert "Index Scan Backward using sessions_app_message_pkey" in plan, plan
        assert "Sort" not in plan and "Bitmap" not in plan, plan
    # Everything below: the trigram index alone, the key not read at all.
    plan = _explain(rest, [*match_params, *where_params, lowest, middle, 1000], pg.INDEX)
    assert "Bitmap Index Scan on search_pg_trigram" in plan, plan
    assert "Seq Scan" not in plan and "sessions_app_message_pkey" not in plan, plan


def test_a_search_walks_for_a_dense_fragment_and_reads_the_index_for_a_sparse_one(
    corpus, monkeypatch
):
    """Also where the newest rows are another channel's: the first 100 ids hold none of
    channel 0's (its rows come 150 at a time), which is no reason to leave the walk."""
    from search import ranked
    from search.backends import postgres
    from search.filters import Filters
    from search.service import search

    monkeypatch.setattr(postgres, "PROBE_ROWS", 100)
    monkeypatch.setattr(postgres, "MIN_WALK", 400)
    # The first lookup's own statements (a kept query's later lookups: below).
    monkeypatch.setattr(ranked, "enabled", lambda: False)
    _forget_statistics()
    for channel in corpus:
        for needle, walked_only in (("数据库", True), ("parsewor", False)):
            with CaptureQueriesContext(connection) as queries:
                result = search(needle, Filters(channel_id=channel.pk, rank_window=100), window=0)
            assert result.index == "trigram"
            statements = [q["sql"] for q in queries if "ORDER BY m.id DESC LIMIT" in q["sql"]]
            assert ("m.id + 0 <" not in " ".join(statements)) is walked_only, statements


def test_a_fragment_no_channel_has_in_the_probe_goes_to_the_index_after_one_walk(
    corpus, monkeypatch
):
    """``oldonly`` is in the oldest rows alone: the probe finds a fragment of it in no channel,
    so the walk stops there (walking on to MIN_WALK could only read more rows without it)."""
    from search import pg_trigram, ranked
    from search.backends import postgres
    from search.filters import Filters
    from search.service import search

    monkeypatch.setattr(postgres, "PROBE_ROWS", 100)
    monkeypatch.setattr(postgres, "MIN_WALK", 400)
    monkeypatch.setattr(ranked, "enabled", lambda: False)
    for channel in (corpus[0].pk, corpus[1].pk, None):
        filters = Filters(channel_id=channel, rank_window=100)
        with CaptureQueriesContext(connection) as queries:
            result = search("ldonl", filters, window=0)
        assert result.index == "trigram"
        assert [h.message.pk for h in result.hits] == _reference("ldonl", filters, 100)[:20]
        statements = [  # the trigram route's (the words route's come first, with its query)
            q["sql"]
            for q in queries
            if ("ORDER BY m.id DESC" in q["sql"] and not q["sql"].startswith("WITH q"))
            or pg_trigram.FIRST in q["sql"]
        ]
        # One call: the probe, and the index read its empty probe led to (pg_trigram.FIRST).
        assert len(statements) == 1 and pg_trigram.FIRST in statements[0], statements


@pytest.mark.parametrize("keep", [20, 200])
def test_a_kept_fragment_answers_newest_first_with_its_exact_count_on_every_page(
    corpus, hermes_config, keep
):
    """Once the worker keeps a common fragment's newest rows, a lookup reads its newer matches
    and the page, not a window, and counts every match exactly; pages past the kept rows walk
    on below them."""
    from search.filters import Filters
    from search.service import search

    hermes_config(search={"rank_keep": keep})
    channel = corpus[0]
    filters = Filters(channel_id=channel.pk, rank_window=100)
    first = search("数据库dense", filters, limit=10, window=0)
    assert first.ranked_within == 100 and not first.total_exact  # asked for the refresh
    expected = _reference("数据库dense", Filters(channel_id=channel.pk), 10_000)
    assert len(expected) > 100
    pages = [search("数据库dense", filters, limit=10, offset=n * 10, window=0) for n in range(17)]
    assert [h.message.pk for page in pages for h in page.hits] == expected
    assert {(p.total, p.total_exact, p.ranked_within) for p in pages} == {
        (len(expected), True, None)
    }
    session = services.open_session(channel, model="gpt-4o").session
    newer = services.append_messages(
        session, [{"role": "user", "content": "新的数据库dense"}], run_hooks=False
    ).messages[0]
    again = search("数据库dense", filters, limit=10, window=0)
    assert [h.message.pk for h in again.hits] == [newer.pk, *expected[:9]]
    assert (again.total, again.total_exact) == (len(expected) + 1, True)


def test_a_kept_fragment_with_nothing_newer_reads_no_rows_but_its_page(corpus):
    from search.filters import Filters
    from search.service import search

    filters = Filters(channel_id=corpus[1].pk, rank_window=100)
    search("数据库dense", filters, limit=10, window=0)  # kept by the synchronous worker
    with CaptureQueriesContext(connection) as queries:
        result = search("数据库dense", filters, limit=10, window=0)
    assert result.total_exact and len(result.hits) == 10
    walks = _walks(queries)
    assert walks == [], walks


def test_a_fragments_first_lookup_reads_its_entry_and_first_step_in_one_round_trip(corpus):
    from search import pg_trigram, ranked
    from search.filters import Filters
    from search.service import search

    filters = Filters(channel_id=corpus[0].pk, rank_window=100)
    expected = _reference("parsewor", Filters(channel_id=corpus[0].pk), 100)
    with CaptureQueriesContext(connection) as queries:
        result = search("parsewor", filters, limit=5, window=0)
    assert [h.message.pk for h in result.hits] == expected[:5]
    # (The words route, tried first, finds nothing: its statement is its own.)
    trigram = [q["sql"] for q in queries if "hermes_words" not in q["sql"]]
    lookups = [sql for sql in trigram if ranked.HEAD_FUNCTION in sql or pg_trigram.FIRST in sql]
    assert len(lookups) == 1, trigram
    # ...with page one's hits, read along.
    assert lookups[0].startswith(LOOKUP_AND_STEP) and "hermes_page_hits" in lookups[0]


def test_a_kept_fragments_lookup_never_calls_the_first_step(corpus):
    from search import pg_trigram, ranked
    from search.backends import postgres_first
    from search.filters import Filters
    from search.service import search

    filters = Filters(channel_id=corpus[1].pk, rank_window=100)
    call = f"SELECT * FROM {pg_trigram.HEAD_OR_FIRST}(%s, %s, %s, %s, %s, %s, %s, %s, %s)"  # noqa: S608
    like, pattern = postgres_first.first_patterns("数据库dense")
    params = ["trigram", '"数据库dense"', corpus[1].pk, like, pattern, corpus[1].pk, 500, 100]
    params.append(None)  # no page

    def lookup() -> tuple[list[tuple], int]:
        """The function's rows, and how often it called the first step (the transaction's own
        function statistics)."""
        count = "SELECT coalesce(pg_stat_get_xact_function_calls(%s::regproc), 0)"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL track_functions = 'pl'")
            cursor.execute(count, [pg_trigram.FIRST])  # the test's transaction's, so far
            before = cursor.fetchone()[0]
            cursor.execute(call, params)
            rows = cursor.fetchall()
            cursor.execute(count, [pg_trigram.FIRST])
            return rows, cursor.fetchone()[0] - before

    rows, calls = lookup()
    assert calls == 1 and all(row[0] for row in rows)
    # The probe's matches in the newest rows, each with whether the channel keeps it.
    kept = [row[3] for row in rows if row[4]]
    assert kept and kept == _reference("数据库dense", filters, 100)[: len(kept)]
    search("数据库dense", filters, limit=10, window=0)  # kept by the synchronous worker
    assert ranked.lookup(connection.cursor(), "trigram", '"数据库dense"', corpus[1].pk)
    rows, calls = lookup()
    bounds = Message.objects.order_by("id").first().pk, Message.objects.order_by("id").last().pk
    assert calls == 0 and rows == [(False, *bounds, None, None, None)]


def test_an_entry_gone_between_the_lookups_two_reads_is_looked_up_again(corpus, monkeypatch):
    from search import ranked
    from search.filters import Filters
    from search.service import search

    filters = Filters(channel_id=corpus[1].pk, rank_window=100)
    search("数据库dense", filters, limit=10, window=0)  # kept by the synchronous worker
    kept = search("数据库dense", filters, limit=10, window=0)  # the answer from the entry
    assert (kept.total, kept.total_exact) == (150, True)
    # The entry, present for the function that decides whether to step, is gone for the read
    # of it in the same round trip (as if erased in between): once.
    seen = []

    def gone(rows):
        seen.append(rows)
        return None

    monkeypatch.setattr(ranked, "from_head", gone)
    again = search("数据库dense", filters, limit=10, window=0)
    assert len(seen) == 1 and seen[0]  # the entry was there, and was taken for gone
    assert [h.message.pk for h in again.hits] == [h.message.pk for h in kept.hits]
    assert (again.total, again.total_exact) == (150, True)


def test_a_slow_rare_fragment_is_kept_too_and_counted_exactly(corpus, monkeypatch):
    from search import ranked
    from search.filters import Filters
    from search.service import search

    monkeypatch.setattr(ranked, "SLOW_SECONDS", 0.0)  # every lookup counts as slow
    monkeypatch.setattr(ranked, "EMPTY_SLOW_SECONDS", 0.0)  # ...and every one that found nothing
    filters = Filters(channel_id=corpus[0].pk, rank_window=100)
    expected = _reference("parsewor", Filters(channel_id=corpus[0].pk), 100)
    first = search("parsewor", filters, limit=5, window=0)
    assert [h.message.pk for h in first.hits] == expected[:5]
    with CaptureQueriesContext(connection) as queries:
        again = search("parsewor", filters, limit=5, window=0)
    assert [h.message.pk for h in again.hits] == expected[:5]
    assert (again.total, again.total_exact, again.ranked_within) == (len(expected), True, None)
    # (The words route, tried first, finds nothing: its statement is the only one.)
    walks = _walks(queries)
    assert [sql for sql in walks if "hermes_words" not in sql] == [], walks
    # A fragment found nowhere: "none" is kept as well, and answered without a walk.
    assert search("owhere-at-al", filters, window=0).total == 0
    with CaptureQueriesContext(connection) as queries:
        assert search("owhere-at-al", filters, window=0).total == 0
    walks = _walks(queries)
    assert [sql for sql in walks if "hermes_words" not in sql] == [], walks


def test_the_page_functions_the_migrations_made_are_the_ones_the_code_makes(db):
    """A change to the columns a page reads needs a migration that makes the functions again
    (search.rows.page_function_statements): this fails until it has one."""
    from django.db import connections

    from search import rows

    def made() -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT proname, pg_get_function_arguments(oid), pg_get_function_result(oid),"
                " prosrc, proconfig FROM pg_proc WHERE proname = ANY(%s) ORDER BY proname",
                [[rows.PAGE_HITS, rows.PAGE_NEARBY]],
            )
            return cursor.fetchall()

    before = made()
    assert [name for name, *_ in before] == [rows.PAGE_HITS, rows.PAGE_NEARBY]
    assert all(dict(c.split("=", 1) for c in config) == rows.PAGE_PLAN for *_, config in before)
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in rows.page_function_statements(connections["default"]):
            cursor.execute(statement)  # a changed result type would be refused here
        assert made() == before
        transaction.set_rollback(True)


def test_a_page_read_through_the_functions_is_the_page_read_by_the_plain_statements(corpus):
    from search import rows
    from search.results import window_slack

    ids = list(
        Message.objects.filter(session__channel=corpus[0])
        .order_by("-pk")
        .values_list("pk", flat=True)[:40:2]
    )
    read, nearby = rows.read_page([*ids, 10**12], ids, window_slack(2))
    hits, near = rows.page_statements()
    with connection.cursor() as cursor:
        cursor.execute(hits.replace("$1", "%s::bigint[]"), [ids])
        plain = {row[0]: row for row in cursor.fetchall()}
        cursor.execute(
            near.replace("$1", "%s::bigint[]").replace("$2", "%s"),
            [ids, window_slack(2), window_slack(2)],  # the range's two ends
        )
        plain_nearby = sorted(cursor.fetchall())
    assert sorted(read) == sorted(plain) == sorted(ids)
    for pk, message in read.items():
        assert message.content == plain[pk][rows.MESSAGE_COLUMNS.index("content")]
        assert message.session.channel.pk == corpus[0].pk
    got = sorted((pk, n.id, n.position, n.content) for pk, rs in nearby.items() for n in rs)
    assert got == sorted((r[0], r[1], r[2], r[4]) for r in plain_nearby)


def _generic_plan(sql: str, names: list[str], types: list[str], args: str, plan: dict) -> str:
    """``sql`` (a static statement of search.pg_trigram, its variables ``names``) planned as
    PL/pgSQL plans it under ``plan``'s settings: a prepared statement's generic plan."""
    import re

    for n, name in enumerate(names, 1):
        sql = re.sub(rf"\b{name}\b", f"${n}", sql)
    with transaction.atomic(), connection.cursor() as cursor:
        for setting, value in plan.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [setting, value])
        cursor.execute(f"PREPARE hermes_kept_trigram ({', '.join(types)}) AS {sql}")
        try:
            cursor.execute(f"EXPLAIN EXECUTE hermes_kept_trigram({args})")
            explained = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE hermes_kept_trigram")
        transaction.set_rollback(True)
    return explained


@pytest.mark.parametrize("statistics", ["none", "analyzed"])
def test_the_first_lookups_kept_plans_walk_the_key_and_read_the_trigram_indexes(corpus, statistics):
    """search.pg_trigram's probe walks the primary key backwards and its index read reads the
    trigram indexes alone, in every shape of pattern, as the written-out statements do
    (test_the_walk_and_the_index_ranges_keep_their_plans_with_or_without_statistics): the
    kept plans are generic, so they cannot follow the statistics either way."""
    from search import pg_trigram

    if statistics == "none":
        _forget_statistics()
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE sessions_app_message")
    settings = {**pg_trigram.KEPT}
    names = ["p_like", "p_pattern", "p_channel", "p_lower", "p_upper"]
    types = ["text[]", "text", "bigint", "bigint", "bigint"]
    channel = corpus[0].pk
    probes = {
        "like": "ARRAY['%数据库%']",
        "narrowed": "ARRAY['%se%', '%SE%'], '%sparseword%'",
        "ilike": "NULL, '%sparseword%'",
    }
    for mode, patterns in probes.items():
        args = f"{patterns}{', NULL' if mode == 'like' else ''}, {channel}, 1, 100000"
        plan = _generic_plan(
            pg_trigram._probe_query(pg_trigram._PROBE_MATCHES[mode]),
            names,
            types,
            args,
            {**settings, **pg_trigram.WALK},
        )
        assert "Index Scan Backward using sessions_app_message_pkey" in plan, (mode, plan)
        assert "Sort" not in plan and "Bitmap" not in plan, (mode, plan)
    reads = {
        "(m.content ILIKE p_pattern OR hermes_tool_text(m.tool_calls) ILIKE p_pattern)": (
            "NULL, '%sparseword%'"
        ),
        pg_trigram._like_arms(1): "ARRAY['%数据库%'], NULL",
        pg_trigram._like_arms(4): "ARRAY['%ab1%', '%Ab1%', '%aB1%', '%AB1%'], NULL",
    }
    for match, patterns in reads.items():
        plan = _generic_plan(
            pg_trigram._index_query(match),
            [*names, "p_n"],
            [*types, "integer"],
            f"{patterns}, {channel}, 1, 100000, 100",
            {**settings, **pg_trigram.INDEX},
        )
        assert "Bitmap Index Scan on search_pg_trigram" in plan, (match, plan)
        assert "Bitmap Index Scan on search_pg_tool_trigram" in plan, (match, plan)
        assert "Seq Scan" not in plan and "pkey" not in plan, (match, plan)


def test_the_trigram_functions_the_migrations_made_are_the_ones_the_code_makes(db):
    """A change to search.pg_trigram's functions needs a migration that makes them again: this
    fails until it has one."""
    from search import pg_trigram

    names = [pg_trigram.FIRST, pg_trigram.FIRST_PAGE, pg_trigram.INDEX_READ, pg_trigram.PROBE]
    names.append(pg_trigram.HEAD_OR_FIRST)

    def made() -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT proname, pg_get_function_arguments(oid), pg_get_function_result(oid),"
                " prosrc, proconfig FROM pg_proc WHERE proname = ANY(%s) ORDER BY proname",
                [names],
            )
            return cursor.fetchall()

    before = made()
    assert [name for name, *_ in before] == sorted(names)
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in pg_trigram.create_statements():
            cursor.execute(statement)
        assert made() == before
        transaction.set_rollback(True)


def test_a_fragment_in_a_history_shorter_than_the_probe_is_found_by_the_probe_alone(db):
    """The smallest histories: none, one row, two. The probe then covers every row, so the first
    step's call reads no index, and finds each match or says there is none."""
    from search.backends import postgres
    from search.filters import Filters
    from search.query import parse

    channel = create_channel("trigram-tiny")[0]
    session = services.open_session(channel, model="gpt-4o").session
    route = next(r for r in parse("数据库dense").routes if r.index == "trigram")
    filters = Filters(channel_id=channel.pk, rank_window=100).resolved()
    with transaction.atomic():
        assert postgres.run_fts(route, filters, 20, 0)[0] == []  # no rows at all
    said = []
    for text in ("the 数据库dense cache", "nothing here"):
        said += services.append_messages(
            session, [{"role": "user", "content": text}], run_hooks=False
        ).messages
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            page, capped, count, _ = postgres.run_fts(route, filters, 20, 0)
        assert ([pk for pk, _ in page], capped, count) == ([said[0].pk], False, 1)
        assert len(_walks(queries)) == 1  # the first step's one call, nothing more
    with transaction.atomic():  # a fragment no row has
        assert (
            postgres.run_fts(
                next(r for r in parse("数据库absent").routes if r.index == "trigram"),
                filters,
                20,
                0,
            )[0]
            == []
        )
