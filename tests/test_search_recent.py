"""The recent twins of the SQLite FTS5 indexes: the triggers keep them equal to the messages above
their floor, the worker's trim raises the floor, and ranking uses them only when every candidate
is in them -- including when a trim races the query."""

from __future__ import annotations

import io

import pytest
from django.db import connection, transaction

from search import fts
from search.query import parse
from search.service import Filters, search
from search.tasks import trim_recent_index
from sessions_app import services
from sessions_app.models import Message, Session


@pytest.fixture
def sqlite_only(db):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite FTS5 only; PostgreSQL ranks with its own indexes")


@pytest.fixture
def keep(sqlite_only, hermes_config):
    """Keep only the newest 20 messages in the recent indexes."""
    hermes_config(search={"recent_rows": 20})
    return 20


def _append(session: Session, texts: list[str]) -> list[Message]:
    rows = [{"role": "user", "content": t} for t in texts]
    return services.append_messages(session, rows).messages


def _floor() -> int:
    with connection.cursor() as cursor:
        return fts.floor(cursor)


def _assert_in_step() -> None:
    with connection.cursor() as cursor:
        assert fts.count_mismatches(cursor) == {}
        fts.integrity_check(cursor)


def _bm25(t: str, expression: str) -> dict[int, float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH %s", [expression])
        return {rowid: score for rowid, score in cursor.fetchall()}


@pytest.fixture
def session(sqlite_only, gateway) -> Session:
    return Session.objects.get(pk=gateway.open()["id"])


def test_the_trim_keeps_only_the_newest_messages_in_the_recent_indexes(session, keep):
    rows = _append(session, [f"kiwi number {n}" for n in range(50)])
    top = Message.objects.order_by("-pk").first().pk
    assert trim_recent_index() == top - keep
    assert _floor() == top - keep
    with connection.cursor() as cursor:
        assert set(fts.index_counts(cursor, recent=True).values()) == {keep}
    _assert_in_step()
    assert trim_recent_index() == 0  # nothing left to trim
    # The oldest rows are still found, through the full indexes.
    assert rows[0].pk in {h.message.pk for h in search("kiwi", limit=60).hits}


def test_the_trim_moves_in_small_steps_up_to_the_newest_rows(session):
    _append(session, [f"plum {n}" for n in range(30)])
    top = Message.objects.order_by("-pk").first().pk
    steps = []
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            step = fts.trim_step(cursor, keep=5, batch=7)
        if not step:
            break
        steps.append(step)
        _assert_in_step()
    assert max(steps) <= 7
    assert sum(steps) == top - 5 == _floor()


def test_archiving_rolling_back_and_editing_keep_both_twins_in_step(session, keep):
    rows = _append(session, [f"fig {n} orchard" for n in range(40)])
    trim_recent_index()
    floor = _floor()
    below = [m for m in rows if m.pk <= floor]
    above = [m for m in rows if m.pk > floor]
    assert below and above
    # Archive across the floor (one bulk UPDATE, as compression does).
    Message.objects.filter(pk__in=[below[0].pk, above[0].pk]).update(
        active=False, compressed=True, archive_reason="compression"
    )
    # Edit rows on both sides.
    for m in (below[1], above[1]):
        Message.objects.filter(pk=m.pk).update(content=f"rewritten quince {m.pk}")
    _assert_in_step()
    # Roll back the newest rows (above the floor) and delete one below it.
    services.rollback_messages(session, 2)
    Message.objects.filter(pk=below[2].pk).delete()
    _assert_in_step()
    assert {h.message.pk for h in search("quince").hits} == {below[1].pk, above[1].pk}
    found = {h.message.pk for h in search("orchard", limit=60).hits}
    assert below[0].pk in found and above[0].pk in found  # archived rows stay findable
    assert rows[-1].pk not in found and rows[-2].pk not in found  # rolled back
    assert below[2].pk not in found  # deleted


def test_a_query_whose_candidates_are_all_recent_is_ranked_by_the_recent_index(session, keep):
    # Lengths differ so BM25 has something to order; old matches sit below the floor.
    _append(session, [f"melon {'pad ' * (n % 7)}old {n}" for n in range(30)])
    _append(session, [f"melon {'pad ' * (n % 5)}new {n}" for n in range(15)])
    trim_recent_index()
    expression = parse("melon").routes[0].expression
    recent = _bm25(fts.table("words", recent=True), expression)
    full = _bm25(fts.table("words"), expression)
    capped = search("melon", Filters(rank_window=10), limit=10)
    assert capped.ranked_within == 10
    assert [h.score for h in capped.hits] == sorted(recent[h.message.pk] for h in capped.hits)
    assert {h.message.pk: h.score for h in capped.hits}.items() <= recent.items()
    # Reaching below the floor, the full index ranks every candidate with its own statistics.
    everything = search("melon", limit=100)
    assert everything.ranked_within is None and len(everything.hits) == 45
    assert {h.message.pk: h.score for h in everything.hits} == full


def test_a_trim_racing_a_query_hands_the_ranking_to_the_full_index(session, keep):
    _append(session, [f"lime {'pad ' * (n % 4)}{n}" for n in range(30)])
    trim_recent_index()
    expression = parse("lime").routes[0].expression
    full = _bm25(fts.table("words"), expression)
    ranked_in = []

    def trim_first(execute, sql, params, many, context):
        # The worker's trim commits between the query's two phases: the floor passes every
        # candidate before the recent index is asked.
        if "bm25(search_fts_words_recent)" in sql:
            ranked_in.append("recent")
            with connection.cursor() as cursor:
                cursor.execute(f"UPDATE {fts.FLOOR_TABLE} SET floor = 10000000")
        elif "bm25(search_fts_words)" in sql:
            ranked_in.append("full")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(trim_first):
        result = search("lime", Filters(rank_window=5), limit=5)
    assert ranked_in == ["recent", "full"]
    assert len(result.hits) == 5
    assert {h.message.pk: h.score for h in result.hits}.items() <= full.items()


def test_with_no_recent_rows_the_full_index_ranks_everything(session, hermes_config):
    hermes_config(search={"recent_rows": 0})
    _append(session, [f"pear {n}" for n in range(12)])
    trim_recent_index()
    assert _floor() == Message.objects.order_by("-pk").first().pk
    with connection.cursor() as cursor:
        assert set(fts.index_counts(cursor, recent=True).values()) == {0}
    full = _bm25(fts.table("words"), parse("pear").routes[0].expression)
    result = search("pear", limit=20)
    assert {h.message.pk: h.score for h in result.hits} == full
    _assert_in_step()


def test_reindex_sets_the_floor_from_the_configured_size(session, keep):
    from django.core.management import call_command

    _append(session, [f"grape {n}" for n in range(45)])
    with connection.cursor() as cursor:  # a stale floor, as after a configuration change
        cursor.execute(f"UPDATE {fts.FLOOR_TABLE} SET floor = 0")
    out = io.StringIO()
    call_command("reindex", stdout=out, stderr=io.StringIO())
    assert f"after id {_floor():,}" in out.getvalue()
    assert _floor() == Message.objects.order_by("-pk").first().pk - keep
    _assert_in_step()


def test_the_trim_is_scheduled_every_minute(db):
    from django_q.models import Schedule

    schedule = Schedule.objects.get(func="search.tasks.trim_recent_index")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 1, -1)


def test_on_postgresql_the_trim_has_nothing_to_do(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: runs in the PostgreSQL pass of ./bin/test")
    assert trim_recent_index() == 0
