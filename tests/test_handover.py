"""Under granian a request thread's first connection is one opened and warmed ahead
(core.handover): granian starts its threads as requests come, out of the application's reach,
so none can warm its own before its first request as gunicorn's do."""

from __future__ import annotations

import json

import pytest

from core import handover
from tests.processes import isolated_env, python

# In a process of its own, on a database file (or PostgreSQL in that pass) as served: threads
# that start after the process made its connections ready, as granian's do.
HANDOVER_SCRIPT = """
import json, threading, time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.db import connection
from core import handover
from search.service import search
from search.warm import warm_connection

held = []  # threads kept alive until the end, as request threads between requests

def on_thread(fn, keep=True):
    out, done, release = [], threading.Event(), threading.Event()
    def run():
        out.append(fn())
        done.set()
        if keep:
            release.wait(60)
    thread = threading.Thread(target=run)
    thread.start()
    done.wait(60)
    if keep:
        held.append(release)
    else:
        thread.join(60)
    return out[0]

def dead(raw):
    try:
        raw.cursor().execute("SELECT 1")
    except Exception:
        return True
    return False

def wait_ready(n):
    deadline = time.monotonic() + 30
    while handover.ready() != n and time.monotonic() < deadline:
        time.sleep(0.01)
    return handover.ready()

said = {"before_enable": handover.take("default", 3600)}
handover.enable(2, warm_connection)
said["made"] = handover.prepare(2, 30)
ready = [raw for _, raw in handover._ready]
said["distinct"] = len({id(raw) for raw in ready})

def first_request():
    search("cache")  # the thread's first statement: connects
    return any(connection.connection is raw for raw in ready), handover.ready()

said["a"] = on_thread(first_request)
said["b"] = on_thread(first_request)
said["c"] = on_thread(first_request)  # none left: it opens its own

def closes_its_connection():
    search("cache")
    connection.close()
    return connection.connection is None

said["closed"] = on_thread(closes_its_connection)
said["replaced"] = wait_ready(1)
said["replacement_alive"] = not dead(handover._ready[0][1])

# A thread that ends (granian ends one idle for its timeout) hands its connection back, open.
def its_connection():
    search("cache")
    return id(connection.connection)

handover._ready.clear()
ended = on_thread(its_connection, keep=False)
said["handed_back"] = [wait_ready(1), id(handover._ready[0][1]) == ended]
said["handed_back_alive"] = not dead(handover._ready[0][1])

# A ready connection older than the age limit is closed, not handed over; a newer one is, its
# age counted from when it was opened.
old = handover._ready[0][1]
handover._ready[0] = (time.monotonic() - 7200, old)
said["old_skipped"] = on_thread(first_request)[0]
said["old_closed"] = dead(old)
handover._ready.append((time.monotonic() - 100, ready[0]))  # A's, still open: any will do
def age_left():
    connection.ensure_connection()
    return connection.close_at - time.monotonic()
said["age_left"] = on_thread(age_left)
for release in held:
    release.set()
print(json.dumps(said))
"""


@pytest.mark.slow  # a process: 3 s
def test_threads_started_later_take_the_connections_warmed_ahead_and_a_closed_one_is_replaced(
    tmp_path,
):
    with isolated_env(tmp_path) as env:
        said = json.loads(python("-c", HANDOVER_SCRIPT, env=env, timeout=120).splitlines()[-1])
    assert said["before_enable"] is None  # nothing is handed over unless the process asks
    assert said["made"] == 2 and said["distinct"] == 2
    assert said["a"] == [True, 1] and said["b"] == [True, 0]  # each took one warmed ahead
    assert said["c"] == [False, 0]  # none was left: it connected as Django does
    assert said["closed"] is True
    assert said["replaced"] == 1 and said["replacement_alive"] is True
    assert said["handed_back"] == [1, True] and said["handed_back_alive"] is True
    assert said["old_skipped"] is False and said["old_closed"] is True
    assert 3600 - 100 - 5 < said["age_left"] < 3600 - 100 + 1  # server.db_conn_max_age 3600


@pytest.fixture
def fresh(monkeypatch):
    """The module's state as in a process that has not enabled it."""
    monkeypatch.setattr(
        handover, "_state", {"target": 0, "making": 0, "failed_at": None, "warm": None}
    )
    monkeypatch.setattr(handover, "_ready", handover.deque())
    return handover


def test_nothing_is_taken_or_made_where_the_process_did_not_enable_it(fresh):
    assert fresh.take("default", 3600) is None
    assert fresh.replace("default") is False


def test_a_failed_warm_up_makes_nothing_says_why_and_pauses_the_replacements(fresh, caplog):
    fresh.enable(2, lambda: False)
    assert fresh.prepare(2, 10) == 0 and fresh.ready() == 0
    assert fresh._state["making"] == 0
    assert fresh.replace("default") is False  # within RETRY_AFTER_SECONDS of the failure

    def broken() -> bool:
        raise RuntimeError("the disk is gone")

    fresh.enable(2, broken)
    fresh._state["failed_at"] = None
    with caplog.at_level("WARNING", logger="core.handover"):
        assert fresh.prepare(1, 10) == 0
    assert "preparing a database connection failed: the disk is gone" in caplog.text
    assert "Traceback" not in caplog.text


def test_replacements_keep_no_more_ready_than_the_threads(fresh, monkeypatch):
    made: list[int] = []

    class Thread:
        def __init__(self, target, args, name, daemon):
            self.target, self.args = target, args

        def start(self) -> None:
            made.append(1)

    monkeypatch.setattr(handover.threading, "Thread", Thread)
    fresh.enable(2, lambda: True)
    assert fresh.replace("default") is True
    assert fresh.replace("default") is True
    assert fresh.replace("default") is False  # two being made already
    assert fresh.replace("other") is False  # only the default database's
    assert len(made) == 2


def test_a_closed_connection_is_replaced_only_where_connections_are_kept(fresh, monkeypatch):
    """Where connections are per request (CONN_MAX_AGE 0) every request's end closes one: a
    warm-up after each would double the database's work."""
    from core.handover import TakesHandedOver

    class Base:
        def close(self) -> None:
            self.connection = None

    class Wrapper(TakesHandedOver, Base):
        alias = "default"

    asked: list[str] = []
    monkeypatch.setattr(handover, "replace", lambda alias: asked.append(alias) or True)
    for max_age, replaced in ((0, []), (3600, ["default"]), (None, ["default"])):
        asked.clear()
        wrapper = Wrapper()
        wrapper.settings_dict = {"CONN_MAX_AGE": max_age}
        wrapper.connection = object()
        wrapper.close()
        assert asked == replaced, max_age
        wrapper.close()  # closing a closed one asks nothing
        assert asked == replaced, max_age


def test_only_a_connection_between_transactions_is_handed_back_and_no_more_than_the_target(
    fresh,
):
    import sqlite3
    from types import SimpleNamespace

    fresh.enable(1, lambda: True)
    busy = sqlite3.connect(":memory:")
    busy.execute("CREATE TABLE t (x)")
    busy.execute("INSERT INTO t VALUES (1)")  # a transaction left open
    wrapper = SimpleNamespace(connection=busy, handover_opened=5.0)
    assert fresh.give_back(wrapper) is False and wrapper.connection is busy
    busy.commit()
    assert fresh.give_back(wrapper) is True and wrapper.connection is None
    assert list(fresh._ready) == [(5.0, busy)]
    spare = sqlite3.connect(":memory:")
    assert fresh.give_back(SimpleNamespace(connection=spare)) is False  # one is the target
    with pytest.raises(sqlite3.ProgrammingError):
        spare.execute("SELECT 1")  # closed instead
    closed = sqlite3.connect(":memory:")
    closed.close()
    fresh._ready.clear()
    assert fresh.give_back(SimpleNamespace(connection=closed)) is False
