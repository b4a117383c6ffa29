"""Taking data out: export_sessions and the timeline's download link, JSON Lines with each
row's kind, position, summary provenance and timestamps."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from compression.engine.compress import compress
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message
from tests.test_compression import turn


@pytest.fixture
def two_channels(db):
    telegram = create_channel("telegram")[0]
    discord = create_channel("discord")[0]
    session = services.open_session(
        telegram, model="gpt-4o", system_prompt="sys", external_id="chat-1"
    ).session
    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    compress(session)
    services.append_messages(session, [{"role": "user", "content": "undo me"}], run_hooks=False)
    services.rollback_messages(session, 1)
    other = services.open_session(discord, model="gpt-4o").session
    services.append_messages(other, [{"role": "user", "content": "elsewhere"}], run_hooks=False)
    return session, other


def _lines(text: str) -> list[dict]:
    """The message lines (an export also has channel, session and event lines)."""
    lines = [json.loads(line) for line in text.splitlines()]
    return [line for line in lines if line["type"] == "message"]


def test_a_channel_exports_every_row_with_kind_position_and_provenance(two_channels, tmp_path):
    session, _ = two_channels
    out = tmp_path / "telegram.jsonl"
    call_command("export_sessions", str(out), "--channel", "telegram", stderr=StringIO())
    rows = _lines(out.read_text(encoding="utf-8"))
    assert len(rows) == Message.objects.filter(session=session).count()
    assert {r["session"] for r in rows} == {str(session.pk)}
    assert {r["kind"] for r in rows} == {"live", "summary", "archived", "rolled_back"}
    summary = next(r for r in rows if r["kind"] == "summary")
    replaced = [r for r in rows if r["summarized_by"] == summary["id"]]
    assert replaced and all(r["kind"] == "archived" for r in replaced)
    low, high = summary["covers_from_position"], summary["covers_to_position"]
    assert all(low <= r["position"] <= high for r in replaced)
    assert all(r["created_at"] for r in rows)
    assert next(r for r in rows if r["kind"] == "rolled_back")["rolled_back_at"]


def test_one_session_by_external_id_to_standard_output(two_channels, capsys):
    call_command("export_sessions", "-", "--session", "chat-1")
    rows = _lines(capsys.readouterr().out)
    assert {r["external_id"] for r in rows} == {"chat-1"}


def test_unknown_sessions_and_channels_are_named(two_channels, tmp_path):
    with pytest.raises(CommandError, match="no session with id or external id 'nope'"):
        call_command("export_sessions", str(tmp_path / "x"), "--session", "nope")
    with pytest.raises(CommandError, match="no sessions on a channel named 'slack'"):
        call_command("export_sessions", str(tmp_path / "x"), "--channel", "slack")
    with pytest.raises(CommandError, match="cannot be written"):
        call_command("export_sessions", str(tmp_path / "no" / "such" / "dir.jsonl"))


def test_the_timeline_downloads_its_session(admin_client, client, two_channels):
    session, _ = two_channels
    url = reverse("console:export", args=[session.pk])
    page = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert url in page
    response = admin_client.get(url)
    assert response["Content-Disposition"] == f'attachment; filename="session-{session.pk}.jsonl"'
    rows = _lines(b"".join(response.streaming_content).decode())
    assert [r["position"] for r in rows] == sorted(r["position"] for r in rows)
    assert len(rows) == Message.objects.filter(session=session).count()
    assert client.get(url).status_code == 302  # staff only


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json\n", "line 1: not JSON"),
        ('{"session": "x", "position": 0}\n', "line 1: not a line of an export (no type)"),
        ('{"type": "message", "session": "x"}\n', "line 1: a message line outside its session"),
        ('{"type": "session", "session": "nope", "channel": "t"}\n', "'nope' is not a session id"),
        ('{"type": "channel", "channel": "t"}\n{"type": "gift"}\n', "line 2: unknown line type"),
        (
            '{"type": "session", "session": "00000000-0000-4000-8000-000000000001", "channel": "t"}'
            '\n{"type": "message", "session": "00000000-0000-4000-8000-000000000001"}\n',
            "nothing of it was written",
        ),
    ],
)
def test_a_file_that_is_not_an_export_is_refused_naming_its_line(db, tmp_path, text, fragment):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError, match=re.escape(fragment)):
        call_command("import_sessions", str(bad), stdout=StringIO())


def test_restoring_sessions_already_here_leaves_them_as_they_are(two_channels, tmp_path):
    out = tmp_path / "all.jsonl"
    call_command("export_sessions", str(out), stderr=StringIO())
    before = Message.objects.count()
    told = StringIO()
    call_command("import_sessions", str(out), stdout=told)
    assert told.getvalue().count("already here") == 2
    assert "Restored 0 sessions and 0 messages." in told.getvalue()
    assert Message.objects.count() == before
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("import_sessions", str(tmp_path / "missing.jsonl"))
