"""A web thread's database connection is opened and warmed before a request needs it: at a
worker's start (hermes_site.warm.warm_threads) and after the answer that closed it for its age
(rewarm_if_closed, from hermes_site.gunicorn_worker). The warm-up runs the search's index routes
on it (search.service.warm_routes) and leaves no trace: no write, no refresh asked, no metric."""

from __future__ import annotations

from concurrent import futures
from types import SimpleNamespace

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from core.instruments import SEARCH_SECONDS
from hermes_site import warm as site_warm
from hermes_site.gunicorn_worker import JsonErrorsWorker
from search import ranked
from search.service import WARM_QUERIES, warm_routes
from search.warm import warm_connection
from tests.processes import isolated_env, python

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


def _searches_recorded() -> float:
    return sum(
        sample.value
        for metric in SEARCH_SECONDS.collect()
        for sample in metric.samples
        if sample.name.endswith("_count")
    )


@pytest.mark.django_db
def test_warming_runs_every_index_route_of_its_queries_and_never_the_scan_nor_a_write(
    monkeypatch,
):
    from search.backends import choice

    scanned: list = []
    routes: list[str] = []
    backend = choice.current()
    real_fts = backend.run_fts

    def run_fts(route, *args, **kwargs):
        routes.append(route.index)
        return real_fts(route, *args, **kwargs)

    monkeypatch.setattr(backend, "run_scan", lambda *args, **kwargs: scanned.append(args))
    monkeypatch.setattr(backend, "run_fts", run_fts)
    with CaptureQueriesContext(connection) as queries:
        warm_routes()
    # Each index route, within a channel and without one; never the scan.
    assert sorted(set(routes)) == ["bigram", "trigram", "words"] and "scan" not in routes
    sent = [q["sql"] for q in queries.captured_queries]
    assert sent, "the warm-up ran no statement"
    assert not [sql for sql in sent if sql.lstrip().upper().startswith(WRITES)]
    if connection.vendor == "postgresql":
        # The words and bigram routes' lookup, the trigram route's, page one's hits and windows.
        for function in (
            "hermes_ranked_head_or_page",
            "hermes_trigram_head_or_first",
            "hermes_page_hits",
            "hermes_page_nearby",
        ):
            assert any(function in sql for sql in sent), function
    else:
        for table in ("search_fts_words", "search_fts_bigram", "search_fts_trigram"):
            assert any(table in sql for sql in sent), table
    # The bounded scan reads the newest rows one by one (a search's CJK query that its index
    # route found nowhere goes on to it): never here.
    assert scanned == []


@pytest.mark.django_db
def test_warming_asks_no_refresh_and_records_no_search(monkeypatch):
    from search import service

    # Each route's lookup asks for its query's best rows to be kept, as a slow one does.
    real = service._run

    def asking(route, filters, limit, offset):
        answer = real(route, filters, limit, offset)
        ranked.request(route.index, route.expression, route.phrases, filters.channel_id)
        return answer

    monkeypatch.setattr(service, "_run", asking)
    handed: list = []
    monkeypatch.setattr(ranked, "_enqueue", lambda batch: handed.append(batch))
    ranked._asked.clear()
    before = _searches_recorded()
    warm_routes()
    ranked.flush()  # what a search does after its answer: nothing is left to hand over
    assert handed == []
    assert _searches_recorded() == before
    # A search of the same text asks, and is recorded.
    ranked._asked.clear()
    service.search(WARM_QUERIES[0])
    assert handed and _searches_recorded() == before + 1


@pytest.mark.django_db
def test_a_database_that_is_away_leaves_the_connection_to_the_first_request(monkeypatch, caplog):
    def away():
        raise OperationalError("connection refused")

    with monkeypatch.context() as patched, caplog.at_level("WARNING", logger="search.warm"):
        patched.setattr(connection, "ensure_connection", away)
        assert warm_connection() is False
    assert "(its first search will): connection refused" in caplog.text
    assert "Traceback" not in caplog.text


# In a process of its own, on a database file (or PostgreSQL) as served: a pool's threads, each
# connection opened by warm_threads, then one closed as a request's end closes an aged one and
# warmed again by rewarm_if_closed on its own thread.
THREADS_SCRIPT = """
import threading
from concurrent import futures
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.db import connection
from hermes_site.warm import rewarm_if_closed, warm_threads

pool = futures.ThreadPoolExecutor(max_workers=3)
together = threading.Barrier(3)

def on_each(fn):
    def task():
        together.wait(10)
        return threading.get_ident(), fn()
    return [t.result(10) for t in [pool.submit(task) for _ in range(3)]]

warmed = warm_threads(pool, 3)
opened = on_each(lambda: connection.connection is not None)
closed = on_each(lambda: connection.close() or connection.connection is None)
again = on_each(lambda: (rewarm_if_closed(), connection.connection is not None))
kept = on_each(rewarm_if_closed)
on_each(lambda: connection.close())
print(warmed, len({i for i, _ in opened}), all(o for _, o in opened), all(c for _, c in closed),
      all(a == (True, True) for _, a in again), any(k for _, k in kept))
"""


@pytest.mark.slow  # a process: 3 s
def test_a_worker_s_threads_each_open_a_warmed_connection_and_warm_it_again_once_closed(
    tmp_path,
):
    with isolated_env(tmp_path) as env:
        out = python("-c", THREADS_SCRIPT, env=env, timeout=120)
    # 3 warmed on 3 threads, each open; closed; each warmed again; none again while open.
    assert out.split() == ["3", "3", "True", "True", "True", "False"], out


# A connection past its age, as after a thread sat idle an hour: a request's start and end as
# Django signals them, then what the worker does after the answer.
AGED_SCRIPT = """
import sys, time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.core.signals import request_finished, request_started
from django.db import connection
from hermes_site.warm import close_aged_after_answers, rewarm_if_closed

applies = close_aged_after_answers()
connection.ensure_connection()
old = connection.connection
connection.close_at = time.monotonic() - 1
request_started.send(sender=None)
used = connection.connection is old
request_finished.send(sender=None)
closed = connection.connection is None
rewarm_if_closed()
print(applies, used, closed, connection.connection not in (None, old))
"""


@pytest.mark.slow  # two processes: 6 s
def test_a_connection_past_its_age_serves_the_request_that_finds_it_and_is_replaced_after(
    tmp_path,
):
    with isolated_env(tmp_path) as env:
        out = python("-c", AGED_SCRIPT, env=env, timeout=120)
    # Used by that request (not reopened at its start), closed at its end, warmed anew after.
    assert out.split() == ["True", "True", "True", "True"], out
    (tmp_path / "off").mkdir()
    with isolated_env(tmp_path / "off", server="  warm_connections: false\n") as env:
        out = python("-c", AGED_SCRIPT, env=env, timeout=120)
    # Without the warm-up, as Django does it: closed at the start, so that request opens one.
    assert out.split() == ["False", "False", "True", "False"], out


def test_without_warm_connections_a_worker_starts_its_threads_as_gunicorn_does(hermes_config):
    hermes_config(server={"warm_connections": False})
    pool = futures.ThreadPoolExecutor(max_workers=2)
    try:
        assert site_warm.warm_threads(pool, 2) == 0
        assert len(pool._threads) == 0  # none started: the first request starts one
    finally:
        pool.shutdown()


@pytest.fixture
def closed(monkeypatch):
    """This thread's connection as rewarm_if_closed sees it, closed (the tests' in-memory SQLite
    database ignores a close), and the warm-up it would run, recorded."""
    monkeypatch.setattr(site_warm, "connection", SimpleNamespace(connection=None))
    monkeypatch.setattr(site_warm, "_failed_at", None)
    tries: list[bool] = []
    outcome = [True]

    def warm() -> bool:
        tries.append(outcome[0])
        return outcome[0]

    monkeypatch.setattr(site_warm, "warm_connection", warm)
    return SimpleNamespace(tries=tries, outcome=outcome)


def test_connections_per_request_or_warm_up_off_are_not_warmed_again(closed, hermes_config):
    for max_age, warm in ((0, True), (3600, False)):
        hermes_config(server={"db_conn_max_age": max_age, "warm_connections": warm})
        assert site_warm.rewarm_if_closed() is False
    assert closed.tries == []
    hermes_config(server={"db_conn_max_age": 3600, "warm_connections": True})
    assert site_warm.rewarm_if_closed() is True
    assert closed.tries == [True]


def test_after_a_failed_warm_up_the_next_is_tried_only_after_a_pause(
    closed, hermes_config, monkeypatch
):
    hermes_config(server={"db_conn_max_age": 3600, "warm_connections": True})
    clock = [1000.0]
    monkeypatch.setattr(site_warm.time, "monotonic", lambda: clock[0])
    closed.outcome[0] = False
    assert site_warm.rewarm_if_closed() is False
    assert site_warm.rewarm_if_closed() is False  # within RETRY_AFTER_SECONDS: not tried
    assert len(closed.tries) == 1
    clock[0] += site_warm.RETRY_AFTER_SECONDS + 1
    closed.outcome[0] = True
    assert site_warm.rewarm_if_closed() is True
    assert len(closed.tries) == 2


def test_the_worker_hands_the_connection_back_before_it_warms_the_database_connection(
    monkeypatch,
):
    """gunicorn's poller gets the client's connection back (finish_request) first; the warm-up
    runs after, on the same thread, so the client's next request need not wait for it."""
    order: list[str] = []
    worker = object.__new__(JsonErrorsWorker)  # the request handling alone, no process
    worker.handle = lambda conn: order.append("answered") or True
    worker.finish_request = lambda conn, done: order.append(f"handed back: {done.result()}")
    worker.method_queue = SimpleNamespace(defer=lambda fn, *args: fn(*args))
    worker.log = SimpleNamespace(warning=lambda *args: order.append("warning"))
    monkeypatch.setattr(site_warm, "rewarm_if_closed", lambda: order.append("warmed"))
    worker._serve(object())
    assert order == ["answered", "handed back: True", "warmed"]

    def broken() -> None:
        raise RuntimeError("no")

    order.clear()
    monkeypatch.setattr(site_warm, "rewarm_if_closed", broken)
    worker._serve(object())
    assert order == ["answered", "handed back: True", "warning"]
