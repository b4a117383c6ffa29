"""Writes an answer need not wait for run on the process's own thread, after the answer
(core.later): an API key's last use among them. Its connection's keeping and closing, and a
forked child's own thread, are in tests/test_ranked.py (the refreshes a search asks for)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_q.conf import Conf

from core import later
from sessions_app.keys import authenticate_key, create_channel
from sessions_app.models import ApiKey


@pytest.fixture
def off_the_request_path(monkeypatch):
    """As deployed: django-q2 not synchronous, so the work goes to the thread."""
    monkeypatch.setattr(Conf, "SYNC", False)
    yield
    assert later.drain(10)


def test_work_runs_in_order_on_one_thread_and_a_failure_is_logged_not_raised(
    off_the_request_path, caplog
):
    ran: list[tuple[int, str]] = []

    def fail() -> None:
        raise RuntimeError("the broker is down")

    for n in range(3):
        later.run_later(lambda n=n: ran.append((n, threading.current_thread().name)), "noting")
        if n == 1:
            later.run_later(fail, "queueing something")
    assert later.drain(10)
    assert ran == [(0, "hermes-later"), (1, "hermes-later"), (2, "hermes-later")]
    assert "queueing something failed" in caplog.text and "the broker is down" in caplog.text


def test_where_tasks_run_where_asked_the_work_runs_at_once_in_the_caller(monkeypatch):
    monkeypatch.setattr(Conf, "SYNC", True)
    ran: list[str] = []
    later.run_later(lambda: ran.append(threading.current_thread().name), "noting")
    assert ran == [threading.current_thread().name]


@pytest.mark.django_db(transaction=True)  # the thread's connection sees what the test wrote
def test_a_key_s_last_use_is_written_after_the_answer_and_once_for_requests_before_it_lands(
    off_the_request_path,
):
    key = create_channel("later-touch")[1].plaintext
    gate = threading.Event()
    later.run_later(lambda: gate.wait(10), "holding the thread")  # the write cannot land yet
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert authenticate_key(key) is not None
    # Each request: one statement, the read; no write on its path.
    assert len(queries.captured_queries) == 5
    assert not [q for q in queries.captured_queries if "UPDATE" in q["sql"].upper()]
    assert later._queue is not None and later._queue.unfinished_tasks == 2  # the gate, one touch
    gate.set()
    assert later.drain(10)
    found = ApiKey.objects.get(prefix=key.split("_")[1])
    assert found.last_used_at is not None
    # Written: a request within the minute hands over nothing.
    authenticate_key(key)
    assert later._queue.unfinished_tasks == 0


@pytest.mark.django_db(transaction=True)
def test_a_last_use_that_could_not_be_written_is_handed_over_again_by_the_next_request(
    off_the_request_path, monkeypatch, caplog
):
    key = create_channel("later-touch-failed")[1].plaintext
    real_update = ApiKey.objects.filter(pk=0).update.__func__
    fails = [1]

    def update(self, **values):
        if fails and "last_used_at" in values:
            fails.pop()
            raise RuntimeError("database is locked")
        return real_update(self, **values)

    monkeypatch.setattr(type(ApiKey.objects.filter(pk=0)), "update", update)
    authenticate_key(key)
    assert later.drain(10)
    assert "recording an API key's last use failed" in caplog.text
    assert ApiKey.objects.get(prefix=key.split("_")[1]).last_used_at is None
    authenticate_key(key)  # the same stale last use, but nothing is on its way: handed again
    assert later.drain(10)
    assert ApiKey.objects.get(prefix=key.split("_")[1]).last_used_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_search_request_writes_nothing_on_its_path_and_its_writes_land_after(
    off_the_request_path, make_gateway, monkeypatch
):
    """Over the API, a key's first use of the minute and a lookup that asks for its query's
    best rows: the request's own connection sends no write; the writes come after."""
    import django_q.tasks

    from search import ranked

    queued: list[str] = []
    monkeypatch.setattr(django_q.tasks, "async_task", lambda *a, **k: queued.append(a[0]))
    monkeypatch.setattr(ranked, "SLOW_SECONDS", -1.0)  # every lookup asks
    monkeypatch.setattr(ranked, "EMPTY_SLOW_SECONDS", -1.0)
    ranked._asked.clear()
    gateway = make_gateway("later-search")
    from sessions_app import services

    session = services.open_session(gateway.channel, model="gpt-4o", system_prompt="s").session
    services.append_messages(
        session, [{"role": "user", "content": "anything at all"}], run_hooks=False
    )
    with CaptureQueriesContext(connection) as queries:
        response = gateway.get("/search", q="anything")
    assert response.status_code == 200, response.content
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert later.drain(10)
    # The refresh it asked for, if the lookup asked (tests/test_ranked.py holds that it is queued
    # off the path; in the whole suite an earlier test's state can keep this one from asking).
    assert set(queued) <= {"search.tasks.refresh_ranked"}
    assert ApiKey.objects.get(channel=gateway.channel).last_used_at is not None
