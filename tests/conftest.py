from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from core.config import HermesConfig, parse_config
from sessions_app.keys import create_channel
from sessions_app.models import Channel


class Gateway:
    """A gateway's view of the API: its channel, its key, JSON in and out."""

    def __init__(self, channel: Channel, key: str) -> None:
        self.channel = channel
        self.key = key
        self.client = Client()

    def _headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.key}"}

    def get(self, path: str, **params: Any):
        return self.client.get(f"/api/v1{path}", params, **self._headers())

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None):
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        return self.client.post(
            f"/api/v1{path}", data, content_type="application/json", **self._headers()
        )

    def put(self, path: str, body: Any):
        return self.client.put(
            f"/api/v1{path}", json.dumps(body), content_type="application/json", **self._headers()
        )

    def delete(self, path: str):
        return self.client.delete(f"/api/v1{path}", **self._headers())

    def open(self, **fields: Any) -> dict:
        response = self.post("/sessions", {"model": "gpt-4o", **fields})
        assert response.status_code in (200, 201), response.content
        return response.json()


@pytest.fixture
def make_gateway(db) -> Callable[[str], Gateway]:
    def make(name: str) -> Gateway:
        channel, issued = create_channel(name)
        return Gateway(channel, issued.plaintext)

    return make


@pytest.fixture
def gateway(make_gateway) -> Gateway:
    return make_gateway("telegram")


@pytest.fixture
def model_server():
    """The loopback OpenAI-compatible model (compression.testing.fake_model), scriptable."""
    from compression.testing.fake_model import FakeModelServer

    with FakeModelServer() as server:
        yield server


@pytest.fixture
def summariser(hermes_config, model_server):
    """The service configured to summarise with the loopback model, with short timeouts;
    ``summariser(**compression)`` sets more ``compression`` keys."""

    def configure(**compression):
        return hermes_config(
            auxiliary={"compression": {"model": "fake-summary", "base_url": model_server.base_url}},
            compression={
                "context_timeout_seconds": 2,
                "context_total_ceiling_seconds": 5,
                **compression,
            },
        )

    configure()
    return configure


@pytest.fixture
def channel(db):
    return create_channel("engine")[0]


@pytest.fixture
def hermes_config(settings) -> Callable[..., HermesConfig]:
    """Replace the active configuration for one test: ``hermes_config(server={...})``."""

    def apply(**sections: Any) -> HermesConfig:
        config = parse_config(sections)
        settings.HERMES = config
        return config

    return apply


_DB_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """After every test that used the database: every message it left carries its session's
    channel (Message.channel is nullable only for SQLite's sake; a writer that forgets it hides
    its rows from every gateway's search)."""
    outcome = yield
    uses_db = item.get_closest_marker("django_db") or _DB_FIXTURES & set(item.fixturenames)
    if outcome.excinfo is not None or not uses_db:
        return
    from django.db.models import F

    from sessions_app.models import Message

    wrong = Message.objects.exclude(channel_id=F("session__channel_id")) | Message.objects.filter(
        channel__isnull=True
    )
    found = list(wrong.values_list("session_id", "position")[:5])
    assert not found, f"messages without their session's channel: {found}"


@pytest.fixture(autouse=True)
def _no_refresh_for_slowness(monkeypatch):
    """A lookup slower than search.ranked.SLOW_SECONDS asks the worker to keep its query's best
    rows, which the tests' synchronous queue does at once: whether a lookup is that slow depends
    on the machine's load, so here it never is, and tests/test_ranked.py sets it where it tests
    it. (The asks of a query that fills its window do not depend on timing.)"""
    from search import ranked

    monkeypatch.setattr(ranked, "SLOW_SECONDS", float("inf"))
    monkeypatch.setattr(ranked, "EMPTY_SLOW_SECONDS", float("inf"))
    ranked._asked.clear()
    ranked._pending.asks = []  # a test that called a backend directly queued nothing
