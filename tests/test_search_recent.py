"""The recent twins of the SQLite FTS5 indexes: the triggers keep them equal to the messages above
their floor, the worker's trim raises the floor, and ranking uses them only when every candidate
is in them -- including when a trim races the query."""

from __future__ import annotations

import importlib
import io
import logging
import pydoc
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, transaction

from core.config import ConfigError, parse_config
from search import fts
from search.apps import _ensure_indexes as _after_migrate
from search.query import parse
from search.service import Filters, search
from search.tasks import trim, trim_recent_index
from sessions_app import services
from sessions_app.models import Message, Session

KEEP = 10_000  # the smallest allowed; the tests' sessions are far smaller, so they set the floor


@pytest.fixture
def sqlite_only(db):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite FTS5 only; PostgreSQL ranks with its own indexes")


@pytest.fixture
def session(sqlite_only, gateway, hermes_config) -> Session:
    # These tests are about ranking within the newest window, in the recent twins: a query that
    # fills its window is not handed to its best rows (search.ranked, tests/test_ranked.py).
    hermes_config(search={"rank_queries": 0})
    return Session.objects.get(pk=gateway.open()["id"])


def _append(session: Session, texts: list[str]) -> list[Message]:
    rows = [{"role": "user", "content": t} for t in texts]
    return services.append_messages(session, rows).messages


def _top() -> int:
    return Message.objects.order_by("-pk").first().pk


def _floor() -> int | None:
    with connection.cursor() as cursor:
        return fts.floor(cursor)


def _set_floor(value: int | None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {fts.STATE_TABLE} SET floor = %s", [value])


def _trim(keep: int) -> int:
    """The worker's trim down to the newest ``keep`` ids (below the configurable minimum)."""
    return trim(keep)


def _matches(t: str, term: str, above: int = 0) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT rowid FROM {t} WHERE {t} MATCH %s AND rowid > %s", [f'"{term}"', above]
        )
        return {row[0] for row in cursor.fetchall()}


def _assert_in_step(*terms: str) -> None:
    """Counts and structure, then content: each term matches the same rows in every twin as in
    its full index above the floor (a delete with the wrong text would leave stray tokens)."""
    with connection.cursor() as cursor:
        assert fts.count_mismatches(cursor) == {}
        fts.integrity_check(cursor)
    low = _floor()
    for index in fts.INDEXES:
        for term in terms:
            expected = set() if low is None else _matches(fts.table(index), term, low)
            assert _matches(fts.table(index, recent=True), term) == expected, (index, term)


def _bm25(t: str, expression: str) -> dict[int, float]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH %s", [expression])
        return {rowid: score for rowid, score in cursor.fetchall()}


def _scores(result) -> dict[int, float]:
    return {h.message.pk: h.score for h in result.hits}


def test_the_trim_keeps_only_the_newest_messages_in_the_recent_indexes(session, hermes_config):
    rows = _append(session, [f"kiwi number {n}" for n in range(50)])
    assert _floor() == 0  # a young database: the twins hold everything
    _set_floor(0)
    assert _trim(20) == _top() - 20 == _floor()
    with connection.cursor() as cursor:
        assert set(fts.index_counts(cursor, recent=True).values()) == {20}
    _assert_in_step("kiwi", "number", "49", "3")
    assert _trim(20) == 0  # nothing left to trim
    # The oldest rows are still found, through the full indexes.
    assert rows[0].pk in {h.message.pk for h in search("kiwi", limit=60).hits}


def test_the_scheduled_task_trims_to_the_configured_size(session, hermes_config):
    hermes_config(search={"recent_rows": KEEP})
    _append(session, [f"apricot {n}" for n in range(30)])
    _set_floor(0)
    assert trim_recent_index() == max(0, _top() - KEEP) == _floor()
    _assert_in_step("apricot")


def test_the_trim_moves_in_small_steps_up_to_the_newest_rows(session):
    _append(session, [f"plum {n}" for n in range(30)])
    steps = []
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            step = fts.trim_step(cursor, keep=5, batch=7)
        if not step:
            break
        steps.append(step)
        _assert_in_step("plum")
    assert max(steps) <= 7
    assert sum(steps) == _top() - 5 == _floor()


def test_archiving_rolling_back_and_editing_keep_both_twins_in_step(session):
    rows = _append(session, [f"fig {n} orchard" for n in range(40)])
    _trim(25)
    floor = _floor()
    below = [m for m in rows if m.pk <= floor]
    above = [m for m in rows if m.pk > floor]
    assert below and len(above) > 10
    # Archive across the floor (one bulk UPDATE, as compression does).
    Message.objects.filter(pk__in=[below[0].pk, above[0].pk, above[5].pk]).update(
        active=False, compressed=True, archive_reason="compression"
    )
    # Edit rows on both sides.
    for m in (below[1], above[1], above[6]):
        Message.objects.filter(pk=m.pk).update(content=f"rewritten quince {m.pk}")
    _assert_in_step("fig", "orchard", "quince", "rewritten")
    # Roll back the newest rows (above the floor) and delete one below it.
    services.rollback_messages(session, 2)
    Message.objects.filter(pk=below[2].pk).delete()
    _assert_in_step("fig", "orchard", "quince")
    # The edited and archived rows age out of the twins: the trim deletes what the triggers put.
    _trim(10)
    assert _floor() > above[6].pk
    _assert_in_step("fig", "orchard", "quince", "rewritten")
    found_quince = {h.message.pk for h in search("quince").hits}
    assert found_quince == {below[1].pk, above[1].pk, above[6].pk}
    found = {h.message.pk for h in search("orchard", limit=60).hits}
    assert {below[0].pk, above[0].pk, above[5].pk} <= found  # archived rows stay findable
    assert rows[-1].pk not in found and rows[-2].pk not in found  # rolled back
    assert below[2].pk not in found  # deleted


def test_a_row_written_with_an_id_below_the_floor_goes_to_the_full_indexes_only(session):
    rows = _append(session, [f"cherry {n}" for n in range(20)])
    _trim(5)
    victim = rows[3]
    Message.objects.filter(pk=victim.pk).delete()
    victim.content = "cherry restored damson"
    victim.save(force_insert=True)  # the same id, below the floor
    _assert_in_step("cherry", "damson")
    assert [h.message.pk for h in search("damson").hits] == [victim.pk]


def test_a_query_whose_candidates_are_all_recent_is_ranked_by_the_recent_index(session):
    # Lengths differ so BM25 has something to order; old matches sit below the floor.
    _append(session, [f"melon {'pad ' * (n % 7)}old {n}" for n in range(30)])
    _append(session, [f"melon {'pad ' * (n % 5)}new {n} tail" for n in range(15)])
    _trim(15)
    expression = parse("melon").routes[0].expression
    recent = _bm25(fts.table("words", recent=True), expression)
    full = _bm25(fts.table("words"), expression)
    capped = search("melon", Filters(rank_window=10), limit=10)
    assert capped.ranked_within == 10
    assert [h.score for h in capped.hits] == sorted(recent[h.message.pk] for h in capped.hits)
    assert _scores(capped).items() <= recent.items()
    assert all(full[pk] != score for pk, score in _scores(capped).items())  # other statistics
    # Reaching below the floor, the full index ranks every candidate with its own statistics.
    everything = search("melon", limit=100)
    assert everything.ranked_within is None and len(everything.hits) == 45
    assert _scores(everything) == full


def _ranked_in(call) -> list[str]:
    """The FTS5 tables ``call`` ranks in, in order."""
    ranked_in = []

    def record(execute, sql, params, many, context):
        if "bm25(" in sql:
            ranked_in.append(sql.split("bm25(")[1].split(")")[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        call()
    return ranked_in


def test_a_window_reaching_below_the_floor_is_ranked_in_the_full_index_alone(session):
    rows = _append(session, [f"grape {'pad ' * (n % 4)}{n}" for n in range(30)])
    _trim(20)
    full = _bm25(fts.table("words"), parse("grape").routes[0].expression)
    result = None

    def query() -> None:
        nonlocal result
        result = search("grape", Filters(rank_window=25), limit=5)

    # The window's oldest candidate is older than the floor: the recent index is not asked.
    assert _ranked_in(query) == ["search_fts_words"]
    assert result.ranked_within == 25
    assert _scores(result).items() <= full.items()
    assert {h.message.pk for h in result.hits} <= {m.pk for m in rows[-25:]}
    # With the floor turned off (recent_rows: 0), neither.
    _set_floor(None)
    assert _ranked_in(query) == ["search_fts_words"]


def test_pages_of_a_query_ranked_in_the_recent_index_neither_repeat_nor_skip(session):
    _append(session, [f"papaya {'pad ' * (n % 6)}{n}" for n in range(40)])
    _trim(30)
    filters = Filters(rank_window=20)
    whole = [h.message.pk for h in search("papaya", filters, limit=20).hits]
    pages = [search("papaya", filters, limit=5, offset=o) for o in (0, 5, 10, 15, 20)]
    assert [h.message.pk for page in pages[:4] for h in page.hits] == whole
    assert pages[3].has_more is False and pages[4].hits == []


def test_a_substring_query_with_a_short_term_is_ranked_in_the_recent_index(session):
    # "xorchardx" holds "orchard" only as a substring: the words index has no hit, the trigram
    # index answers "orchard" and LIKE checks "ab", in both phases.
    rows = _append(session, [f"xorchardx {'yabz' if n % 2 else 'none'} {n}" for n in range(30)])
    _trim(20)
    result = None

    def query() -> None:
        nonlocal result
        result = search("orchard ab", Filters(rank_window=5), limit=5)

    assert _ranked_in(query) == ["search_fts_trigram_recent"]
    assert result.index == "trigram" and result.ranked_within == 5
    newest_with_ab = [m.pk for m in rows if "yabz" in m.content][-5:]
    assert sorted(h.message.pk for h in result.hits) == newest_with_ab


def test_a_trim_racing_a_query_hands_the_ranking_to_the_full_index(session):
    _append(session, [f"lime {'pad ' * (n % 4)}{n}" for n in range(30)])
    _trim(20)
    expression = parse("lime").routes[0].expression
    full = _bm25(fts.table("words"), expression)
    ranked_in = []

    def trim_first(execute, sql, params, many, context):
        # The worker's trim commits between the query's two phases: the floor passes every
        # candidate before the recent index is asked.
        if "bm25(search_fts_words_recent)" in sql:
            ranked_in.append("recent")
            _set_floor(10_000_000)
        elif "bm25(search_fts_words)" in sql:
            ranked_in.append("full")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(trim_first):
        result = search("lime", Filters(rank_window=5), limit=5)
    assert ranked_in == ["recent", "full"]
    assert len(result.hits) == 5
    assert _scores(result).items() <= full.items()


def test_recent_rows_zero_turns_the_twins_off_and_back_on(session, hermes_config):
    hermes_config(search={"recent_rows": 0})
    _append(session, [f"pear {n}" for n in range(12)])
    assert trim_recent_index() == 0
    assert _floor() is None
    _append(session, [f"pear later {n}" for n in range(5)])  # the triggers leave the twins alone
    with connection.cursor() as cursor:
        assert set(fts.index_counts(cursor, recent=True).values()) == {0}
    _assert_in_step("pear", "later")
    full = _bm25(fts.table("words"), parse("pear").routes[0].expression)
    assert _scores(search("pear", limit=20)) == full
    out = io.StringIO()
    call_command("reindex", stdout=out, stderr=io.StringIO())
    assert "the recent twins are off" in out.getvalue() and _floor() is None
    hermes_config(search={"recent_rows": KEEP})
    trim_recent_index()
    assert _floor() == 0  # fewer messages than recent_rows: the twins hold them all again
    _assert_in_step("pear", "later")


def test_a_larger_recent_rows_waits_for_new_messages_before_trimming_again(session):
    _append(session, [f"guava {n}" for n in range(30)])
    _trim(10)
    floor = _floor()
    assert _trim(20) == 0 and _floor() == floor  # the twins never reach back below their floor
    _append(session, [f"guava more {n}" for n in range(15)])
    assert _trim(20) == _top() - 20 - floor
    _assert_in_step("guava", "more")


def test_a_stale_text_version_stops_the_trim_until_reindex(session, hermes_config, caplog):
    hermes_config(search={"recent_rows": KEEP})
    _append(session, [f"lychee {n}" for n in range(30)])
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {fts.STATE_TABLE} SET text_version = 0")
    with caplog.at_level(logging.ERROR, logger="search.tasks"):
        assert trim_recent_index() == 0
    assert "text version 0" in caplog.text and "manage.py reindex" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="search.apps"):
        _after_migrate(sender=None)  # what every migrate runs last
    assert "text version 0" in caplog.text and "manage.py reindex" in caplog.text
    with (
        pytest.raises(fts.StaleIndex, match="reindex"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        fts.trim_step(cursor, keep=5)
    call_command("reindex", stdout=io.StringIO(), stderr=io.StringIO())
    with connection.cursor() as cursor:
        assert fts.stale(cursor) is None
    _assert_in_step("lychee")


def test_reindex_sets_the_floor_from_the_configured_size(session, hermes_config):
    hermes_config(search={"recent_rows": KEEP})
    _append(session, [f"grape {n}" for n in range(45)])
    _set_floor(_top() - 3)  # a stale floor, as after a configuration change
    out = io.StringIO()
    call_command("reindex", stdout=out, stderr=io.StringIO())
    assert _floor() == max(0, _top() - KEEP)
    assert f"after id {_floor():,}" in out.getvalue()
    _assert_in_step("grape")


def test_the_migration_fills_the_twins_of_a_populated_database(session):
    _append(session, [f"mango {n}" for n in range(25)])
    with connection.cursor() as cursor:  # twins out of date, as before the migration
        for _, t, recent in fts.tables():
            if recent:
                cursor.execute(f"INSERT INTO {t}({t}) VALUES('delete-all')")
    migration = importlib.import_module("search.migrations.0004_recent_indexes")
    # Its forward step needs only the connection (SQLite's schema editor refuses to open inside
    # the test's transaction).
    migration.create(apps, SimpleNamespace(connection=connection))
    assert _floor() == 0
    _assert_in_step("mango")
    assert [h.message.pk for h in search("mango 7").hits]


def test_recent_rows_below_ten_thousand_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match=r"search\.recent_rows: .*at least 10000"):
        parse_config({"search": {"recent_rows": 500}})
    assert parse_config({"search": {"recent_rows": 0}}).search.recent_rows == 0


def test_the_trim_is_scheduled_every_minute(db):
    from django_q.models import Schedule

    schedule = Schedule.objects.get(func="search.tasks.trim_recent_index")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 1, -1)
    assert pydoc.locate(schedule.func) is trim_recent_index  # the worker imports it by this path


@pytest.mark.postgres
def test_on_postgresql_the_trim_has_nothing_to_do(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: runs in the PostgreSQL pass of ./bin/test")
    assert trim_recent_index() == 0
