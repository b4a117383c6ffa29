"""Erasure on request: the only deletion path. What goes, goes from the store and from every
search index; the audit entry keeps who, when, what scope and how many rows, never content."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from compression.engine.compress import compress
from compression.models import CompressionEvent
from hermes_import.models import ImportedSession
from search import fts
from search.filters import Filters
from search.query import parse
from search.service import _backend, _run, search
from sessions_app import services
from sessions_app.models import AuditEntry, Message, Session
from sessions_app.services import erase as erasure

ROOT = Path(__file__).resolve().parent.parent

# One unique word per place a person's words can hide.
PLANTED = {
    "english": "zorblaxian",
    "chinese": "鳕鱼蛋糕酱汁",
    "code": "frobnicate_widget_nine",
    "tool_arguments": "quuxplorer",
    "summary": "summaryzeptoword",
    "archived": "archivedmarmoset",
    "rolled_back": "rollbackwombat",
    "continuation": "continuedplatypus",
}
SURVIVOR = "survivingnarwhal"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def filler(n: int) -> list[dict]:
    return [
        {"role": "user", "content": f"Question {n} about the weather and the garden " * 30},
        {"role": "assistant", "content": f"Answer {n}: plant tomatoes in spring. " * 30},
    ]


@pytest.fixture
def chain(gateway, hermes_config):
    """A person's conversation of two links (a compression with in_place: false continued it),
    with every planted word somewhere in it, and another person's session that must stay."""
    hermes_config(compression={"in_place": False})
    opened = gateway.open(system_prompt="You are helpful.", external_id="chat-77", title="Alice")
    session = Session.objects.get(pk=opened["id"])
    messages = [
        *filler(0),
        *filler(1),
        {"role": "user", "content": f"My cat is called {PLANTED['archived']}, remember it."},
        {"role": "user", "content": f"I said {PLANTED['english']} yesterday."},
        {"role": "user", "content": f"我喜欢{PLANTED['chinese']}和茶"},
        {"role": "assistant", "content": f"Run `{PLANTED['code']}(x)` then."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "lookup",
                        "arguments": json.dumps({"query": PLANTED["tool_arguments"]}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "found nothing"},
    ]
    for n in range(2, 16):
        messages += filler(n)
    assert gateway.post(f"/sessions/{session.pk}/messages", {"messages": messages}).status_code
    result = compress(session)
    continuation = result.continued_in
    assert continuation is not None, [e.reason for e in result.events]
    assert continuation is not None and continuation.parent_id == session.pk
    summary = Message.objects.get(session=continuation, is_summary=True)
    Message.objects.filter(pk=summary.pk).update(
        content=f"{summary.content}\nThe user mentioned {PLANTED['summary']}."
    )
    gateway.post(
        f"/sessions/{continuation.pk}/messages",
        {
            "messages": [
                {"role": "user", "content": f"Forget {PLANTED['rolled_back']}."},
                {"role": "assistant", "content": "Done."},
            ]
        },
    )
    gateway.post(f"/sessions/{continuation.pk}/rollback", {"count": 2})
    gateway.post(
        f"/sessions/{continuation.pk}/messages",
        {"messages": [{"role": "user", "content": f"Also {PLANTED['continuation']}."}]},
    )
    ImportedSession.objects.create(
        store="home", hermes_id="h-1", session=session, conversation_root="h-1", fingerprint="x"
    )
    other = gateway.open(external_id="chat-88", title="Bob")
    gateway.post(
        f"/sessions/{other['id']}/messages",
        {"messages": [{"role": "user", "content": f"{SURVIVOR} likes tomatoes and tea"}]},
    )
    return session, continuation, Session.objects.get(pk=other["id"])


def hits_anywhere(word: str) -> dict[str, list[int]]:
    """Every route the query router has for ``word`` (words, bigram, trigram, scan), each run
    on its own, and the operators' rolled-back scan: ids found, per route."""
    filters = Filters(include_rolled_back=True).resolved()
    parsed = parse(word)
    found = {}
    for route in parsed.routes:
        found[route.index] = [pk for pk, _ in _run(route, filters, 50, 0).found]
    terms = tuple(t.text for t in parsed.terms)
    rolled = _backend().run_scan(terms, filters, 50, 0, rolled_back=True)
    found["rolled_back"] = [pk for pk, _ in rolled.hits]
    found["service"] = [h.message.pk for h in search(word, filters).hits]
    return found


def fts_rows(word: str, ids: list[int]) -> dict[str, int]:
    """SQLite: per FTS5 table, rows matching ``word`` (through the route for that index) and
    rows whose rowid is one of ``ids``."""
    out = {}
    routes = {r.index: r for r in parse(word).routes if r.index != "scan"}
    with connection.cursor() as cursor:
        for index, t, _ in fts.tables():
            n = 0
            if index in routes:
                cursor.execute(
                    f"SELECT count(*) FROM {t} WHERE {t} MATCH %s",  # noqa: S608 - a constant table
                    [routes[index].expression],
                )
                n += cursor.fetchone()[0]
            marks = ",".join(["%s"] * len(ids))
            cursor.execute(f"SELECT count(*) FROM {t} WHERE rowid IN ({marks})", ids)  # noqa: S608
            n += cursor.fetchone()[0]
            out[t] = n
    return out


def recent_twin_matches(word: str) -> int:
    """SQLite: rows of the recent twins that match ``word`` through its route for that index."""
    routes = {r.index: r for r in parse(word).routes if r.index != "scan"}
    n = 0
    with connection.cursor() as cursor:
        for index, t, recent in fts.tables():
            if recent and index in routes:
                cursor.execute(
                    f"SELECT count(*) FROM {t} WHERE {t} MATCH %s",  # noqa: S608 - a constant table
                    [routes[index].expression],
                )
                n += cursor.fetchone()[0]
    return n


def raw_index_bytes_hold(fragment: str) -> bool:
    """SQLite: whether any FTS5 table's stored segments still hold these bytes."""
    with connection.cursor() as cursor:
        for _, t, _ in fts.tables():
            cursor.execute(
                f"SELECT count(*) FROM {t}_data WHERE instr(block, %s) > 0",  # noqa: S608
                [fragment.encode()],
            )
            if cursor.fetchone()[0]:
                return True
    return False


def test_erasing_by_external_id_leaves_no_searchable_trace_in_any_index(gateway, chain):
    session, continuation, other = chain
    scope = [session.pk, continuation.pk]
    planted_ids = list(Message.objects.filter(session__in=scope).values_list("pk", flat=True))
    # Each word is found before (the rolled-back one by the operators' scan only).
    for name, word in PLANTED.items():
        before = hits_anywhere(word)
        assert any(before.values()), (name, before)
    sqlite = connection.vendor == "sqlite"
    if sqlite:
        assert raw_index_bytes_hold(PLANTED["english"][3:])
        # The recent twins hold them too, so that their check below is not vacuous (a row
        # rolled back is in no index; the operators' scan found it above).
        for name, word in PLANTED.items():
            if name != "rolled_back":
                assert recent_twin_matches(word) > 0, name

    output = run("erase", "--external-id", "chat-77", "--channel", "telegram", "--yes")

    assert "2 session(s)" in output and "Erased 2 sessions" in output
    assert not Session.objects.filter(pk__in=scope).exists()
    assert not Message.objects.filter(pk__in=planted_ids).exists()
    assert not CompressionEvent.objects.filter(session__in=scope).exists()
    assert not ImportedSession.objects.exists()
    for name, word in PLANTED.items():
        found = hits_anywhere(word)
        assert not any(found.values()), (name, found)
        api = gateway.get("/search", q=word).json()
        assert api["hits"] == [] and api["total"] == 0, name
    if sqlite:
        for word in PLANTED.values():
            assert set(fts_rows(word, planted_ids).values()) == {0}, word
        with connection.cursor() as cursor:
            fts.integrity_check(cursor)
            assert fts.count_mismatches(cursor) == {}
        # The deleted terms are gone from the stored segments too, not only cancelled.
        assert not raw_index_bytes_hold(PLANTED["english"][3:])
        assert not raw_index_bytes_hold(PLANTED["tool_arguments"][3:])
    # The other person's session is untouched and still found.
    assert [h.message.session_id for h in search(SURVIVOR).hits] == [other.pk]
    assert Message.objects.filter(session=other).count() == other.total_messages


def test_the_audit_entry_says_who_what_and_how_many_never_the_content(chain):
    session, continuation, _ = chain
    counts = {
        kind: Message.objects.filter(session__in=[session, continuation]).of_kind(kind).count()
        for kind in Message.Kind.values
    }
    events = CompressionEvent.objects.filter(session__in=[session, continuation]).count()
    run("erase", "--external-id", "chat-77", "--channel", "telegram", "--yes")
    entry = AuditEntry.objects.get(action="erase")
    assert entry.status == "done" and entry.finished_at is not None
    assert entry.actor.startswith("os:")
    assert entry.details["deleted"]["messages"] == counts
    assert entry.details["deleted"]["sessions"] == 2
    assert entry.details["deleted"]["compression events"] == events
    assert entry.details["deleted"]["imported sessions"] == 1
    assert entry.details["planned"]["messages"] == counts
    assert sorted(entry.details["sessions"]) == sorted([str(session.pk), str(continuation.pk)])
    stored = json.dumps(entry.details) + entry.target
    for secret in [*PLANTED.values(), "chat-77", "Alice", "weather"]:
        assert secret not in stored


def test_erasing_a_session_takes_its_continuations_and_says_so(chain):
    session, continuation, other = chain
    output = run("erase", "--session", str(session.pk), "--yes")
    assert f"continuation of {session.pk}" in output
    assert "Continuations are included" in output
    assert "channel telegram" in output and "“Alice”" in output
    assert not Session.objects.filter(pk__in=[session.pk, continuation.pk]).exists()
    assert Session.objects.filter(pk=other.pk).exists()


def test_erasing_only_the_continuation_keeps_the_earlier_link(chain):
    session, continuation, _ = chain
    run("erase", "--session", str(continuation.pk), "--yes")
    assert Session.objects.filter(pk=session.pk).exists()
    assert not Session.objects.filter(pk=continuation.pk).exists()
    assert not hits_anywhere(PLANTED["continuation"])["service"]
    assert hits_anywhere(PLANTED["archived"])["service"]  # it lives on in the parent


@pytest.mark.parametrize(
    "args",
    [
        ["--session", str(uuid.UUID(int=7))],
        ["--session", "not-a-uuid"],
        ["--external-id", "nobody", "--channel", "telegram"],
        ["--external-id", "chat-77", "--channel", "no-such-channel"],
    ],
)
def test_erase_with_no_matching_session_says_so_and_deletes_nothing(chain, args):
    before = (Session.objects.count(), Message.objects.count())
    with pytest.raises(CommandError, match="Nothing was deleted"):
        run("erase", *args, "--yes")
    assert (Session.objects.count(), Message.objects.count()) == before
    assert not AuditEntry.objects.filter(action="erase").exists()


def test_erase_refuses_while_the_index_delete_trigger_is_missing(chain):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL's indexes are over the table, with no trigger")
    session, _, _ = chain
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER search_fts_ad")
    with pytest.raises(CommandError, match="triggers are missing"):
        run("erase", "--session", str(session.pk), "--yes")
    assert Session.objects.filter(pk=session.pk).exists()
    assert not AuditEntry.objects.filter(action="erase").exists()


def test_erase_refuses_without_confirmation_when_it_cannot_ask(chain):
    session, _, _ = chain
    with pytest.raises(CommandError, match="--yes"):
        run("erase", "--session", str(session.pk))
    assert Session.objects.filter(pk=session.pk).exists()


@pytest.mark.slow
def test_erase_from_the_shell_exits_non_zero_with_a_clear_message(tmp_path):
    config = tmp_path / "hermes.yaml"
    config.write_text(f"server:\n  data_dir: {tmp_path}\n")
    env = {"HERMES_CONFIG": str(config), "PATH": "/usr/bin:/bin"}

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    assert manage("migrate", "-v0").returncode == 0
    done = manage("erase", "--session", str(uuid.UUID(int=1)), "--yes")
    assert done.returncode == 1
    assert "nothing to erase" in done.stderr and "Nothing was deleted" in done.stderr
    assert "Traceback" not in done.stderr
    bare = manage("erase")
    assert bare.returncode == 1 and "Say what to erase" in bare.stderr


def test_an_interrupted_erasure_is_recorded_as_running_and_resume_finishes_it(chain, monkeypatch):
    session, continuation, _ = chain
    total = Message.objects.filter(session__in=[session, continuation]).count()
    real = erasure._delete_batch
    calls = {"n": 0}

    def crash_on_third(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # the process dies between two batches
        return real(*args, **kwargs)

    monkeypatch.setattr(erasure, "_delete_batch", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        run("erase", "--session", str(session.pk), "--yes", "--batch", "5")
    entry = AuditEntry.objects.get(action="erase")
    assert entry.status == "running"
    assert sum(entry.details["deleted"]["messages"].values()) == 10  # two batches of five
    assert Message.objects.filter(session__in=[session, continuation]).count() == total - 10
    # Another erasure over the same sessions is refused until this one is finished.
    with pytest.raises(CommandError, match="--resume"):
        run("erase", "--session", str(session.pk), "--yes")
    monkeypatch.setattr(erasure, "_delete_batch", real)
    output = run("erase", "--resume")
    assert "Resuming" in output
    entry.refresh_from_db()
    assert entry.status == "done"
    assert sum(entry.details["deleted"]["messages"].values()) == total
    assert not Session.objects.filter(pk__in=[session.pk, continuation.pk]).exists()
    assert run("erase", "--resume").strip() == "No unfinished erasure."


@pytest.mark.slow
def test_a_large_session_is_erased_in_short_transactions(gateway):
    sid = gateway.open()["id"]
    session = Session.objects.get(pk=sid)
    rows = [{"role": "user", "content": f"line {n} of a long talk"} for n in range(5_000)]
    for start in range(0, len(rows), 1_000):
        services.append_messages(session, rows[start : start + 1_000], run_hooks=False)
    plan = erasure.plan_sessions([sid])
    batches = []
    last = [time.perf_counter()]

    def progress(n: int) -> None:
        now = time.perf_counter()
        batches.append((n, now - last[0]))
        last[0] = now

    entry = erasure.erase(plan, "test", batch=500, progress=progress)
    assert sum(n for n, _ in batches) == 5_000 and len(batches) == 10
    assert max(seconds for _, seconds in batches) < 2.0, batches
    assert entry.details["deleted"]["messages"]["live"] == 5_000
    assert not Message.objects.filter(session_id=sid).exists()


@pytest.fixture
def staff(db) -> Client:
    user = get_user_model().objects.create_superuser("op", "", "a-long-test-password")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.slow
def test_the_admin_erases_only_after_a_confirmation_that_names_what_goes(staff, chain):
    session, continuation, other = chain
    url = reverse("admin:sessions_app_session_changelist")
    page = staff.post(url, {"action": "erase_sessions", "_selected_action": [session.pk]})
    text = page.content.decode()
    assert page.status_code == 200
    for shown in ("telegram", str(session.pk), str(continuation.pk), "Alice", "Continuations"):
        assert shown in text, shown
    live = Message.objects.filter(session=continuation).of_kind("live").count()
    assert f"<td>{live}</td>" in text
    assert Session.objects.filter(pk=session.pk).exists()  # nothing yet
    done = staff.post(
        url,
        {"action": "erase_sessions", "_selected_action": [session.pk], "confirm": "yes"},
        follow=True,
    )
    assert "Erased 2 sessions" in done.content.decode()
    assert not Session.objects.filter(pk__in=[session.pk, continuation.pk]).exists()
    assert Session.objects.filter(pk=other.pk).exists()
    entry = AuditEntry.objects.get(action="erase")
    assert entry.actor == "admin:op" and entry.status == "done"


@pytest.mark.slow
def test_staff_without_the_delete_permission_cannot_erase(chain):
    from django.contrib.auth.models import Permission

    session, _, _ = chain
    user = get_user_model().objects.create_user("viewer", password="a-long-test-password")
    user.is_staff = True
    user.save()
    user.user_permissions.add(
        Permission.objects.get(codename="view_session", content_type__app_label="sessions_app"),
        Permission.objects.get(codename="change_session", content_type__app_label="sessions_app"),
    )
    client = Client()
    client.force_login(user)
    url = reverse("admin:sessions_app_session_changelist")
    assert "erase_sessions" not in client.get(url).content.decode()
    client.post(
        url, {"action": "erase_sessions", "_selected_action": [session.pk], "confirm": "yes"}
    )
    assert Session.objects.filter(pk=session.pk).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL only: SQLite keeps no word statistics"
)
def test_on_postgresql_an_erased_sessions_words_leave_the_statistics_and_the_common_words():
    """The planner's statistics list the table's most common words, and search.pg.COMMON is
    read from them: after an erasure both are made again without the erased rows."""
    from search import erase, pg
    from sessions_app.keys import create_channel

    channel = create_channel("erase-statistics")[0]
    session = services.open_session(channel, model="gpt-4o").session
    services.append_messages(
        session,
        [{"role": "user", "content": f"{PLANTED['english']} note {n}"} for n in range(40)],
        run_hooks=False,
    )
    # Someone else's, which stays (an empty table's ANALYZE keeps the statistics it had).
    services.append_messages(
        services.open_session(channel, model="gpt-4o").session,
        [{"role": "user", "content": f"{SURVIVOR} note {n}"} for n in range(40)],
        run_hooks=False,
    )

    def listed() -> tuple[bool, bool]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT %s = ANY(most_common_elems::text::text[]) FROM pg_stats "
                "WHERE tablename = 'sessions_app_message' AND attname = 'search_words'",
                [PLANTED["english"]],
            )
            row = cursor.fetchone()
            cursor.execute(
                f"SELECT count(*) > 0 FROM {pg.COMMON} WHERE lexeme = %s",  # noqa: S608
                [PLANTED["english"]],
            )
            return bool(row and row[0]), cursor.fetchone()[0]

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_message")
        pg.refresh_common(cursor)
    assert listed() == (True, True)
    Message.objects.filter(session=session).delete()
    erase.after()
    assert listed() == (False, False)
