"""Storage upkeep: ``manage.py storage`` (sizes, rows by kind and channel), ``manage.py optimize``
(merged search indexes, fresh statistics, the hot plans unchanged) and retention (idle sessions
archived, never deleted: hidden from the default lists, still searchable, back on append)."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from core.config import ConfigError, parse_config
from sessions_app import services
from sessions_app.models import Message, Session
from tests.test_query_plans import _live_rows_query, _plan


def _command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _talk(gateway, turns: int, word: str = "hello", **fields) -> str:
    sid = gateway.open(**fields)["id"]
    for i in range(turns):
        response = gateway.post(
            f"/sessions/{sid}/messages",
            {"messages": [{"role": "user", "content": f"{word} number {i}"}]},
        )
        assert response.status_code == 201, response.content
    return sid


# --- storage ------------------------------------------------------------------------------------


def test_the_storage_report_counts_messages_by_kind_and_by_channel(make_gateway):
    telegram, discord = make_gateway("telegram"), make_gateway("discord")
    first = _talk(telegram, 6)
    _talk(telegram, 2)
    _talk(discord, 3)
    session = Session.objects.get(pk=first)
    services.rollback_messages(session, 2)
    services.reset_session(Session.objects.get(pk=first), keep_system_prompt=False)
    services.append_messages(Session.objects.get(pk=first), [{"role": "user", "content": "again"}])

    data = json.loads(_command("storage", "--json"))

    expected = {kind: Message.objects.of_kind(kind).count() for kind in Message.Kind.values}
    assert expected == {"live": 6, "summary": 0, "archived": 4, "rolled_back": 2, "notice": 0}
    assert data["messages"] == {"messages": 12, **expected}
    channels = {c["channel"]: c for c in data["channels"]}
    assert channels["telegram"] == {
        "channel": "telegram",
        "sessions": 2,
        "archived_sessions": 0,
        "messages": 9,
        "live": 3,
        "summary": 0,
        "archived": 4,
        "rolled_back": 2,
        "notice": 0,
    }
    assert channels["discord"]["messages"] == 3 and channels["discord"]["live"] == 3
    assert data["events"]["table"] == "compression_compressionevent"
    assert data["events"]["rows"] >= 0 and data["events"]["bytes"] > 0
    assert data["database"]["bytes"] > 0
    kinds = {(r["kind"], r["name"]) for r in data["relations"]}
    assert ("table", "sessions_app_message") in kinds
    assert ("index", "msg_live_rows") in kinds
    search_indexes = {name for kind, name in kinds if kind == "search index"}
    if connection.vendor == "sqlite":
        # The FTS5 shadow tables are grouped under the index (and recent twin) they make up.
        assert search_indexes == {
            f"search_fts_{n}{r}" for n in ("words", "bigram", "trigram") for r in ("", "_recent")
        }
        assert not any(name.endswith("_data") for _, name in kinds)
    else:
        assert len(search_indexes) == 4
    assert data["seconds"]["total"] >= data["seconds"]["rows"] >= 0


def test_the_storage_report_reads_as_text(make_gateway):
    _talk(make_gateway("telegram"), 3)
    text = _command("storage")
    assert "Messages: 3 — 3 live, 0 summary, 0 archived, 0 rolled back" in text
    assert "search index" in text
    assert "Compression events:" in text
    assert text.splitlines()[0].startswith("Database ")


# --- optimize -----------------------------------------------------------------------------------


def _segments(table: str) -> int:
    """Segments in an FTS5 index: its structure record (rowid 10 of the %_data shadow table) is
    a 4-byte cookie, then varints: levels, segments."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT block FROM {table}_data WHERE id = 10")  # noqa: S608
        block = bytes(cursor.fetchone()[0])
    values, value, shift = [], 0, 0
    for byte in block[4:]:
        value, shift = value | (byte & 0x7F) << shift, shift + 7
        if not byte & 0x80:
            values.append(value)
            value, shift = 0, 0
            if len(values) == 2:
                break
    # SQLite varints are big-endian 7-bit groups; small numbers (< 128) read the same.
    assert values[1] < 128
    return values[1]


def test_optimize_merges_every_search_index_into_one_segment_and_keeps_search_answering(
    gateway, settings
):
    if connection.vendor != "sqlite":
        pytest.skip("FTS5 segments are SQLite's; PostgreSQL is covered by the VACUUM test")
    _talk(gateway, 40, word="zebrafish")
    tables = ["search_fts_words", "search_fts_words_recent", "search_fts_trigram"]
    before = {t: _segments(t) for t in tables}
    assert all(n > 1 for n in before.values()), before  # one segment per append's transaction

    out = _command("optimize", "--no-progress")

    assert {t: _segments(t) for t in tables} == dict.fromkeys(tables, 1)
    for step in ("merge search_fts_words", "merge search_fts_trigram_recent", "ANALYZE"):
        assert step in out
    assert "PRAGMA optimize" in out
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'sessions_app_message'")
        assert cursor.fetchone()[0] > 0  # ANALYZE ran
    hits = gateway.get("/search", q="zebrafish", limit=50).json()["hits"]
    assert len(hits) == 40


def test_after_optimize_the_live_context_still_reads_its_own_index(gateway):
    """ANALYZE gives SQLite statistics it did not plan with before: the hot reads keep their
    plans (the ones tests/test_query_plans.py checks without statistics)."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL plans with statistics anyway (sessions_app/analyze.py)")
    sid = _talk(gateway, 60)
    services.reset_session(Session.objects.get(pk=sid))
    _talk(gateway, 5)
    call_command("optimize", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    plan = _plan(_live_rows_query(Session.objects.get(pk=sid)))
    assert "msg_live_rows" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_optimize_vacuums_and_analyzes_every_table_on_postgresql(make_gateway):
    if connection.vendor != "postgresql":
        pytest.skip("VACUUM ANALYZE is PostgreSQL's")
    _talk(make_gateway("telegram"), 3)
    out = _command("optimize", "--no-progress")
    assert "VACUUM ANALYZE sessions_app_message" in out
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE last_vacuum IS NULL "
            "OR last_analyze IS NULL"
        )
        assert cursor.fetchall() == []


# --- retention ----------------------------------------------------------------------------------


def _idle(sid: str, days: int) -> None:
    Session.objects.filter(pk=sid).update(last_activity_at=timezone.now() - timedelta(days=days))


@pytest.fixture
def idle_store(make_gateway, hermes_config):
    """Sessions idle for various ages on three channels; retention of 30 days, 7 on discord,
    off on tui."""
    hermes_config(retention={"archive_idle_days": 30, "channels": {"discord": 7, "tui": 0}})
    telegram, discord, tui = (make_gateway(n) for n in ("telegram", "discord", "tui"))
    sids = {
        "telegram old": _talk(
            telegram, 3, word="pterodactyl", title="telegram old", external_id="old-chat"
        ),
        "telegram recent": _talk(telegram, 2, title="telegram recent"),
        "discord": _talk(discord, 2, title="discord week"),
        "tui": _talk(tui, 2, title="tui ancient"),
    }
    _idle(sids["telegram old"], 40)
    _idle(sids["telegram recent"], 10)
    _idle(sids["discord"], 10)
    _idle(sids["tui"], 400)
    return {"telegram": telegram, "discord": discord, "tui": tui}, sids


def _archived() -> set[str]:
    return {
        str(pk)
        for pk in Session.objects.filter(archived_at__isnull=False).values_list("pk", flat=True)
    }


def test_idle_sessions_are_archived_per_channel_and_nothing_is_deleted(idle_store):
    _, sids = idle_store
    messages = Message.objects.count()

    dry = _command("archive_idle", "--dry-run")
    assert _archived() == set()
    assert "telegram: would archive 1 session idle for more than 30 days" in dry
    assert "discord: would archive 1 session idle for more than 7 days" in dry
    assert "tui" not in dry  # off for that channel

    done = _command("archive_idle")
    assert _archived() == {sids["telegram old"], sids["discord"]}
    assert "In all: archived 2 sessions." in done
    assert Message.objects.count() == messages
    assert Session.objects.count() == 4
    again = _command("archive_idle")
    assert "In all: archived 0 sessions." in again  # already archived: not counted twice


def test_an_archived_session_is_left_out_of_the_session_list_unless_asked_for(idle_store):
    gateways, sids = idle_store
    _command("archive_idle")
    telegram = gateways["telegram"]

    def listed(**params) -> list[str]:
        response = telegram.get("/sessions", **params)
        assert response.status_code == 200, response.content
        return [s["id"] for s in response.json()]

    assert listed() == [sids["telegram recent"]]
    assert listed(archived="true") == [sids["telegram old"]]
    assert set(listed(archived="all")) == {sids["telegram old"], sids["telegram recent"]}
    # A lookup by external id finds the session, archived or not.
    assert listed(external_id="old-chat") == [sids["telegram old"]]
    old = telegram.get(f"/sessions/{sids['telegram old']}").json()
    assert old["archived_at"] is not None
    assert telegram.get("/sessions", archived="maybe").status_code == 422


def test_an_archived_session_stays_searchable(idle_store):
    gateways, sids = idle_store
    _command("archive_idle")
    hits = gateways["telegram"].get("/search", q="pterodactyl").json()["hits"]
    assert len(hits) == 3
    assert {h["session"]["id"] for h in hits} == {sids["telegram old"]}


def test_an_append_brings_an_archived_session_back(idle_store):
    gateways, sids = idle_store
    _command("archive_idle")
    telegram, sid = gateways["telegram"], sids["telegram old"]
    response = telegram.post(
        f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "I am back"}]}
    )
    assert response.status_code == 201
    assert response.json()["session"]["archived_at"] is None
    assert Session.objects.get(pk=sid).archived_at is None
    assert sid in [s["id"] for s in telegram.get("/sessions").json()]


def test_the_admin_lists_live_sessions_unless_archived_ones_are_asked_for(idle_store, admin_client):
    _command("archive_idle")
    page = admin_client.get("/admin/sessions_app/session/").content.decode()
    assert "telegram recent" in page and "tui ancient" in page
    assert "telegram old" not in page and "discord week" not in page
    archived = admin_client.get("/admin/sessions_app/session/?archived=yes").content.decode()
    assert "telegram old" in archived and "discord week" in archived
    assert "telegram recent" not in archived
    everything = admin_client.get("/admin/sessions_app/session/?archived=all").content.decode()
    assert all(t in everything for t in ("telegram old", "telegram recent", "tui ancient"))


def test_retention_is_off_by_default_and_says_how_to_turn_it_on(make_gateway):
    sid = _talk(make_gateway("telegram"), 1)
    _idle(sid, 5000)
    out = _command("archive_idle")
    assert "Retention is off" in out
    assert _archived() == set()


def test_the_daily_archive_task_is_scheduled_and_archives(idle_store):
    from django_q.models import Schedule

    from sessions_app.upkeep.retention import archive_idle_task

    schedule = Schedule.objects.get(func="sessions_app.upkeep.retention.archive_idle_task")
    assert schedule.schedule_type == Schedule.DAILY
    assert archive_idle_task() == {"discord": 1, "telegram": 1}


def test_a_negative_retention_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"retention\.channels\.telegram"):
        parse_config({"retention": {"channels": {"telegram": -1}}})
    with pytest.raises(ConfigError, match=r"retention\.archive_idle_days"):
        parse_config({"retention": {"archive_idle_days": "soon"}})
