"""Sessions whose model runs through a Codex app server (T7a): native, managed and off, against a
loopback app server speaking the real stdio JSON-RPC protocol
(compression/testing/fake_codex.py)."""

from __future__ import annotations

import json
import sys

import pytest

from compression.models import CompressionEvent
from sessions_app.models import Message, Session
from tests.test_compression import turn

FAKE = (sys.executable, "-m", "compression.testing.fake_codex")


@pytest.fixture
def app_server(tmp_path, monkeypatch):
    log = tmp_path / "codex.jsonl"
    monkeypatch.setenv("FAKE_CODEX_LOG", str(log))

    def received() -> list[dict]:
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    return received


def codex(hermes_config, mode: str, **compression):
    return hermes_config(
        compression={
            "codex_app_server_auto": mode,
            "codex_app_server_command": list(FAKE),
            "codex_app_server_timeout_seconds": 20,
            **compression,
        }
    )


def open_codex(gateway, thread: str = "thr_42") -> str:
    body = gateway.open(system_prompt="sys", context_window=8192, codex_thread_id=thread)
    assert body["codex_thread_id"] == thread
    return body["id"]


def append_over_threshold(gateway, sid: str, capture, n: int = 0) -> list[dict]:
    """A turn with the usage the gateway reports: over the session's threshold (6,963)."""
    with capture(execute=True):
        response = gateway.post(
            f"/sessions/{sid}/messages",
            {"messages": turn(n), "usage": {"prompt_tokens": 7_500, "completion_tokens": 20}},
        )
    assert response.status_code == 201, response.content
    return response.json()["decisions"]


def test_managed_mode_asks_the_app_server_to_compact_the_thread(
    gateway, hermes_config, app_server, django_capture_on_commit_callbacks
):
    codex(hermes_config, "managed")
    sid = open_codex(gateway)
    decisions = append_over_threshold(gateway, sid, django_capture_on_commit_callbacks)
    assert decisions[0]["action"] == "queued"
    sent = app_server()
    assert [m["method"] for m in sent] == [
        "initialize",
        "initialized",
        "thread/resume",
        "thread/compact/start",
    ]
    assert all("jsonrpc" not in m for m in sent)
    assert sent[3]["params"] == {"threadId": "thr_42"}
    event = CompressionEvent.objects.get(session_id=sid, outcome="compressed")
    assert (event.path, event.trigger) == ("codex_managed", "threshold_post")
    assert "compacted thread thr_42" in event.reason
    # our transcript is untouched: Codex owns the context, we keep every row live and searchable
    assert not Message.objects.filter(session_id=sid, is_summary=True).exists()
    assert Session.objects.get(pk=sid).compressions == 1


def test_native_mode_leaves_automatic_compaction_to_codex_and_records_what_it_reports(
    gateway, hermes_config, app_server, django_capture_on_commit_callbacks
):
    codex(hermes_config, "native")
    sid = open_codex(gateway)
    decisions = append_over_threshold(gateway, sid, django_capture_on_commit_callbacks)
    assert decisions[0]["action"] == "locked"
    assert "Codex compacts this session's thread itself" in decisions[0]["reason"]
    assert app_server() == []
    item = {"type": "contextCompaction", "id": "7d1c"}
    notifications = [
        {"method": "item/started", "params": {"threadId": "thr_42", "turnId": "t1", "item": item}},
        {
            "method": "item/completed",
            "params": {"threadId": "thr_42", "turnId": "t1", "item": item},
        },
        {
            "method": "item/completed",
            "params": {"threadId": "thr_42", "item": {"type": "agentMessage", "id": "m"}},
        },
        {"method": "thread/compacted", "params": {"threadId": "thr_42", "turnId": "t2"}},
    ]
    first = gateway.post(f"/sessions/{sid}/codex/notifications", {"notifications": notifications})
    assert first.json() == {"recorded": 2, "compressions": 2}
    again = gateway.post(f"/sessions/{sid}/codex/notifications", {"notifications": notifications})
    assert again.json()["recorded"] == 0, "each compaction is recorded once"
    events = CompressionEvent.objects.filter(session_id=sid, path="codex_native")
    assert events.count() == 2 and {e.trigger for e in events} == {"codex"}


def test_a_manual_compression_of_a_native_session_asks_the_app_server(
    gateway, hermes_config, app_server
):
    codex(hermes_config, "native")
    sid = open_codex(gateway)
    response = gateway.post(f"/sessions/{sid}/compress", {"wait": True})
    assert response.status_code == 200 and response.json()["outcome"] == "compressed"
    assert [m["method"] for m in app_server()][-1] == "thread/compact/start"
    event = CompressionEvent.objects.get(session_id=sid)
    assert (event.path, event.trigger) == ("codex_managed", "manual_api")


def test_off_mode_compacts_nothing_automatically(
    gateway, hermes_config, app_server, django_capture_on_commit_callbacks
):
    codex(hermes_config, "off")
    sid = open_codex(gateway)
    decisions = append_over_threshold(gateway, sid, django_capture_on_commit_callbacks)
    assert "codex_app_server_auto: off" in decisions[0]["reason"]
    assert app_server() == []


@pytest.mark.parametrize(
    ("mode", "thread", "command", "error"),
    [
        ("error", "thr_42", FAKE, "thread/compact/start failed: thread not found"),
        ("ok", "missing", FAKE, "thread not found: missing"),
        ("silent", "thr_42", FAKE, "did not answer in time"),
        ("ok", "thr_42", ("/nonexistent/codex", "app-server"), "cannot start the Codex app server"),
    ],
)
@pytest.mark.slow
def test_an_app_server_that_fails_records_a_failure_and_starts_the_cooldown(
    gateway, hermes_config, app_server, monkeypatch, mode, thread, command, error
):
    monkeypatch.setenv("FAKE_CODEX_MODE", mode)
    hermes_config(
        compression={
            "codex_app_server_auto": "managed",
            "codex_app_server_command": list(command),
            "codex_app_server_timeout_seconds": 2,
        }
    )
    sid = open_codex(gateway, thread)
    response = gateway.post(f"/sessions/{sid}/compress", {"wait": True})
    assert response.json()["outcome"] == "failed"
    event = CompressionEvent.objects.get(session_id=sid)
    assert event.outcome == "failed" and error in event.error, event.error
    session = Session.objects.get(pk=sid)
    assert session.cooldown_until is not None and session.failure_streak == 1


def test_notifications_for_a_session_without_a_codex_thread_are_refused(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    response = gateway.post(
        f"/sessions/{sid}/codex/notifications",
        {"notifications": [{"method": "thread/compacted", "params": {}}]},
    )
    assert response.status_code == 409
    assert "codex_thread_id" in response.json()["detail"]


def test_a_managed_session_is_not_compacted_on_every_append(
    gateway, hermes_config, app_server, django_capture_on_commit_callbacks
):
    """A Codex compaction leaves our rows as they are: without reported usage nothing fires, and
    usage that stays high runs into the frequency guard instead of a compaction per message."""
    config = codex(hermes_config, "managed")
    sid = open_codex(gateway)
    with django_capture_on_commit_callbacks(execute=True):
        quiet = gateway.post(
            f"/sessions/{sid}/messages",
            {"messages": [m for n in range(40) for m in turn(n, size=400)]},
        ).json()["decisions"][0]
    assert quiet["action"] == "skip" and "usage its gateway reports" in quiet["reason"]
    actions = [
        append_over_threshold(gateway, sid, django_capture_on_commit_callbacks, n)[0]["action"]
        for n in range(40, 48)
    ]
    done = CompressionEvent.objects.filter(session_id=sid, outcome="compressed").count()
    assert done == config.compression.anti_thrash_max_compressions + 1
    assert "locked" in actions and Session.objects.get(pk=sid).thrash_lock_until is not None


def test_managed_mode_over_websocket_talks_to_the_gateways_app_server(
    gateway, hermes_config, app_server
):
    from compression.testing.fake_codex import websocket_server

    with websocket_server() as url:
        codex(hermes_config, "managed", codex_app_server_url=url)
        sid = open_codex(gateway)
        response = gateway.post(f"/sessions/{sid}/compress", {"wait": True})
    assert response.json()["outcome"] == "compressed"
    assert [m["method"] for m in app_server()] == [
        "initialize",
        "initialized",
        "thread/resume",
        "thread/compact/start",
    ]


def test_an_unreachable_websocket_app_server_is_a_recorded_failure(gateway, hermes_config):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    codex(hermes_config, "managed", codex_app_server_url=f"ws://127.0.0.1:{port}")
    sid = open_codex(gateway)
    assert gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()["outcome"] == "failed"
    event = CompressionEvent.objects.get(session_id=sid)
    assert "cannot connect to the Codex app server" in event.error


def test_odd_notifications_are_ignored_not_an_error(gateway, hermes_config):
    codex(hermes_config, "native")
    sid = open_codex(gateway)
    odd = [
        {"method": "item/completed", "params": "not an object"},
        {"method": "item/completed", "params": {"threadId": "thr_42", "item": ["x"]}},
        {"params": {"threadId": "thr_42"}},
        {"method": "thread/compacted", "params": {"threadId": "thr_other", "turnId": "t"}},
    ]
    response = gateway.post(f"/sessions/{sid}/codex/notifications", {"notifications": odd})
    assert response.status_code == 200 and response.json()["recorded"] == 0


def test_notifications_with_unstorable_or_huge_text_answer_422_or_are_bounded(
    gateway, hermes_config
):
    codex(hermes_config, "native")
    sid = open_codex(gateway)
    url = f"/sessions/{sid}/codex/notifications"
    for bad in ("turn\x00id", "\ud800"):
        note = {"method": "thread/compacted", "params": {"threadId": "thr_42", "turnId": bad}}
        response = gateway.post(url, {"notifications": [note]})
        assert response.status_code == 422, response.content
        assert "params.turnId" in response.json()["detail"]  # the API's path, or the check's
    long = {"method": "thread/compacted", "params": {"threadId": "thr_42", "turnId": "t" * 5000}}
    response = gateway.post(url, {"notifications": [long]})
    assert response.status_code == 200 and response.json()["recorded"] == 1
    event = CompressionEvent.objects.get(session_id=sid, trigger="codex")
    assert len(event.reason) <= 300
