"""A kept PostgreSQL connection's health check (core.postgresql_backend): nothing sent while the
connection is good, and a connection the server ended is closed and opened again."""

from __future__ import annotations

import select
import time

import pytest
from django.db import connection, connections

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="PostgreSQL only: core.postgresql_backend"
    ),
]


@pytest.fixture
def kept():
    """A connection of its own, as a web thread keeps one between requests (the test's own runs
    inside the test's transaction)."""
    wrapper = connections.create_connection("default")
    wrapper.settings_dict["CONN_HEALTH_CHECKS"] = True
    wrapper.settings_dict["CONN_MAX_AGE"] = 600  # kept (the tests' settings keep none)
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _last_statement(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def _new_request(wrapper) -> None:
    """What Django does at a request's start and at its first statement."""
    wrapper.close_if_unusable_or_obsolete()
    wrapper.close_if_health_check_failed()


@pytest.mark.django_db
def test_a_good_kept_connection_is_checked_without_a_statement(kept):
    assert kept.settings_dict["ENGINE"] == "core.postgresql_backend"
    with kept.cursor() as cursor:
        cursor.execute("SELECT 'the last thing said'")
        pid = kept.connection.info.backend_pid
    _new_request(kept)
    assert kept.connection is not None and kept.health_check_done
    assert kept.connection.info.backend_pid == pid
    # Django's own check would have sent SELECT 1, the last statement this backend ran.
    assert _last_statement(pid) == "SELECT 'the last thing said'"


@pytest.mark.django_db
def test_a_connection_the_server_ended_is_opened_again_at_the_next_request(kept):
    pid = kept.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cursor.fetchone()[0]
    socket = kept.connection.fileno()
    deadline = time.monotonic() + 10
    while not select.select([socket], [], [], 0.05)[0]:  # the server's goodbye arrives
        assert time.monotonic() < deadline, "the ended connection never said so"
    _new_request(kept)
    assert kept.connection is None  # closed, not handed to the request
    with kept.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


@pytest.mark.django_db
def test_something_unasked_on_a_good_connection_is_checked_by_asking_the_server(kept):
    """A notification waiting on the socket is not taken for a goodbye: the server is asked,
    as Django asks, and the connection kept."""
    pid = kept.connection.info.backend_pid
    with kept.cursor() as cursor:
        cursor.execute("LISTEN hermes_backend_test")
    other = connections.create_connection("default")  # autocommit: the NOTIFY goes at once
    try:
        with other.cursor() as cursor:
            cursor.execute("NOTIFY hermes_backend_test")
    finally:
        other.close()
    socket = kept.connection.fileno()
    deadline = time.monotonic() + 10
    while not select.select([socket], [], [], 0.05)[0]:
        assert time.monotonic() < deadline, "the notification never arrived"
    _new_request(kept)
    assert kept.connection is not None and kept.connection.info.backend_pid == pid
    assert _last_statement(pid) == "SELECT 1"  # asked, as Django's own check does
