"""import_hermes on Hermes homes built in Hermes's own schema (hermes_import/testing/home.py):
every live context replays Hermes's active rows, every planted fact is found with its kind, and
a re-run adds only what Hermes wrote since."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from hermes_import.format import CONTENT_JSON_PREFIX, decode_content
from hermes_import.models import ImportedSession
from hermes_import.testing.home import VERSIONS, HermesHome
from search.filters import Filters
from search.service import search
from sessions_app.models import Message, Session
from sessions_app.selectors.context import live_context

pytestmark = pytest.mark.django_db(transaction=True)


def _import(path: Path, *args: str) -> str:
    out = StringIO()
    call_command("import_hermes", str(path), *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _chat(home: HermesHome, sid: str, turns: int, tag: str, start: int = 0) -> None:
    for i in range(start, start + turns):
        home.append(sid, "user", f"{tag} question {i}")
        home.append(sid, "assistant", f"{tag} answer {i}")


def _rich_home(root: Path, version: int) -> tuple[HermesHome, dict[str, str]]:
    """One of each thing Hermes writes, with a fact planted in each kind of row."""
    home = HermesHome(root, version)
    ids = {}
    # In-place compactions, the newest build (superseded tail originals) then an older one.
    s = home.session(title="Deploy")
    home.append(s, "user", "we deploy with factarchived kubectl")
    home.append(s, "assistant", "noted")
    _chat(home, s, 10, "deploy")
    home.append(s, "user", "the tail says facttail please")
    home.append(s, "assistant", "acknowledged")
    home.compact(s, head=2, tail=2, body="## Historical Task Snapshot\nfactsummary rollout")
    _chat(home, s, 4, "later")
    home.compact(s, head=2, tail=4, body="second factsecond", tail_count=False)
    home.append(s, "user", "please run the migration")
    home.append(
        s,
        "assistant",
        "",
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"cmd": "migrate"}'},
            }
        ],
    )
    home.append(
        s, "tool", "Applied 12 migrations facttool", tool_call_id="call_1", tool_name="terminal"
    )
    home.append(s, "assistant", "migrations applied")
    undone = home.append(s, "user", "factrolledback delete everything")
    home.append(s, "assistant", "deleting")
    home.rewind(s, undone)
    home.append(
        s,
        "user",
        [
            {"type": "text", "text": "what is in this factimage picture"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    )
    home.append(s, "assistant", "部署失败的原因是数据库迁移 factcjk")
    ids["inplace"] = s
    # A rotation chain of three links.
    r = home.session(title="Chain")
    _chat(home, r, 1, "chain")
    home.append(r, "user", "factchained in the middle of the first link")
    home.append(r, "assistant", "ok")
    _chat(home, r, 5, "chain", start=1)
    second = home.rotate(r, head=2, tail=2)
    _chat(home, second, 5, "second")
    third = home.rotate(second, head=2, tail=2)
    home.append(third, "user", "third link question")
    ids.update(chain_root=r, chain_second=second, chain_tip=third)
    # Separate children: a branch, a delegate, a reset.
    ids["branch"] = home.branch(s)
    d = home.session(parent=s, marker="_delegate_from", source="subagent")
    home.append(d, "user", "subtask")
    ids["delegate"] = d
    n = home.session(parent=third, marker="_reset_from")
    home.append(n, "user", "fresh start")
    ids["reset"] = n
    # A merged carrier: the head ends with a user message and the tail starts with assistant.
    m = home.session(title="Merged")
    home.append(m, "user", "first ask")
    home.append(m, "assistant", "first reply")
    home.append(m, "user", "second ask")
    for i in range(6):
        home.append(m, "assistant", f"step {i}")
        home.append(m, "user", f"go on {i}")
    home.append(m, "assistant", "factmerged the final step")
    home.append(m, "user", "thanks")
    rows = home.active_rows(m)
    assert rows[-2]["role"] == "assistant"
    home.compact(m, head=3, tail=2, body="merged summary")
    ids["merged"] = m
    home.set_guard(s, cooldown_until=4_102_444_800.0, fallback=2, ineffective=1)
    home.memories(["likes tea", "uses vim"], ["name: Ada"])
    return home, ids


def _hermes_context(db: Path, sid: str) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    out = []
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    if "system_prompt_hash" in columns:
        prompt = conn.execute(
            "SELECT COALESCE(p.prompt, s.system_prompt) FROM sessions s LEFT JOIN system_prompts"
            " p ON p.hash = s.system_prompt_hash WHERE s.id = ?",
            (sid,),
        ).fetchone()[0]
    else:
        prompt = conn.execute("SELECT system_prompt FROM sessions WHERE id = ?", (sid,)).fetchone()[
            0
        ]
    if prompt:
        out.append({"role": "system", "content": prompt})
    for row in conn.execute(
        "SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (sid,)
    ):
        text, parts = decode_content(row["content"])
        message = {"role": row["role"], "content": parts if parts is not None else text}
        if row["tool_calls"]:
            message["tool_calls"] = json.loads(row["tool_calls"])
        if row["tool_call_id"]:
            message["tool_call_id"] = row["tool_call_id"]
        out.append(message)
    conn.close()
    return out


def _session(hermes_id: str) -> Session:
    return ImportedSession.objects.get(hermes_id=hermes_id).session


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_every_live_context_is_the_system_prompt_then_hermes_active_rows(tmp_path, version):
    home, ids = _rich_home(tmp_path / "home", version)
    home.close()
    _import(tmp_path / "home")
    db = tmp_path / "home" / "state.db"
    for key in ("inplace", "chain_tip", "branch", "delegate", "reset", "merged"):
        session = _session(ids[key])
        assert session.external_id == ids[key]
        assert live_context(session) == _hermes_context(db, ids[key]), key
    assert Session.objects.count() == 6


@pytest.mark.slow
@pytest.mark.parametrize("version", [22, 31])
def test_every_planted_fact_is_found_with_its_kind(tmp_path, version):
    home, ids = _rich_home(tmp_path / "home", version)
    home.close()
    _import(tmp_path / "home")

    def kinds(word: str, key: str = "inplace", **filters) -> list[str]:
        scope = Filters(session_id=_session(ids[key]).pk, **filters)
        return sorted(hit.message.kind for hit in search(word, scope).hits)

    assert kinds("factarchived") == ["live"]  # the head: its live copy, once
    assert kinds("factsummary") == ["archived"]  # the first summary, replaced by the second
    assert kinds("factsecond") == ["summary"]
    assert kinds("facttail") == ["archived"]  # its copies were replaced in turn; shown once
    assert kinds("facttool") == ["live"]
    assert kinds("factimage") == ["live"]
    assert kinds("factcjk") == ["live"]
    assert kinds("数据库迁移") == ["live"]
    assert kinds("factrolledback") == []
    assert kinds("factrolledback", include_rolled_back=True) == ["rolled_back"]
    assert kinds("factchained", "chain_tip") == ["archived"]
    assert kinds("factmerged", "merged") == ["summary"]
    # A branch is a conversation of its own: its copy of a live row is found there too.
    assert kinds("facttool", "branch") == ["live"]


def test_an_imported_summary_is_sent_where_hermes_put_it_even_between_two_users(tmp_path):
    """Hermes merged this summary into a user message that follows a user message (a rollback
    left them adjacent); the live context replays it as stored, not re-placed."""
    home = HermesHome(tmp_path / "home")
    s = home.session()
    home.append(s, "user", "first")
    home.append(s, "user", "again, after an undo")
    home.append(s, "user", "[CONTEXT SUMMARY]: earlier work", summary=True)
    home.append(s, "assistant", "reply")
    home.close()
    _import(tmp_path / "home")
    assert live_context(_session(s)) == _hermes_context(tmp_path / "home" / "state.db", s)


def test_summaries_record_what_they_replaced(tmp_path):
    home = HermesHome(tmp_path / "home")
    s = home.session()
    _chat(home, s, 10, "one")
    home.compact(s, head=2, tail=2, body="first")
    _chat(home, s, 3, "two")
    home.compact(s, head=2, tail=2, body="second")
    home.close()
    _import(tmp_path / "home")
    session = _session(s)
    summaries = list(Message.objects.filter(session=session, is_summary=True).order_by("position"))
    assert len(summaries) == 2
    first, second = summaries
    replaced_first = set(first.replaced.values_list("content", flat=True))
    # The first compaction replaced the middle 16 rows and superseded the 2 tail originals.
    assert {f"one question {i}" for i in range(1, 9)} <= replaced_first
    assert "one answer 9" in replaced_first
    # The second replaced the first generation: its head copies, the first summary, the tail.
    assert first.summarized_by_id == second.pk and first.kind == "archived"
    assert second.covers_from_position is not None
    assert second.covers_to_position >= second.covers_from_position
    # Head and tail copies say which row they repeat.
    copies = Message.objects.filter(
        session=session, active=True, continues__isnull=False, is_summary=False
    )
    assert copies.count() == 3  # two head copies; the tail's first copy is inside the carrier
    assert all(c.content == c.continues.content for c in copies)
    carrier = Message.objects.get(session=session, active=True, is_summary=True)
    assert carrier.continues.content in carrier.content
    # The tail's original, its copy in the first generation (archived by the second): shown once.
    hits = search("one answer 9", Filters(session_id=session.pk)).hits
    plain = [h.message for h in hits if h.message.content == "one answer 9"]
    assert len(plain) == 1 and plain[0].continues.content == "one answer 9"


def test_a_summary_hermes_kept_in_a_later_head_is_its_copy_not_another_compaction(tmp_path):
    """Hermes protects the first messages again in a new process, and after a compaction that
    kept no head those are the summary and its tail: the next compaction copies the summary."""
    home = HermesHome(tmp_path / "home")
    s = home.session()
    _chat(home, s, 8, "one")
    home.compact(s, head=0, tail=2, body="first factfirstsummary")
    _chat(home, s, 4, "two")
    home.compact(s, head=2, tail=2, body="second")
    home.close()
    _import(tmp_path / "home")
    session = _session(s)
    assert session.compressions == 2
    first, copy, second = Message.objects.filter(session=session, is_summary=True).order_by(
        "position"
    )
    assert copy.continues == first and copy.active and first.summarized_by == second
    assert [h.message for h in search("factfirstsummary", Filters()).hits] == [copy]
    # The second summary replaced the first generation, not its own head.
    assert second.covers_to_position < copy.position
    assert not Message.objects.filter(summarized_by=copy).exists()


def test_a_tail_is_found_among_many_later_rows_that_repeat_earlier_text_by_chance(tmp_path):
    """Every reply is "ok": a long run of later rows repeats earlier rows, in step, by chance;
    only the copies right after the summary are the tail."""
    home = HermesHome(tmp_path / "home")
    s = home.session()
    for i in range(30):
        home.append(s, "user", f"question {i}")
        home.append(s, "assistant", "ok")
    home.compact(s, head=2, tail=4, body="first")
    for i in range(60):
        home.append(s, "user", f"later {i}")
        home.append(s, "assistant", "ok")
    home.close()
    report = _import(tmp_path / "home")
    assert "Copies not matched: 0" in report
    session = _session(s)
    summary = Message.objects.get(session=session, is_summary=True)
    tail = Message.objects.filter(session=session, position__gt=summary.position).order_by(
        "position"
    )
    # The summary is merged into the tail's first message (no role fits between "ok" and it).
    assert summary.continues.content == "question 28"
    assert [m.continues.content if m.continues else None for m in tail[:5]] == [
        "ok",
        "question 29",
        "ok",
        None,
        None,
    ]


def test_a_row_taken_back_inside_the_tail_is_not_an_original_though_its_text_recurs(tmp_path):
    """An /undo just before a compaction leaves its rows between the tail's originals; the
    reply it took back says "ok", as the copies do, but no copy keeps its timestamp."""
    home = HermesHome(tmp_path / "home")
    s = home.session()
    for i in range(10):
        home.append(s, "user", f"question {i}")
        home.append(s, "assistant", "ok")
    undone = home.append(s, "user", "never mind that")
    home.append(s, "assistant", "ok")
    home.rewind(s, undone)
    home.append(s, "user", "question 10")
    home.append(s, "assistant", "ok")
    home.compact(s, head=2, tail=4, body="first")
    for i in range(3):
        home.append(s, "user", f"later {i}")
        home.append(s, "assistant", "ok")
    home.close()
    report = _import(tmp_path / "home")
    assert "Copies not matched: 0" in report
    session = _session(s)
    taken_back = Message.objects.filter(session=session, active=False, compressed=False)
    assert sorted(taken_back.values_list("content", flat=True)) == ["never mind that", "ok"]
    assert not taken_back.filter(continued_by__isnull=False).exists()


def test_a_rotation_chain_is_one_session_with_the_tips_id(tmp_path):
    home, ids = _rich_home(tmp_path / "home", 31)
    home.close()
    _import(tmp_path / "home")
    session = _session(ids["chain_tip"])
    assert _session(ids["chain_root"]) == session == _session(ids["chain_second"])
    assert session.external_id == ids["chain_tip"]
    links = set(session.hermes_links.values_list("hermes_id", flat=True))
    assert links == {ids["chain_root"], ids["chain_second"], ids["chain_tip"]}
    archived = Message.objects.filter(session=session, active=False, compressed=True)
    assert archived.filter(origin__session=ids["chain_root"]).count() == 14
    assert not archived.filter(summarized_by__isnull=True).exists()


def test_guard_state_and_timestamps_come_across(tmp_path):
    home, ids = _rich_home(tmp_path / "home", 31)
    home.close()
    _import(tmp_path / "home")
    session = _session(ids["inplace"])
    assert session.cooldown_until.year == 2100
    assert (session.failure_streak, session.ineffective_streak) == (2, 1)
    first = Message.objects.filter(session=session, role="user").order_by("position").first()
    conn = sqlite3.connect(tmp_path / "home" / "state.db")
    stamp = conn.execute(
        "SELECT min(timestamp) FROM messages WHERE session_id = ?", (ids["inplace"],)
    )
    assert abs(first.created_at.timestamp() - stamp.fetchone()[0]) < 0.01


def test_the_store_is_only_read(tmp_path):
    home, _ = _rich_home(tmp_path / "home", 31)
    home.close()
    db = tmp_path / "home" / "state.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    _import(tmp_path / "home")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_second_run_adds_nothing_and_a_run_after_more_appends_only_that(tmp_path):
    home, ids = _rich_home(tmp_path / "home", 31)
    _import(tmp_path / "home")
    count = Message.objects.count()
    report = _import(tmp_path / "home")
    assert "0 new, 0 updated, 6 unchanged" in report
    assert Message.objects.count() == count
    # Hermes goes on: more turns, another compaction, a new session.
    s = ids["inplace"]
    _chat(home, s, 6, "after")
    home.compact(s, head=2, tail=2, body="third factthird")
    home.append(s, "user", "newest ask")
    fresh = home.session()
    home.append(fresh, "user", "a brand new conversation")
    home.close()
    report = _import(tmp_path / "home")
    assert "1 new, 1 updated, 5 unchanged" in report
    session = _session(s)
    assert live_context(session) == _hermes_context(tmp_path / "home" / "state.db", s)
    origin_ids = list(
        Message.objects.filter(origin__system="hermes", origin__id__isnull=False).values_list(
            "origin__id", flat=True
        )
    )
    assert len(origin_ids) == len(set(origin_ids))
    assert [h.message.kind for h in search("factthird").hits] == ["summary"]
    assert _import(tmp_path / "home").count("unchanged") == 1


def test_a_dry_run_changes_nothing(tmp_path):
    home, _ = _rich_home(tmp_path / "home", 31)
    home.close()
    report = _import(tmp_path / "home", "--dry-run", "--memories")
    assert "6 new" in report and "would import" in report
    assert Session.objects.count() == 0 and ImportedSession.objects.count() == 0


def test_the_channel_and_profile_options(tmp_path):
    from sessions_app.keys import create_channel

    create_channel("telegram-import")
    home = HermesHome(tmp_path / "home")
    home.close()
    work = HermesHome(tmp_path / "home" / "profiles" / "work")
    s = work.session()
    home_s = s
    work.append(s, "user", "profile fact")
    work.close()
    _import(tmp_path / "home", "--profile", "work", "--channel", "telegram-import")
    assert _session(home_s).channel.name == "telegram-import"
    with pytest.raises(CommandError, match="no such profile"):
        _import(tmp_path / "home", "--profile", "play")


def test_the_report_names_config_memories_and_chains(tmp_path):
    home, _ = _rich_home(tmp_path / "home", 31)
    home.config((Path(__file__).parent / "data" / "hermes" / "config_lean.yaml").read_text())
    home.close()
    report = _import(tmp_path / "home")
    assert "Rotation chains joined: 1 (3 Hermes sessions)" in report
    assert "MEMORY.md has 2 entries" in report and "USER.md has 1 entry" in report
    assert "not imported (pass --memories" in report
    assert "accepted, not used here: model.api_mode" in report


def test_hermes_memories_become_the_channel_s_memory_blocks_and_reach_every_context(tmp_path):
    from sessions_app.models import MemoryBlock
    from sessions_app.selectors import live_context
    from sessions_app.services import recount

    home = HermesHome(tmp_path / "home")
    home.memories(["Deploys go out on Fridays.", "The repo is orion."], ["Name: Ada"])
    s = home.session()
    home.append(s, "user", "hello there")
    home.close()
    dry = _import(tmp_path / "home", "--dry-run", "--memories")
    assert "would become the channel's memory block" in dry
    assert not MemoryBlock.objects.exists()
    _import(tmp_path / "home", "--memories")
    blocks = dict(MemoryBlock.objects.values_list("label", "text"))
    assert blocks == {
        "memory": "Deploys go out on Fridays.\n§\nThe repo is orion.",
        "user": "Name: Ada",
    }
    session = _session(s)
    system = live_context(session)[0]["content"]
    assert "Deploys go out on Fridays." in system and "<user>\nName: Ada\n</user>" in system
    assert recount(session).live_tokens == session.live_tokens
    # A re-run with a changed file replaces the block; the counters follow.
    home = HermesHome(tmp_path / "home")
    home.memories(["Deploys go out on Mondays now."], ["Name: Ada"])
    home.close()
    _import(tmp_path / "home", "--memories")
    assert MemoryBlock.objects.get(label="memory").text == "Deploys go out on Mondays now."
    session.refresh_from_db()
    assert recount(session).live_tokens == session.live_tokens


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such file or folder"),
        (lambda p: p.mkdir(), "no state.db here"),
        (
            lambda p: (p.mkdir(), (p / "state.db").write_bytes(b"not a database at all" * 100)),
            "not a readable SQLite database",
        ),
        (
            lambda p: (p.mkdir(), sqlite3.connect(p / "state.db").execute("CREATE TABLE x (y)")),
            "not a Hermes Agent state.db",
        ),
    ],
)
def test_what_is_not_a_hermes_store_is_refused_and_nothing_written(tmp_path, make, message):
    make(tmp_path / "home")
    with pytest.raises(CommandError, match=message):
        _import(tmp_path / "home")
    assert Session.objects.count() == 0


def test_a_newer_schema_is_refused(tmp_path):
    home = HermesHome(tmp_path / "home")
    home.conn.execute("UPDATE schema_version SET version = 99")
    home.close()
    with pytest.raises(CommandError, match="schema version 99 is newer"):
        _import(tmp_path / "home")


def test_a_truncated_store_is_refused(tmp_path):
    home, _ = _rich_home(tmp_path / "home", 31)
    home.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    home.close()
    db = tmp_path / "home" / "state.db"
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    with pytest.raises(CommandError, match="database disk image is malformed"):
        _import(tmp_path / "home")
    assert Message.objects.count() == 0 and Session.objects.count() == 0


@pytest.mark.slow
def test_a_store_locked_by_a_writer_is_named_and_nothing_written(tmp_path):
    home = HermesHome(tmp_path / "home")
    home.conn.execute("PRAGMA journal_mode=DELETE")  # a store on a filesystem without WAL
    s = home.session()
    home.append(s, "user", "hello")
    home.conn.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CommandError, match="locked by another process"):
            _import(tmp_path / "home")
    finally:
        home.conn.execute("ROLLBACK")
        home.close()
    assert Session.objects.count() == 0


def test_bad_rows_are_named_and_the_rest_imports(tmp_path):
    home = HermesHome(tmp_path / "home")
    s = home.session()
    home.append(s, "user", "a NUL \x00 inside")
    home.append(s, "assistant", "fine", reasoning="think\x00ing")
    home.append(s, "user", [{"type": "text", "text": "a NUL\x00 in a part"}])
    home.append(s, "assistant", "fine again")
    home.conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES (?, 'user', CAST(x'6c6f6e6520eda080207375727267617465' AS TEXT), 1.0)",
        (s,),
    )
    home.append(s, "assistant", "", tool_calls='{"not": "a list"')
    home.append(s, "session_meta", "bookkeeping")
    home.append(s, "tool", "orphan result")
    home.append(s, "user", "last good row")
    orphan = home.session()
    home.conn.execute("PRAGMA foreign_keys=OFF")
    home.conn.execute("UPDATE sessions SET parent_session_id = 'gone' WHERE id = ?", (orphan,))
    home.append(orphan, "user", "orphan child")
    home.close()
    report = _import(tmp_path / "home")
    assert f"session {s} message" in report
    assert "NUL bytes replaced" in report
    assert "invalid UTF-8" in report
    assert "tool_calls is not a JSON list" in report
    assert "'session_meta' is Hermes bookkeeping" in report
    assert "a tool result without the id" in report
    assert "parent session gone is not in the store" in report
    contents = list(Message.objects.filter(session=_session(s)).values_list("content", flat=True))
    assert "a NUL \ufffd inside" in contents and "last good row" in contents
    assert "a NUL\ufffd in a part" in contents
    reasoning = Message.objects.get(session=_session(s), content="fine").origin["reasoning"]
    assert reasoning == "think\ufffding"
    assert any(c and "\ufffd" in c and c.startswith("lone") for c in contents)
    assert _session(orphan).messages.count() == 2


def test_a_config_that_is_not_yaml_is_named_and_sessions_import(tmp_path):
    home = HermesHome(tmp_path / "home")
    s = home.session()
    home.append(s, "user", "hello")
    home.config("model: [unclosed\n")
    home.close()
    report = _import(tmp_path / "home")
    assert "is not valid YAML" in report
    assert _session(s).messages.count() == 2


def test_structured_content_is_decoded_into_parts():
    parts = [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]
    text, decoded = decode_content(CONTENT_JSON_PREFIX + json.dumps(parts))
    assert (text, decoded) == ("hi", parts)
    assert decode_content(CONTENT_JSON_PREFIX + "{broken") == (
        CONTENT_JSON_PREFIX + "{broken",
        None,
    )


def _random_history(home: HermesHome, draw, steps: int) -> str:
    """A Hermes conversation built from random operations in the order a user makes them."""
    sid = home.session()
    n = 0
    for _ in range(steps):
        op = draw("op")
        n += 1
        if op == "turn":
            # Typed with blanks around it now and then (a replayed copy strips them).
            home.append(sid, "user", f"ask {n} zq{n}x" if n % 3 else f"  ask {n} zq{n}x \n")
            home.append(sid, "assistant", f"reply {n}")
        elif op == "tool":
            call = f"call_{n}"
            home.append(sid, "user", f"run {n}")
            home.append(
                sid,
                "assistant",
                None,
                tool_calls=[
                    {"id": call, "type": "function", "function": {"name": "t", "arguments": "{}"}}
                ],
            )
            # Long now and then (a replayed copy prunes it): only the original holds its word.
            output = f"output {n} zt{n}x" + ("\n" + "line of output " * 20) * (n % 2)
            home.append(sid, "tool", output, tool_call_id=call, tool_name="t")
            home.append(sid, "assistant", f"done {n}")
        elif op == "undo":
            users = [r for r in home.active_rows(sid) if r["role"] == "user"]
            if users:
                home.rewind(sid, users[-1]["id"])
        else:
            rows = home.active_rows(sid)
            head, tail = draw("head"), draw("tail")
            if len(rows) < head + tail + 2:
                continue
            if op == "compact":
                home.compact(sid, head=head, tail=tail, tail_count=draw("modern"))
            else:
                sid = home.rotate(sid, head=head, tail=tail)
    return sid


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30))
def test_random_hermes_histories_replay_exactly_and_import_once(tmp_path, seed):
    import random

    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    choices = {
        "op": ["turn"] * 5 + ["tool"] * 2 + ["undo", "compact", "compact", "rotate"],
        "head": [0, 1, 2, 3],
        "tail": [1, 2, 4, 6],
        "modern": [True, False],
    }
    home = HermesHome(tmp_path / "home", rng.choice(VERSIONS), replayed_copies=seed % 2 == 0)
    tip = _random_history(home, lambda k: rng.choice(choices[k]), rng.randint(5, 120))
    home.close()
    _import(tmp_path / "home")
    session = _session(tip)
    assert live_context(session) == _hermes_context(tmp_path / "home" / "state.db", tip)
    hermes = sqlite3.connect(tmp_path / "home" / "state.db")
    total = hermes.execute("SELECT count(*) FROM messages").fetchone()[0]
    system_rows = 1
    assert Message.objects.filter(session=session).count() == total + system_rows
    # Rolled back here is rolled back there, and nothing Hermes archived is live here.
    for row_id, active, compacted in hermes.execute("SELECT id, active, compacted FROM messages"):
        kind = Message.objects.get(session=session, origin__id=row_id).kind
        if active and kind in ("live", "summary"):
            continue
        assert not active or kind == "archived"  # a rotated parent's live rows are archived
        if not active and compacted:
            assert kind == "archived"
    # Each word a user typed or a tool printed shows once at most (a copy and its original
    # once), and once where a row of it was not taken back.
    words: dict[str, set[tuple[int, int]]] = {}
    for content, active, compacted in hermes.execute(
        "SELECT content, active, compacted FROM messages"
    ):
        for word in re.findall(r"\bz[qt]\d+x\b", content or ""):
            words.setdefault(word, set()).add((active, compacted))
    for word, states in words.items():
        hits = search(word, Filters(session_id=session.pk)).hits
        assert len(hits) <= 1, (word, [(h.message.position, h.message.kind) for h in hits])
        if states - {(0, 0)}:
            assert len(hits) == 1, word
    assert "0 new, 0 updated, 1 unchanged" in _import(tmp_path / "home")


def test_a_gateway_finds_an_imported_conversation_by_its_hermes_id(tmp_path, client):
    from sessions_app.keys import create_channel

    _, key = create_channel("hermes")
    home, ids = _rich_home(tmp_path / "home", 31)
    home.close()
    _import(tmp_path / "home")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key.plaintext}"}
    response = client.get(f"/api/v1/sessions?external_id={ids['chain_tip']}", **auth)
    found = response.json()
    assert response.status_code == 200, found
    assert [s["external_id"] for s in found] == [ids["chain_tip"]]
    context = client.get(f"/api/v1/sessions/{found[0]['id']}/context", **auth).json()
    db = tmp_path / "home" / "state.db"
    assert context["messages"] == _hermes_context(db, ids["chain_tip"])


def test_a_rerun_after_an_undo_takes_the_rows_back_here_too(tmp_path):
    home = HermesHome(tmp_path / "home")
    s = home.session()
    _chat(home, s, 3, "turn")
    _import(tmp_path / "home")
    last_user = [r for r in home.active_rows(s) if r["role"] == "user"][-1]["id"]
    home.rewind(s, last_user)
    home.close()
    assert "1 updated" in _import(tmp_path / "home")
    session = _session(s)
    taken_back = Message.objects.filter(session=session, active=False, compressed=False)
    assert taken_back.count() == 2
    assert all(m.rollback_reason == "hermes" and m.rolled_back_at for m in taken_back)
    assert live_context(session) == _hermes_context(tmp_path / "home" / "state.db", s)
    session.refresh_from_db()
    assert session.live_messages == 5  # the system prompt and two turns


def test_a_damaged_page_fails_only_the_conversations_it_holds(tmp_path):
    home = HermesHome(tmp_path / "home")
    sids = []
    for n in range(6):
        sid = home.session(title=f"conversation {n}")
        _chat(home, sid, 60, f"conv{n} " + "words " * 60)
        sids.append(sid)
    home.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # A leaf page of the messages table in the middle: the rows of the middle conversations.
    leaves = [
        page
        for (page,) in home.conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY path"
        )
    ]
    page_size = home.conn.execute("PRAGMA page_size").fetchone()[0]
    home.conn.execute("PRAGMA journal_mode=DELETE")
    home.close()
    db = tmp_path / "home" / "state.db"
    data = bytearray(db.read_bytes())
    start = (leaves[len(leaves) // 2] - 1) * page_size
    data[start : start + page_size] = b"\xde\xad" * (page_size // 2)
    db.write_bytes(bytes(data))
    with pytest.raises(CommandError, match="could not be imported"):
        _import(tmp_path / "home")
    imported = set(ImportedSession.objects.values_list("hermes_id", flat=True))
    assert sids[0] in imported and sids[-1] in imported  # the rest came across
    assert 1 <= len(set(sids) - imported) <= 2  # the damaged page holds one or two of them
    for sid in imported:
        assert live_context(_session(sid))[-1]["content"].startswith("conv")


@pytest.mark.postgres
def test_an_import_leaves_postgresql_fresh_statistics(tmp_path):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: runs in the PostgreSQL pass of ./bin/test")
    home = HermesHome(tmp_path / "home")
    s = home.session()
    _chat(home, s, 5, "stats")
    home.close()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'sessions_app_message'::regclass")
    _import(tmp_path / "home")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'sessions_app_message'")
        assert cursor.fetchone()[0] > 0
