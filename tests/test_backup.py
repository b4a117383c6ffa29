"""Backups and restores as an operator runs them: ``manage.py backup`` while writers append
through the service in other processes, ``manage.py restore`` with them stopped, on a database
of the test's own (SQLite file, or a PostgreSQL database in the PostgreSQL pass)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import dj_database_url
import pytest

from tests.plugin_support import free_port
from tests.processes import ROOT, isolated_env, on_postgres, python, stop_all

pytestmark = pytest.mark.slow  # real processes: servers, workers, copies

PLANTED = "quetzalcoatlus"

# A writer: one session, appends one message at a time through the service (the write gate,
# the triggers, the counters), and prints each one only once append_messages has returned --
# an acknowledged append.
WRITER = """
import sys, django
django.setup()
from sessions_app import services
from sessions_app.models import Channel
name = sys.argv[1]
channel = Channel.objects.get(name="load")
session = services.open_session(channel, model="gpt-4o", external_id=name).session
i = 0
while True:
    word = f"PLANTED {name}" if i == 0 else f"{name} message {i}"
    row = services.append_messages(session, [{"role": "user", "content": word}]).messages[0]
    print(f"{session.pk} {row.position} {word}", flush=True)
    i += 1
""".replace("PLANTED", PLANTED)

# After the restore: which acknowledged appends are missing, the database's own checks, and
# whether search finds the planted word.
CHECK = """
import json, sys, django
django.setup()
from django.db import connection
from sessions_app.models import Message
from search.service import search
acked = json.load(open(sys.argv[1]))
have = set(Message.objects.values_list("session_id", "position", "content"))
have = {(str(s), p, c) for s, p, c in have}
missing = [a for a in acked if tuple(a) not in have]
checks = {}
if connection.vendor == "sqlite":
    from search import fts
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA integrity_check")
        checks["integrity"] = cursor.fetchone()[0]
        fts.integrity_check(cursor)
        checks["index_mismatches"] = fts.count_mismatches(cursor)
found = search(PLANTED)
print(json.dumps({"missing": missing, "rows": len(have), "checks": checks,
                  "planted_hits": len(found.hits)}))
""".replace("PLANTED", repr(PLANTED))


def _pg_tools_usable() -> str | None:
    """Why pg_dump/pg_restore cannot be used against the test server, or None."""
    for tool in ("pg_dump", "pg_restore"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (PostgreSQL's client tools)"
    import psycopg

    settings = dj_database_url.parse(os.environ["HERMES_DATABASE_URL"])
    with psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
        dbname="postgres",
    ) as conn:
        server = conn.info.server_version // 10000
    out = subprocess.run(["pg_dump", "--version"], capture_output=True, text=True, check=True)
    client = int(out.stdout.split()[-1].split(".")[0])
    if client < server:
        return f"pg_dump {client} is older than the server ({server}): it refuses to dump"
    return None


@pytest.fixture
def store(tmp_path):
    """A migrated database of its own with a channel for the writers; yields its environment."""
    if on_postgres() and (why := _pg_tools_usable()):
        pytest.skip(why)
    with isolated_env(tmp_path) as env:
        python("manage.py", "create_channel", "load", env=env, timeout=60)
        yield env


def _manage(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Writers:
    """Writer processes and every append they acknowledged, with when it was read."""

    def __init__(self, env: dict[str, str], count: int) -> None:
        self.acked: list[tuple[float, list]] = []
        self.lock = threading.Lock()
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, f"writer{i}"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(count)
        ]
        self.readers = [threading.Thread(target=self._read, args=(p,)) for p in self.processes]
        for reader in self.readers:
            reader.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            session, position, content = line.rstrip("\n").split(" ", 2)
            with self.lock:
                self.acked.append((time.monotonic(), [session, int(position), content]))

    def count(self) -> int:
        with self.lock:
            return len(self.acked)

    def wait_for(self, n: int, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while self.count() < n:
            for process in self.processes:
                assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, f"only {self.count()} appends in {seconds} s"
            time.sleep(0.05)

    def until(self, moment: float) -> list[list]:
        with self.lock:
            return [ack for at, ack in self.acked if at <= moment]

    def stop(self) -> None:
        stop_all(self.processes, timeout=30)
        for reader in self.readers:
            reader.join(timeout=30)


def test_a_backup_taken_under_write_load_restores_every_acknowledged_message(store, tmp_path):
    env = store
    writers = Writers(env, 3)
    try:
        writers.wait_for(150)
        started = time.monotonic()
        result = _manage(env, "backup", str(tmp_path / "under-load.backup"), "--no-progress")
        finished = time.monotonic()
        assert result.returncode == 0, result.stderr
        before = writers.until(started)
        # The writers went on appending after the copy: the backup did not stop them.
        writers.wait_for(writers.count() + 30)
    finally:
        writers.stop()
    assert "row counts match the source at the snapshot" in result.stdout
    total = writers.count()
    assert total > len(writers.until(finished))

    restored = _manage(env, "restore", str(tmp_path / "under-load.backup"))
    assert restored.returncode == 0, restored.stderr
    (tmp_path / "acked.json").write_text(json.dumps(before))
    report = json.loads(python("-c", CHECK, str(tmp_path / "acked.json"), env=env))

    assert len(before) >= 150
    assert report["missing"] == []
    # The restore put the snapshot back: the appends made after the copy are not there.
    assert len(before) <= report["rows"] < total
    assert report["planted_hits"] == 3  # each writer's first message
    if not on_postgres():
        assert report["checks"] == {"integrity": "ok", "index_mismatches": {}}
        # The old database is moved aside with its WAL, not deleted: it still opens and holds
        # every append, those after the copy too.
        (moved,) = [
            p
            for p in tmp_path.glob("hermes.sqlite3.before-restore-*")
            if not p.name.endswith("-wal")
        ]
        conn = sqlite3.connect(moved)
        assert conn.execute("SELECT count(*) FROM sessions_app_message").fetchone()[0] >= total
        conn.close()


def test_a_restore_while_the_service_runs_is_refused_and_changes_nothing(store, tmp_path):
    env = store
    taken = _manage(env, "backup", str(tmp_path / "quiet.backup"), "--no-progress")
    assert taken.returncode == 0, taken.stderr
    writers = Writers(env, 1)
    try:
        writers.wait_for(20)
        refused = _manage(env, "restore", str(tmp_path / "quiet.backup"))
        writers.wait_for(writers.count() + 10)  # still writing to the same database
    finally:
        writers.stop()
    assert refused.returncode == 1
    assert "the service appears to be running" in refused.stderr
    assert "Traceback" not in refused.stderr
    if not on_postgres():
        assert not list(tmp_path.glob("hermes.sqlite3.before-restore-*"))


IDLE_PROCESSES = {
    "qcluster": ["manage.py", "qcluster"],
    # Before its first request a web process without the warm-up holds no file of the database.
    "granian": [
        "-m", "granian", "--interface", "wsgi", "--port", "{port}", "hermes_site.wsgi:application",
    ],
}  # fmt: skip


@pytest.mark.parametrize("idle", sorted(IDLE_PROCESSES))
def test_a_restore_is_refused_while_a_worker_or_web_server_runs_and_goes_through_once_it_stopped(
    store, tmp_path, idle
):
    env = store
    taken = _manage(env, "backup", str(tmp_path / "quiet.backup"), "--no-progress")
    assert taken.returncode == 0, taken.stderr
    port = free_port()
    worker = subprocess.Popen(
        [sys.executable, *(part.format(port=port) for part in IDLE_PROCESSES[idle])],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(4)  # started, idle
        refused = _manage(env, "restore", str(tmp_path / "quiet.backup"))
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert refused.returncode == 1
    assert "the service appears to be running" in refused.stderr
    assert idle in refused.stderr
    restored = _manage(env, "restore", str(tmp_path / "quiet.backup"))
    assert restored.returncode == 0, restored.stderr


def test_a_backup_to_a_directory_that_does_not_exist_fails_before_copying(store, tmp_path):
    result = _manage(store, "backup", str(tmp_path / "no" / "such" / "dir" / "x.backup"))
    assert result.returncode == 1
    assert "does not exist: create the directory first" in result.stderr
    assert not (tmp_path / "no").exists()


def test_a_backup_into_an_unwritable_directory_fails_before_copying(store, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        # root writes anywhere, but not into /proc
        writable = os.access(locked, os.W_OK)
        target = Path("/proc/hermes.backup") if writable else locked / "x.backup"
        result = _manage(store, "backup", str(target))
    finally:
        locked.chmod(0o700)
    assert result.returncode == 1
    assert "is not writable" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(locked.iterdir()) == []


def test_a_backup_never_overwrites_an_existing_file(store, tmp_path):
    existing = tmp_path / "precious"
    existing.write_text("keep me")
    result = _manage(store, "backup", str(existing))
    assert result.returncode == 1
    assert "already exists" in result.stderr
    assert existing.read_text() == "keep me"


def _corrupt_files(tmp_path: Path, good: Path) -> dict[str, Path]:
    random_bytes = tmp_path / "random.backup"
    random_bytes.write_bytes(os.urandom(64 * 1024))
    truncated = tmp_path / "truncated.backup"
    data = good.read_bytes()
    truncated.write_bytes(data[: len(data) * 2 // 3])
    foreign = tmp_path / "foreign.backup"
    if on_postgres():
        foreign.write_bytes(b"PGDMP" + os.urandom(4096))
    else:
        conn = sqlite3.connect(foreign)
        conn.execute("CREATE TABLE notes (text)")
        conn.commit()
        conn.close()
    return {"random bytes": random_bytes, "truncated": truncated, "foreign": foreign}


def test_a_restore_of_a_corrupt_file_is_refused_and_changes_nothing(store, tmp_path):
    env = store
    python(
        "-c",
        "import django; django.setup(); from sessions_app.models import Channel; "
        "Channel.objects.create(name='before-restore')",
        env=env,
    )
    good = tmp_path / "good.backup"
    assert _manage(env, "backup", str(good), "--no-progress").returncode == 0
    db = tmp_path / "hermes.sqlite3"
    before = db.read_bytes() if db.exists() else None
    for what, path in _corrupt_files(tmp_path, good).items():
        result = _manage(env, "restore", str(path))
        assert result.returncode == 1, what
        assert "refused, nothing was changed" in result.stderr, (what, result.stderr)
        assert "Traceback" not in result.stderr, what
    if before is not None:
        assert db.read_bytes() == before
        assert not list(tmp_path.glob("hermes.sqlite3.before-restore-*"))
        assert not list(tmp_path.glob("*.restoring"))
    names = python(
        "-c",
        "import django; django.setup(); from sessions_app.models import Channel; "
        "print(sorted(Channel.objects.values_list('name', flat=True)))",
        env=env,
    )
    assert names.strip() == "['before-restore', 'load']"


@pytest.mark.skipif(on_postgres(), reason="checks of the SQLite copy itself")
def test_a_copy_that_does_not_hold_the_snapshots_rows_is_rejected(store, tmp_path):
    from hermes_site.upkeep.backup import BackupError, verify_sqlite

    good = tmp_path / "good.backup"
    assert _manage(store, "backup", str(good), "--no-progress").returncode == 0
    copy = tmp_path / "copy.sqlite3"
    shutil.copyfile(good, copy)
    held = verify_sqlite(copy)
    assert (held.messages, held.sessions) == (0, 0)
    with pytest.raises(BackupError, match="holds 0 messages and 0 sessions; the database held 5"):
        verify_sqlite(copy, expected=(5, 0))
