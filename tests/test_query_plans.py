"""The hot reads of a session's live rows seek an index that holds only live rows, in the order
they are sent, so their cost does not grow with what the session has archived. The plans are
checked here (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL) so they cannot regress."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message
from sessions_app.selectors.context import live_rows
from sessions_app.services.messages import pending_tool_calls


@pytest.fixture
def session(db):
    channel = create_channel("plans")[0]
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(
        session,
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        run_hooks=False,
    )
    return session


def _plan(queryset) -> str:
    return _explain(*queryset.query.sql_with_params())


def _live_rows_query(session):
    return Message.objects.filter(session=session, active=True).order_by(
        "position", "-is_summary", "id"
    )


def test_the_live_context_reads_the_live_rows_index_without_sorting(session):
    assert [m.pk for m in live_rows(session)] == [m.pk for m in _live_rows_query(session)]
    plan = _plan(_live_rows_query(session))
    assert "msg_live_rows" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_finding_the_last_tool_call_reads_the_live_rows_index_backwards(session):
    query = (
        Message.objects.filter(session=session, active=True)
        .exclude(role=Message.Role.TOOL)
        .order_by("-position")
    )
    plan = _plan(query)
    if connection.vendor == "sqlite":
        assert "msg_live_rows" in plan, plan  # the composite index cannot seek a bare "active"
    else:
        # PostgreSQL seeks the live rows through either index ("active = true" in the composite
        # one's condition); which it takes depends on the row counts earlier tests' ANALYZE
        # left in pg_class (tests/test_search_pg_trigram.py before this file chose the other).
        seeks_live = any(
            "Index Cond" in line and "active = true" in line for line in plan.splitlines()
        )
        live_idx = "msg_live_idx" in plan and seeks_live
        assert "msg_live_rows" in plan or live_idx, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
    assert pending_tool_calls(session) == set()


def test_the_answered_calls_of_a_tool_turn_read_the_live_rows_index(session):
    _lengthen(session)
    # The rows after the session's last tool call: its tail, as pending_tool_calls asks.
    query = (
        Message.objects.filter(
            session=session, active=True, role=Message.Role.TOOL, position__gt=3000
        )
        .order_by()
        .values_list("tool_call_id", flat=True)
    )
    plan = _plan(query)
    assert "msg_live_rows" in plan and "sessions_app_session" not in plan, plan


@pytest.mark.postgres
def test_the_scan_walks_the_newest_rows_first_on_postgresql_even_without_statistics(session):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite's scan has no other plan to choose")
    from search import pg
    from search.filters import Filters
    from search.service import search

    with connection.cursor() as cursor:  # as after a restore, before any ANALYZE
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'sessions_app_message'::regclass")
    filters = Filters(channel_id=session.channel_id)
    chunks: list[str] = []

    def record(execute, sql, params, many, context):
        if sql.startswith(f"SELECT * FROM {pg.WALK_PLAN}(") and "m.id >= " in params[0]:  # noqa: S608
            chunks.append(params[0])  # the chunk's statement, as its function runs it
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        result = search("::", filters, window=0)
    assert result.tried[-1] == "scan" and chunks
    with connection.cursor() as cursor:  # explained by the function, under its settings
        cursor.execute(
            f"SELECT * FROM {pg.WALK_PLAN}(%s) AS t(line text)",  # noqa: S608 - our name
            ["EXPLAIN " + chunks[0]],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan Backward using sessions_app_message_pkey" in plan, plan
    assert "Sort" not in plan and "Bitmap" not in plan, plan


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_a_timeline_page_reads_the_main_flow_index_without_sorting(session, direction):
    rows = Message.objects.filter(session=session, summarized_by=None, position__gt=0)
    ordered = rows.order_by(
        *(["position", "id"] if direction == "forward" else ["-position", "-id"])
    )
    plan = _plan(ordered[:201])
    assert "msg_main_flow" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_a_page_of_originals_reads_the_originals_index_without_sorting(session):
    summary = Message.objects.filter(session=session).first()
    query = Message.objects.filter(summarized_by=summary, position__gt=0).order_by("position", "id")
    plan = _plan(query[:201])
    assert "msg_originals" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_counting_a_repeated_decision_seeks_the_sessions_newest_event(session):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's plan; PostgreSQL uses the same (session, -created_at) index")
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM compression_compressionevent WHERE session_id = %s"
            " ORDER BY created_at DESC, id DESC LIMIT 1",
            [session.pk.hex],
        )
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
    assert "SEARCH compression_compressionevent USING COVERING INDEX" in plan, plan
    assert "RIGHT PART OF ORDER BY" in plan or "TEMP B-TREE" not in plan, plan  # ties only


def _statements(call) -> list[tuple[str, list]]:
    """The statements ``call`` runs, with their parameters, as handed to the database."""
    seen: list[tuple[str, list]] = []

    def record(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        call()
    return seen


def _explain(sql: str, params) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        # A tiny test table is cheaper to scan, and its row counts are what earlier tests left
        # (ANALYZE writes them in place, outside the rolled-back transaction): ask whether the
        # indexes can serve the query and its order, not what a few rows would cost.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def _lengthen(session) -> None:
    """On PostgreSQL a few rows are read whole whatever the indexes: give the planner a long
    session to seek in (on a 100,000-row store the same plans are chosen with or without
    statistics). SQLite's plans do not depend on the table's size."""
    if connection.vendor != "postgresql":
        return
    Message.objects.bulk_create(
        Message(session=session, channel_id=session.channel_id, position=p, role="user")
        for p in range(100, 3100)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Message._meta.db_table}")


def test_the_windows_of_a_page_seek_each_hits_position_range(session):
    from search import results

    _lengthen(session)
    hits = list(Message.objects.filter(session=session).order_by("position"))[1:3]
    ((sql, params),) = _statements(lambda: results.windows(hits, 2, False))
    plan = _explain(sql, params)
    # Not just the session: that would read every row of it, however long, for a few
    # neighbours.
    if connection.vendor == "sqlite":
        assert "msg_live_idx (session_id=? AND active=? AND position>? AND position<?)" in plan
    else:
        assert "msg_live_idx" in plan, plan
        assert 'position" >= ' in plan.split("Index Cond:")[1].splitlines()[0], plan


def _page_function_plans(ids: list[int], around: list[int], slack: int) -> tuple[str, str]:
    """The plans PostgreSQL's page functions run (search.rows.PAGE_HITS, PAGE_NEARBY; EXPLAIN
    cannot see into a function): their statements prepared under the functions' settings, so
    planned generic, as a function's are."""
    from django.db import transaction

    from search import rows

    hits, nearby = rows.page_statements()
    plans = []
    with transaction.atomic(), connection.cursor() as cursor:
        for setting, value in rows.PAGE_PLAN.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [setting, value])
        for name, sql, types, values in (
            ("page_hits_plan", hits, ["bigint[]"], [ids]),
            ("page_nearby_plan", nearby, ["bigint[]", "integer"], [around, slack]),
        ):
            cursor.execute(f"PREPARE {name}({', '.join(types)}) AS {sql}")
            try:
                args = ", ".join(f"%s::{t}" for t in types)
                cursor.execute(f"EXPLAIN EXECUTE {name}({args})", values)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
            finally:
                cursor.execute(f"DEALLOCATE {name}")  # not undone by a rollback
        transaction.set_rollback(True)  # the settings with it
    return plans[0], plans[1]


def test_the_hits_of_a_page_are_read_by_their_keys(session):
    from search.rows import PAGE_HITS, read_hits

    _lengthen(session)
    ids = list(Message.objects.filter(session=session, position__lt=3).values_list("pk", flat=True))
    ((sql, params),) = _statements(lambda: read_hits(ids))
    if connection.vendor == "sqlite":
        plan = _explain(sql, params)
        assert "SCAN" not in plan and plan.count("SEARCH") == 3, plan
        assert "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)" in plan, plan
    else:
        assert sql == f"SELECT * FROM {PAGE_HITS}(%s::bigint[])" and params == [ids]  # noqa: S608
        plan, _ = _page_function_plans(ids, ids, 0)
        assert "sessions_app_message_pkey" in plan and "Seq Scan" not in plan, plan
        # Each hit's session and channel looked up by key, not a join over every session.
        assert "Hash" not in plan and "sessions_app_session_pkey" in plan, plan


def test_a_pages_hits_and_their_windows_rows_are_read_by_key_and_range_seeks(session):
    from search.rows import PAGE_HITS, PAGE_NEARBY, read_page

    _lengthen(session)
    ids = list(Message.objects.filter(session=session, position__lt=3).values_list("pk", flat=True))
    sent = _statements(lambda: read_page(ids, ids[:2], 3))
    if connection.vendor == "postgresql":  # one round trip, a function each
        ((sql, params),) = sent
        assert sql == (
            f"SELECT * FROM {PAGE_HITS}(%s::bigint[]); "  # noqa: S608 - our names
            f"SELECT * FROM {PAGE_NEARBY}(%s::bigint[], %s)"
        )
        assert params == [ids, ids[:2], 3]
        hits_plan, rows_plan = _page_function_plans(ids, ids[:2], 3)
        assert "sessions_app_message_pkey" in hits_plan and "Seq Scan" not in hits_plan
        assert "msg_live_idx" in rows_plan and "Seq Scan" not in rows_plan, rows_plan
        return
    (hits, hits_params), (rows, rows_params) = sent
    hits_plan, rows_plan = _explain(hits, hits_params), _explain(rows, rows_params)
    assert "SCAN" not in hits_plan + rows_plan, (hits_plan, rows_plan)
    assert "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)" in hits_plan, hits_plan
    assert "msg_live_idx (session_id=? AND active=? AND position>? AND position<?)" in rows_plan, (
        rows_plan
    )


def _fts_plans(call) -> list[str]:
    """The plans of the FTS5 statements ``call`` runs."""
    return [_explain(sql, params) for sql, params in _statements(call) if " MATCH " in sql]


def test_a_gateways_search_checks_each_matchs_channel_in_the_channel_index(session):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL's search reads the row, whose plan it chooses")
    from search.filters import Filters
    from search.service import search

    def gateway() -> None:
        assert [
            h.message.content for h in search("hello", Filters(channel_id=session.channel_id)).hits
        ] == ["hello"]

    plans = _fts_plans(gateway)
    assert plans and all("search_message_channel (channel_id=? AND rowid=?)" in p for p in plans)
    assert not any("SEARCH m USING INTEGER PRIMARY KEY" in p for p in plans), plans


def test_a_search_narrowed_past_the_channel_reads_the_message_row(session):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL's search reads the row, whose plan it chooses")
    from search.filters import Filters
    from search.service import search

    def narrowed() -> None:
        filters = Filters(channel_id=session.channel_id, role="assistant")
        assert [h.message.content for h in search("hello", filters).hits] == ["hello"]

    plans = _fts_plans(narrowed)
    assert plans and all("SEARCH m USING INTEGER PRIMARY KEY (rowid=?)" in p for p in plans), plans
