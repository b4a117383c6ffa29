"""/healthz and /readyz: JSON without a key, 503 with a reason per failed check, never a 500,
nothing secret."""

from __future__ import annotations

import json
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
