"""The SQLite write gate: writers queue for the one write lock instead of sleeping in SQLite's
busy handler, across threads and processes, and the gate is always given back."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connections, transaction

from core.sqlite_backend.gate import GateTimeout, WriteGate, gate_for

ALIAS = "gate_test"


@pytest.fixture
def gated_database(tmp_path, django_db_blocker):
    """A second connection alias on a SQLite file (not the test database, which is in memory
    and has no gate), with the service's backend and options."""
    settings = connections.configure_settings(
        {
            "default": {
                "ENGINE": "core.sqlite_backend",
                "NAME": str(tmp_path / "gate.sqlite3"),
                "OPTIONS": {"timeout": 0.3, "transaction_mode": "IMMEDIATE"},
            }
        }
    )["default"]
    connections.settings[ALIAS] = settings
    with django_db_blocker.unblock():
        with connections[ALIAS].cursor() as cursor:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("CREATE TABLE t (n INTEGER)")
        yield tmp_path / "gate.sqlite3"
        connections[ALIAS].close()
    del connections[ALIAS]
    del connections.settings[ALIAS]


def _in_thread(fn):
    """Run ``fn`` on another thread (its own connection) and return what it returned or raised."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as exc:  # handed back to the test
            out["error"] = exc
        finally:
            connections[ALIAS].close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    return out


def _write(n: int) -> int:
    with transaction.atomic(using=ALIAS), connections[ALIAS].cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (%s)", [n])
    return n


@contextmanager
def _another_writer_holds_the_lock(row: int | None = None) -> Iterator[threading.Event]:
    """A thread inside a write transaction (having written ``row``, if given) until the yielded
    event is set; it commits then."""
    started, finish = threading.Event(), threading.Event()

    def long_writer():
        with transaction.atomic(using=ALIAS), connections[ALIAS].cursor() as cursor:
            if row is not None:
                cursor.execute("INSERT INTO t VALUES (%s)", [row])
            started.set()
            finish.wait(10)
        connections[ALIAS].close()

    first = threading.Thread(target=long_writer)
    first.start()
    started.wait(10)
    try:
        yield finish
    finally:
        finish.set()
        first.join(10)


def test_a_second_thread_waits_its_turn_and_writes_when_the_first_commits(gated_database):
    out: dict = {}
    with _another_writer_holds_the_lock(row=1) as finish:
        waiter = threading.Thread(target=lambda: out.update(_in_thread(lambda: _write(2))))
        waiter.start()
        time.sleep(0.1)  # the waiter is now queued on the gate (its timeout is 0.3 s)
        assert not out
        finish.set()
        waiter.join(10)
    assert out == {"value": 2}
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT n FROM t ORDER BY n")
        assert [r[0] for r in cursor.fetchall()] == [1, 2]


def test_a_writer_that_waits_past_the_busy_timeout_gets_a_clear_database_is_locked(
    gated_database,
):
    with _another_writer_holds_the_lock():
        out = _in_thread(lambda: _write(2))
    assert isinstance(out["error"], OperationalError)
    assert "database is locked" in str(out["error"])
    assert "server.sqlite_busy_timeout_seconds" in str(out["error"])
    assert _in_thread(lambda: _write(3)) == {"value": 3}  # the gate was given back


def test_a_transaction_that_fails_gives_the_gate_back(gated_database):
    def failing():
        with transaction.atomic(using=ALIAS), connections[ALIAS].cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (1)")
            cursor.execute("INSERT INTO no_such_table VALUES (1)")

    assert isinstance(_in_thread(failing)["error"], OperationalError)
    assert _in_thread(lambda: _write(2)) == {"value": 2}
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT n FROM t")
        assert [r[0] for r in cursor.fetchall()] == [2]  # the failed one rolled back


def test_a_connection_closed_inside_a_transaction_gives_the_gate_back(gated_database):
    def abandoned():
        transaction.atomic(using=ALIAS).__enter__()  # never exited, as a killed request
        connections[ALIAS].close()
        return "closed"

    assert _in_thread(abandoned) == {"value": "closed"}
    assert _in_thread(lambda: _write(2)) == {"value": 2}


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def test_writers_in_other_processes_queue_on_the_gate_file(tmp_path):
    gate = WriteGate(str(tmp_path / "db.sqlite3"))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(gate.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(GateTimeout):
            gate.acquire(0.05)
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(10)
        gate.acquire(5)  # the other process let go: this one's turn
        gate.release()
    finally:
        holder.kill()
        holder.wait()


def test_a_process_forked_while_a_thread_held_the_gate_starts_with_it_free(tmp_path):
    import multiprocessing

    gate = gate_for(str(tmp_path / "db.sqlite3"))  # as the backend gets it
    gate.acquire(1)  # held by this process's thread at the fork

    def child(result):
        try:
            gate.acquire(5)  # waits for the parent's file lock, not for a copied thread lock
            gate.release()
            result.put("acquired")
        except GateTimeout:
            result.put("timed out")

    context = multiprocessing.get_context("fork")
    result = context.Queue()
    process = context.Process(target=child, args=(result,))
    process.start()
    time.sleep(0.2)
    gate.release()  # the parent lets go: the child's turn
    process.join(10)
    assert result.get(timeout=5) == "acquired"
