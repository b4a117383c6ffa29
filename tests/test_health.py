"""/healthz and /readyz: JSON without a key, 503 with a reason per failed check, never a 500,
nothing secret."""

from __future__ import annotations

import json
import socket
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from hermes_site import health


def _finished_task(seconds_ago: float) -> None:
    from django_q.models import Task

    when = timezone.now() - timedelta(seconds=seconds_ago)
    Task.objects.create(
        id=uuid.uuid4().hex,
        name="idle sweep",
        func="compression.tasks.idle_sweep",
        started=when,
        stopped=when,
    )


def test_healthz_answers_without_a_key_or_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_is_ready_when_a_worker_finished_a_task_within_the_last_minutes(client, db):
    _finished_task(30)
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "migrations", "search_indexes", "worker", "broker"}
    assert all(check == {"ok": True} for check in body["checks"].values())


@pytest.mark.parametrize("seconds_ago", [None, 600])
def test_readyz_says_no_worker_is_taking_tasks(client, db, seconds_ago):
    if seconds_ago is not None:
        _finished_task(seconds_ago)
    response = client.get("/readyz")
    assert response.status_code == 503
    worker = response.json()["checks"]["worker"]
    assert worker["ok"] is False and "manage.py worker" in worker["problem"]


def test_a_database_that_does_not_answer_is_a_503_with_a_reason_and_no_secret(
    client, db, monkeypatch
):
    def down():
        raise OperationalError(f"unable to open database file {settings.DATABASES['default']}")

    monkeypatch.setitem(health.CHECKS, "database", down)
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"] == {"database": {"ok": False, "problem": "the database does not answer"}}
    text = json.dumps(body)
    assert str(settings.DATABASES["default"]["NAME"]) not in text and "Traceback" not in text


def test_a_check_that_cannot_run_fails_without_a_500(client, db, monkeypatch):
    _finished_task(10)
    monkeypatch.setitem(health.CHECKS, "broker", lambda: 1 / 0)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == {
        "ok": False,
        "problem": "the check could not run; see the service log",
    }


def test_readyz_names_missing_search_indexes(client, db):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip(
            "drops SQLite's FTS5 triggers; PostgreSQL's indexes are checked by reindex tests"
        )
    _finished_task(10)
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER search_fts_ai")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "manage.py reindex" in response.json()["checks"]["search_indexes"]["problem"]


def test_a_migration_not_applied_is_a_503_with_its_one_line_reason(client, db):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.db.migrations.recorder import MigrationRecorder

    _finished_task(10)
    app, name = MigrationExecutor(connection).loader.graph.leaf_nodes()[0]
    MigrationRecorder(connection).record_unapplied(app, name)  # undone with the test's transaction
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["migrations"] == {
        "ok": False,
        "problem": "1 migration(s) not applied: run manage.py migrate",
    }
    assert [n for n, check in body["checks"].items() if not check["ok"]] == ["migrations"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def test_a_redis_broker_that_refuses_connections_is_a_503_saying_so(client, db, monkeypatch):
    from django_q.conf import Conf

    if Conf.ORM:
        pytest.skip("the suite runs on the ORM broker; the Redis one runs with HERMES_BROKER_URL")
    _finished_task(10)
    monkeypatch.setattr(Conf, "REDIS", f"redis://127.0.0.1:{_closed_port()}/0")
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["broker"] == {"ok": False, "problem": "the task broker does not answer"}
    assert checks["database"] == {"ok": True}


def test_an_orm_broker_whose_queue_table_cannot_be_read_is_a_503_saying_so(client, db):
    from django.db import connection
    from django_q.conf import Conf
    from django_q.models import OrmQ

    if not Conf.ORM:
        pytest.skip(
            "the suite runs on the Redis broker; the ORM one runs without HERMES_BROKER_URL"
        )
    _finished_task(10)
    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute(f"ALTER TABLE {OrmQ._meta.db_table} RENAME TO hermes_gone_ormq")
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["broker"] == {"ok": False, "problem": "the task broker does not answer"}
    assert checks["database"] == {"ok": True}
