"""Several processes writing one database at once: SQLite (WAL, busy timeout, BEGIN IMMEDIATE)
or, in the PostgreSQL pass, PostgreSQL (row locks on the session).

Runs real processes against a real database, as the web server and the django-q2 worker do.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.processes import ROOT, isolated_env, on_postgres, python

pytestmark = pytest.mark.slow  # real processes: servers, workers, copies

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


def test_concurrent_writers_keep_positions_contiguous_and_counters_exact(tmp_path):
    with isolated_env(tmp_path, server="  sqlite_busy_timeout_seconds: 30\n") as env:
        _concurrent_writers(env)


def _concurrent_writers(env: dict[str, str]) -> None:
    session_id = python("-c", SETUP, env=env).strip().splitlines()[-1]
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

    stored, recounted, shape = python("-c", CHECK, session_id, env=env).strip().splitlines()[-3:]
    live, tokens, total, next_position = map(int, stored.split())
    assert (live, tokens, total) == tuple(map(int, recounted.split()))
    # 1 system prompt + 4 writers x 25 batches x 2 messages; each writer rolled back 5 of its own.
    assert total == next_position == 1 + 4 * 25 * 2
    assert live == total - 4 * 5
    assert shape == ("True postgresql" if on_postgres() else "True wal")


# The SQLite recent search indexes under the same load: writers append, roll back and archive in
# bulk while another process trims the recent indexes in small steps and another searches.
STRESS_WRITER = """
import django, sys
django.setup()
from sessions_app.models import Message, Session
from sessions_app.services import append_messages, rollback_messages
session = Session.objects.get(pk=sys.argv[1])
worker = sys.argv[2]
for i in range(30):
    rows = append_messages(session, [
        {"role": "user", "content": f"stress worker{worker} question {i}"},
        {"role": "assistant", "content": f"stress worker{worker} answer {i}"},
    ]).messages
    if i % 6 == 5:
        rollback_messages(session, 1)
    if i % 4 == 3:  # archive in bulk, as a compression does
        Message.objects.filter(pk=rows[0].pk).update(active=False, compressed=True)
"""

TRIMMER = """
import django, os, sys, time
django.setup()
from django.db import connection, transaction
from search import fts
steps = 0
while True:  # until the writers are done and nothing is left to trim
    done = os.path.exists(sys.argv[1])
    with transaction.atomic(), connection.cursor() as cursor:
        step = fts.trim_step(cursor, keep=40, batch=5)
    if done and not step:
        break
    steps += bool(step)
    time.sleep(0.005)
print(steps)
"""

SEARCHER = """
import django, os, sys
django.setup()
from search.service import Filters, search
answered = 0
while not os.path.exists(sys.argv[1]):
    result = search("stress", Filters(rank_window=20), limit=10)
    assert result.index == "words" and len(result.hits) == 10, (result.index, len(result.hits))
    answered += 1
print(answered)
"""

INDEX_CHECK = """
import django, json
django.setup()
from django.db import connection
from search import fts
from sessions_app.models import Message
def matches(t, term, above=0):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH %s AND rowid > %s", [term, above])
        return {row[0] for row in cursor.fetchall()}
with connection.cursor() as cursor:
    mismatches = fts.count_mismatches(cursor)
    fts.integrity_check(cursor)
    floor = fts.floor(cursor)
twins_differ = [
    (index, term)
    for index in fts.INDEXES
    for term in ("stress", "question", "answer", "worker0", "worker2")
    if matches(fts.table(index, recent=True), term) != matches(fts.table(index), term, floor)
]
indexed = set(Message.objects.filter(content__startswith="stress").exclude(
    active=False, compressed=False).values_list("pk", flat=True))
print(json.dumps({
    "mismatches": mismatches, "twins_differ": twins_differ, "floor": floor,
    "top": Message.objects.order_by("-pk").first().pk,
    "words_complete": matches(fts.table("words"), "stress") == indexed,
}))
"""


def test_trimming_the_recent_search_indexes_while_writers_and_searches_run(tmp_path):
    if on_postgres():
        pytest.skip("SQLite FTS5 only: PostgreSQL has no recent indexes")

    with isolated_env(tmp_path, server="  sqlite_busy_timeout_seconds: 30\n") as env:
        session_id = python("-c", SETUP, env=env).strip().splitlines()[-1]
        # Enough rows that every search has hits and the trim has work from the start.
        python("-c", STRESS_WRITER, session_id, "9", env=env)
        stop = tmp_path / "stop"

        def start(code: str, *args: str) -> subprocess.Popen:
            return subprocess.Popen(
                [sys.executable, "-c", code, *args],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

        helpers = [start(TRIMMER, str(stop)), start(SEARCHER, str(stop))]
        writers = [start(STRESS_WRITER, session_id, str(n)) for n in range(3)]
        for writer in writers:
            _, stderr = writer.communicate(timeout=300)
            assert writer.returncode == 0, stderr
        stop.touch()
        counts = []
        for helper in helpers:
            stdout, stderr = helper.communicate(timeout=120)
            assert helper.returncode == 0, stderr
            counts.append(int(stdout.strip().splitlines()[-1]))
        check = json.loads(python("-c", INDEX_CHECK, env=env).strip().splitlines()[-1])
    trims, searches = counts
    assert trims > 10 and searches > 10  # both really ran alongside the writers
    assert check["mismatches"] == {} and check["twins_differ"] == []
    assert check["words_complete"] is True
    assert check["floor"] == check["top"] - 40
