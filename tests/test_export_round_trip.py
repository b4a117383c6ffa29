"""An export restores into another instance -- a fresh database of the same kind, and of the
other kind (SQLite and PostgreSQL) -- with the same live context, the same search hits for
planted words, the same provenance, pins, memory blocks and event trail."""

from __future__ import annotations

import json
import os
import socket
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from compression.engine.compress import compress
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Session
from sessions_app.services.memory import Owner, set_block
from sessions_app.services.pins import set_pinned
from tests.export_probe import describe
from tests.processes import isolated_env, on_postgres, python
from tests.test_compression import turn

pytestmark = pytest.mark.slow  # processes: a second instance, migrated

POSTGRES = os.environ.get("HERMES_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/hermes")
ADMIN = POSTGRES.rsplit("/", 1)[0] + "/postgres"  # the server's own database, for CREATE DATABASE


@pytest.fixture
def history(db):
    channel = create_channel("telegram")[0]
    set_block(Owner(channel=channel), "persona", "Terse. 用中文回答。")
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", external_id="chat-9", title="Round trip"
    ).session
    planted = [
        {"role": "user", "content": "remember zanzibar-quokka and 数据库迁移失败 please"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "note", "arguments": '{"text": "flamingo-7731"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "noted"},
    ]
    services.append_messages(session, planted, run_hooks=False)
    services.append_messages(session, [m for n in range(14) for m in turn(n)], run_hooks=False)
    assert compress(session, max_passes=1).outcome in ("compressed", "fallback")
    services.append_messages(
        session, [{"role": "user", "content": "用Django写代码 after the summary"}], run_hooks=False
    )
    session.refresh_from_db()
    set_pinned(session, session.next_position - 1, True)
    set_block(Owner(session=session), "task", "ship the release")
    services.append_messages(session, [{"role": "user", "content": "undo me"}], run_hooks=False)
    services.rollback_messages(session, 1)
    other = services.open_session(create_channel("discord")[0], model="gpt-4o").session
    services.append_messages(other, [{"role": "user", "content": "flamingo-7731 elsewhere"}])
    return Session.objects.all()


def _postgres_reachable() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        return True
    except OSError:
        return False


def _restore_and_describe(export: Path, env: dict[str, str]) -> dict:
    out = python("manage.py", "import_sessions", str(export), env=env)
    assert "Restored 2 sessions and" in out, out
    again = python("manage.py", "import_sessions", str(export), env=env)
    assert "Restored 0 sessions" in again and again.count("already here") == 2
    return json.loads(python("-m", "tests.export_probe", env=env))


@pytest.mark.parametrize("target", ["same kind", "other kind"])
def test_an_export_restores_into_a_fresh_instance_as_it_was(history, tmp_path, target):
    expected = describe()
    export = tmp_path / "all.jsonl"
    call_command("export_sessions", str(export), stderr=StringIO())
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert {line["type"] for line in lines} == {"channel", "session", "message", "event"}

    (tmp_path / "target").mkdir()
    with isolated_env(tmp_path / "target") as env:
        if target == "other kind":
            if on_postgres():  # PostgreSQL to SQLite: a SQLite file in the target's data dir
                env = {k: v for k, v in env.items() if k != "HERMES_DATABASE_URL"}
                python("manage.py", "migrate", "--noinput", "-v0", env=env, timeout=300)
            elif _postgres_reachable():  # SQLite to PostgreSQL
                env = _fresh_postgres(env)
            else:
                pytest.skip("SQLite to PostgreSQL needs PostgreSQL on 127.0.0.1:5432")
        try:
            restored = _restore_and_describe(export, env)
        finally:
            _drop(env)
    assert restored.keys() == expected.keys()
    for sid, want in expected.items():
        got = restored[sid]
        for part in want:
            assert got[part] == want[part], (sid, part)
    chat = next(v for v in restored.values() if v["title"] == "Round trip")
    assert chat["hits"]["zanzibar-quokka"] and chat["hits"]["数据库迁移失败"]
    assert any(row[2] for row in chat["provenance"])  # the pin came across
    assert ["persona", "Terse. 用中文回答。", False] in chat["memory"]
    assert chat["events"]


_created: dict[str, str] = {}


def _fresh_postgres(env: dict[str, str]) -> dict[str, str]:
    import uuid

    import psycopg

    name = f"hermes_restore_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = POSTGRES.rsplit("/", 1)[0] + f"/{name}"
    _created[url] = name
    env = {**env, "HERMES_DATABASE_URL": url}
    python("manage.py", "migrate", "--noinput", "-v0", env=env, timeout=300)
    return env


def _drop(env: dict[str, str]) -> None:
    url = env.get("HERMES_DATABASE_URL", "")
    name = _created.pop(url, None)
    if name is None:
        return
    import psycopg

    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
