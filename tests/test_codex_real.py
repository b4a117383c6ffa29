"""The real Codex app server (#20 item 2): ``codex app-server`` from the pinned @openai/codex,
over stdio and over ``--listen ws://``, talking to the loopback test model through a custom model
provider (Responses API, server-sent events). For each mode -- native, managed, off -- a thread
of several turns, a compaction (Codex's own, ours through ``thread/compact/start``, a manual one),
and the service's record checked: the event, every row kept, search still finding the compacted
turns' words. The test plays the gateway (tests/codex_peer.py). Skips without Node.js or without
the package (bin/peers installs it)."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from compression.models import CompressionEvent
from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app.models import Message, Session
from tests import codex_peer

pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(codex_peer.missing() is not None, reason=str(codex_peer.missing())),
]

WORDS = ["aardvark", "bassoon", "cormorant", "dulcimer", "echidna"]
COMPACTION_PROMPT = "CONTEXT CHECKPOINT COMPACTION"  # what Codex asks a provider to summarise
SUMMARY = "Handoff summary: the user listed aardvark and bassoon (summary-mark)."


@dataclass
class Rig:
    """One real app server, the loopback model it calls, and the gateway's connection.

    Over stdio the gateway's app server runs for one turn at a time (a gateway that starts
    Codex per run): Codex 0.169 lets one process at a time hold a thread -- another process's
    ``thread/resume`` is refused with "already has an active writer" (see the test below), so
    the service's own stdio app server can only compact a thread no running one holds."""

    transport: str
    home: Path
    model: FakeModelServer
    url: str | None
    auto_compact: int
    stack: contextlib.ExitStack
    peer: codex_peer.Peer | None = None

    def service_settings(self, mode: str) -> dict[str, Any]:
        """How the service reaches this app server: its URL, or the command it starts."""
        reach = (
            {"codex_app_server_url": self.url}
            if self.url
            else {"codex_app_server_command": codex_peer.command(self.home, self.model.base_url)}
        )
        return {"codex_app_server_auto": mode, "codex_app_server_timeout_seconds": 60, **reach}

    def connect(self, thread: str | None = None) -> codex_peer.Peer:
        """The gateway's connection; a new one resumes the thread (loads it from storage)."""
        if self.peer is None:
            if self.url:
                self.peer = self.stack.enter_context(codex_peer.websocket_peer(self.url))
            else:
                self.peer = self.stack.enter_context(
                    codex_peer.stdio_peer(self.home, self.model.base_url, self.auto_compact)
                )
            if thread:
                self.peer.request("thread/resume", {"threadId": thread, "excludeTurns": True})
        return self.peer

    def release(self) -> None:
        """The gateway is done with this run: over stdio its app server exits."""
        if self.url is None and self.peer is not None:
            self.peer.close()
            self.peer = None

    def reconnect(self, thread: str) -> codex_peer.Peer:
        if self.peer is not None:
            self.peer.close()
            self.peer = None
        return self.connect(thread)

    def compaction_requests(self) -> list[Any]:
        return [r for r in self.model.requests if COMPACTION_PROMPT in str(r.body)]


@pytest.fixture
def rig(tmp_path):
    """``rig(transport, auto_compact)``: started for this test, stopped after it (startup is
    well under a second, so each test has its own CODEX_HOME and nothing leaks between them)."""
    with contextlib.ExitStack() as stack:

        def make(transport: str, auto_compact: int = codex_peer.NEVER) -> Rig:
            model = stack.enter_context(FakeModelServer())
            home = tmp_path / "codex-home"
            home.mkdir()
            url = None
            if transport == "websocket":
                url = stack.enter_context(
                    codex_peer.websocket_app_server(home, model.base_url, auto_compact)
                )
            return Rig(transport, home, model, url, auto_compact, stack)

        yield make


def usage(tokens: int) -> dict[str, int]:
    return {"input_tokens": tokens, "output_tokens": 20}


def run_turn(gateway, rig: Rig, sid: str, thread: str, n: int, capture) -> tuple[dict, list]:
    """One turn through Codex, then what a gateway does with it: append the user's words and
    Codex's reply to the session with the usage Codex reported. Returns (decision, notices)."""
    notices = rig.connect(thread).turn(thread, f"Turn {n}: remember the word {WORDS[n]}.")
    rig.release()
    (reply,) = [
        m["params"]["item"]["text"]
        for m in notices
        if m.get("method") == "item/completed" and m["params"]["item"]["type"] == "agentMessage"
    ]
    last = [m for m in notices if m.get("method") == "thread/tokenUsage/updated"][-1]
    spent = last["params"]["tokenUsage"]["last"]
    messages = [
        {"role": "user", "content": f"Turn {n}: remember the word {WORDS[n]}."},
        {"role": "assistant", "content": reply},
    ]
    with capture(execute=True):
        response = gateway.post(
            f"/sessions/{sid}/messages",
            {
                "messages": messages,
                "usage": {
                    "prompt_tokens": spent["inputTokens"],
                    "completion_tokens": spent["outputTokens"],
                },
            },
        )
    assert response.status_code == 201, response.content
    return response.json()["decisions"][0], notices


def open_thread(gateway, rig: Rig) -> tuple[str, str]:
    thread = rig.connect().request("thread/start", {})["thread"]["id"]
    sid = gateway.open(system_prompt="sys", context_window=8192, codex_thread_id=thread)["id"]
    return thread, sid


def compactions(notices: list[dict]) -> set[str]:
    return {
        m["params"]["item"]["id"]
        for m in notices
        if m.get("method") == "item/completed"
        and m["params"]["item"]["type"] == "contextCompaction"
    }


def assert_record_kept(gateway, sid: str, turns: int) -> None:
    """A Codex compaction changes Codex's thread, never our rows: the system prompt and both
    rows of every turn are still there and live, no summary row was written, and search finds
    the compacted turns' words."""
    rows = Message.objects.filter(session_id=sid)
    said = [f"Turn {n}: remember the word {WORDS[n]}." for n in range(turns)]
    replies = [f"Noted {WORDS[n]}." for n in range(turns)]
    assert list(rows.values_list("content", flat=True)) == [
        "sys",
        *[text for pair in zip(said, replies, strict=True) for text in pair],
    ]
    assert not rows.filter(is_summary=True).exists()
    assert rows.filter(active=True).count() == 1 + 2 * turns
    for word in WORDS[:turns]:
        hits = gateway.get("/search", q=word).json()["hits"]
        assert any(hit["session"]["id"] == sid for hit in hits), (word, hits)


def assert_next_turn_sees_the_summary(rig: Rig, thread: str) -> None:
    """The compaction is Codex's: a fresh connection resumes the thread and its next model
    call carries the summary in place of the compacted turns."""
    peer = rig.reconnect(thread)
    before = len(rig.compaction_requests())
    rig.model.then(Reply("After the compaction."))
    peer.turn(thread, "Turn 9: what do you remember?")
    assert len(rig.compaction_requests()) == before, "no further compaction was needed"
    (sent,) = [str(r.body) for r in rig.model.requests if "Turn 9:" in str(r.body)]
    assert "summary-mark" in sent, "the summary stands in for the compacted turns"
    assert "Noted aardvark." not in sent, "the compacted replies are no longer sent"


def no_deprecation(caplog) -> None:
    warned = [r.getMessage() for r in caplog.records if "deprecation" in r.getMessage()]
    assert not warned, warned


TRANSPORTS = ["stdio", "websocket"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_managed_mode_compacts_the_real_codex_thread_on_our_threshold_and_on_request(
    gateway, hermes_config, rig, transport, django_capture_on_commit_callbacks, caplog
):
    caplog.set_level(logging.WARNING)
    codex = rig(transport)
    hermes_config(compression=codex.service_settings("managed"))
    thread, sid = open_thread(gateway, codex)
    codex.model.then(Reply("Noted aardvark.", usage=usage(1_000)))
    codex.model.then(Reply("Noted bassoon.", usage=usage(2_000)))
    codex.model.then(Reply("Noted cormorant.", usage=usage(7_500)))  # over 6,963: compact
    codex.model.then(Reply(SUMMARY, usage=usage(300)))  # Codex's summary call
    decisions = [
        run_turn(gateway, codex, sid, thread, n, django_capture_on_commit_callbacks)[0]
        for n in range(3)
    ]
    assert [d["action"] for d in decisions] == ["skip", "skip", "queued"], decisions
    event = CompressionEvent.objects.get(session_id=sid, outcome="compressed")
    assert (event.path, event.trigger) == ("codex_managed", "threshold_post"), event.error
    assert f"compacted thread {thread}" in event.reason
    assert len(codex.compaction_requests()) == 1, "Codex summarised through the loopback model"

    codex.model.then(Reply(SUMMARY, usage=usage(300)))
    manual = gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()
    assert manual["outcome"] == "compressed", manual
    events = CompressionEvent.objects.filter(session_id=sid, outcome="compressed")
    assert sorted(e.trigger for e in events) == ["manual_api", "threshold_post"]
    assert len(codex.compaction_requests()) == 2
    assert Session.objects.get(pk=sid).compressions == 2

    assert_record_kept(gateway, sid, turns=3)
    assert_next_turn_sees_the_summary(codex, thread)
    no_deprecation(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_native_mode_records_the_compaction_codex_does_itself(
    gateway, hermes_config, rig, transport, django_capture_on_commit_callbacks, caplog
):
    caplog.set_level(logging.WARNING)
    codex = rig(transport, auto_compact=20_000)  # above Codex's own prompt (~7,000 tokens)
    hermes_config(compression=codex.service_settings("native"))
    thread, sid = open_thread(gateway, codex)
    codex.model.then(Reply("Noted aardvark.", usage=usage(1_000)))
    codex.model.then(Reply("Noted bassoon.", usage=usage(25_000)))  # over Codex's limit and ours
    codex.model.then(Reply(SUMMARY, usage=usage(300)))  # Codex compacts before the next turn
    codex.model.then(Reply("Noted cormorant.", usage=usage(1_500)))
    forwarded = 0
    seen: set[str] = set()
    for n in range(3):
        decision, notices = run_turn(
            gateway, codex, sid, thread, n, django_capture_on_commit_callbacks
        )
        # over our threshold or not, our triggers stand aside: Codex compacts its own thread
        assert decision["action"] in ("skip", "locked"), decision
        response = gateway.post(f"/sessions/{sid}/codex/notifications", {"notifications": notices})
        assert response.status_code == 200, response.content
        forwarded += response.json()["recorded"]
        seen |= compactions(notices)
        if n == 1:
            assert "Codex compacts this session's thread itself" in decision["reason"]
    assert len(seen) == 1 and len(codex.compaction_requests()) == 1
    assert forwarded == 1
    event = CompressionEvent.objects.get(session_id=sid, outcome="compressed")
    assert (event.path, event.trigger) == ("codex_native", "codex")
    assert_record_kept(gateway, sid, turns=3)

    codex.model.then(Reply(SUMMARY, usage=usage(300)))
    manual = gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()
    assert manual["outcome"] == "compressed", manual
    assert CompressionEvent.objects.get(session_id=sid, path="codex_managed").trigger == (
        "manual_api"
    )
    assert Session.objects.get(pk=sid).compressions == 2
    assert_next_turn_sees_the_summary(codex, thread)
    no_deprecation(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_off_mode_compacts_the_real_thread_only_when_asked(
    gateway, hermes_config, rig, transport, django_capture_on_commit_callbacks, caplog
):
    caplog.set_level(logging.WARNING)
    codex = rig(transport)
    hermes_config(compression=codex.service_settings("off"))
    thread, sid = open_thread(gateway, codex)
    for word, tokens in zip(WORDS[:3], (2_000, 7_500, 7_600), strict=True):
        codex.model.then(Reply(f"Noted {word}.", usage=usage(tokens)))
    decisions = [
        run_turn(gateway, codex, sid, thread, n, django_capture_on_commit_callbacks)[0]
        for n in range(3)
    ]
    assert all("codex_app_server_auto: off" in d["reason"] for d in decisions[1:]), decisions
    assert not CompressionEvent.objects.filter(session_id=sid, outcome="compressed").exists()
    assert codex.compaction_requests() == []

    codex.model.then(Reply(SUMMARY, usage=usage(300)))
    manual = gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()
    assert manual["outcome"] == "compressed", manual
    event = CompressionEvent.objects.get(session_id=sid, outcome="compressed")
    assert (event.path, event.trigger) == ("codex_managed", "manual_api")
    assert len(codex.compaction_requests()) == 1
    assert_record_kept(gateway, sid, turns=3)
    assert_next_turn_sees_the_summary(codex, thread)
    no_deprecation(caplog)


def test_a_thread_the_real_app_server_does_not_know_is_a_recorded_failure(
    gateway, hermes_config, rig
):
    codex = rig("stdio")
    hermes_config(compression=codex.service_settings("managed"))
    unknown = "01a23100-0000-7000-8000-000000000000"
    sid = gateway.open(system_prompt="sys", codex_thread_id=unknown)["id"]
    answer = gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()
    assert answer["outcome"] == "failed"
    event = CompressionEvent.objects.get(session_id=sid)
    assert "thread/resume failed" in event.error, event.error
    assert Session.objects.get(pk=sid).cooldown_until is not None


def test_over_stdio_a_thread_the_gateways_app_server_holds_cannot_be_compacted(
    gateway, hermes_config, rig, django_capture_on_commit_callbacks
):
    """What the real app server showed: Codex 0.169 refuses a second process's resume of a
    loaded thread, so codex_app_server_command only serves threads no app server holds; a
    gateway that keeps its app server running must give us its --listen URL."""
    codex = rig("stdio")
    hermes_config(compression=codex.service_settings("managed"))
    thread, sid = open_thread(gateway, codex)
    codex.connect().turn(thread, "Turn 0: remember the word aardvark.")  # the gateway holds it
    answer = gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()
    assert answer["outcome"] == "failed"
    event = CompressionEvent.objects.get(session_id=sid)
    assert "already has an active writer" in event.error, event.error
    assert codex.compaction_requests() == []
