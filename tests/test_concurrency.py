"""Several processes writing one database at once: SQLite (WAL, busy timeout, BEGIN IMMEDIATE)
or, in the PostgreSQL pass, PostgreSQL (row locks on the session).

Runs real processes against a real database, as the web server and the django-q2 worker do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.processes import isolated_env, on_postgres

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import django, os
django.setup()
from sessions_app.keys import create_channel
from sessions_app.services import open_session
channel, _ = create_channel("load")
print(open_session(channel, model="gpt-4", system_prompt="sys").session.pk)
"""

WRITER = """
import django, sys
django.setup()
from sessions_app.models import Session
from sessions_app.services import append_messages, rollback_messages
session = Session.objects.get(pk=sys.argv[1])
worker = sys.argv[2]
for i in range(25):
    append_messages(session, [
        {"role": "user", "content": f"worker {worker} question {i}"},
        {"role": "assistant", "content": f"worker {worker} answer {i}"},
    ])
    if i % 5 == 4:
        rollback_messages(session, 1)
"""

CHECK = """
import django, sys
django.setup()
from django.db import connection
from sessions_app.models import Message, Session
from sessions_app.services import recount
session = Session.objects.get(pk=sys.argv[1])
r = recount(session)
positions = list(Message.objects.filter(session=session).order_by("position")
                 .values_list("position", flat=True))
mode = connection.vendor
if mode == "sqlite":
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        mode = cursor.fetchone()[0]
print(session.live_messages, session.live_tokens, session.total_messages, session.next_position)
print(r.live_messages, r.live_tokens, r.total_messages)
print(positions == list(range(len(positions))), mode)
"""


def _python(code: str, *args: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_concurrent_writers_keep_positions_contiguous_and_counters_exact(tmp_path):
    with isolated_env(tmp_path, server="  sqlite_busy_timeout_seconds: 30\n") as env:
        _concurrent_writers(env)


def _concurrent_writers(env: dict[str, str]) -> None:
    session_id = _python(SETUP, env=env).strip().splitlines()[-1]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, session_id, str(n)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=300)
        assert writer.returncode == 0, stderr

    stored, recounted, shape = _python(CHECK, session_id, env=env).strip().splitlines()[-3:]
    live, tokens, total, next_position = map(int, stored.split())
    assert (live, tokens, total) == tuple(map(int, recounted.split()))
    # 1 system prompt + 4 writers x 25 batches x 2 messages; each writer rolled back 5 of its own.
    assert total == next_position == 1 + 4 * 25 * 2
    assert live == total - 4 * 5
    assert shape == ("True postgresql" if on_postgres() else "True wal")
