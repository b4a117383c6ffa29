"""A turn that streams: server-sent events from the model's first words to the stored reply,
and a client that goes away mid-reply leaves a consistent session."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from compression.testing.fake_model import Fail, FakeModelServer, Reply
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session
from sessions_app.services import open_session, recount
from sessions_app.services.messages import pending_tool_calls
from tests.processes import wait_for
from tests.waiting import unlocked


def parse(raw: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


@contextmanager
def post(url: str, key: str, body: dict) -> Iterator[http.client.HTTPResponse]:
    """A POST read as it arrives (the stdlib's client: a real socket, hung up on exit)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request(
        "POST",
        parts.path,
        json.dumps(body),
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    try:
        yield response
    finally:
        response.close()  # the socket stays open while the response holds it
        conn.close()


def lines(response: http.client.HTTPResponse) -> Iterator[str]:
    while raw := response.readline():
        yield raw.decode().rstrip("\n")


@pytest.fixture
def chat_model():
    with FakeModelServer() as server:
        server.script.default = Reply(
            "Here is the plan: first the cache, then the deploy.",
            usage={"prompt_tokens": 120, "completion_tokens": 11},
        )
        yield server


@pytest.fixture
def streaming(gateway, hermes_config, chat_model):
    hermes_config(model={"default": "gpt-4o", "base_url": chat_model.base_url})
    sid = gateway.open(system_prompt="sys")["id"]
    return gateway, sid


def turn(gateway, sid: str, content: str):
    response = gateway.post(f"/sessions/{sid}/turn", {"content": content, "stream": True})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    return parse(b"".join(response.streaming_content))


def test_a_streamed_turn_sends_the_reply_in_pieces_then_what_was_stored(streaming, chat_model):
    gateway, sid = streaming
    events = turn(gateway, sid, "What is the plan?")
    deltas = [data["content"] for name, data in events if name == "delta"]
    assert len(deltas) >= 2
    name, done = events[-1]
    assert name == "done"
    assert "".join(deltas) == done["reply"]["content"] == chat_model.script.default.content
    assert done["usage"] == {"prompt_tokens": 120, "completion_tokens": 11}
    assert [d["trigger"] for d in done["decisions"]][-1] == "threshold_post"  # usage reported
    sent = chat_model.requests[-1].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    stored = Message.objects.get(pk=done["reply"]["id"])
    assert stored.active and stored.content == done["reply"]["content"]


def test_a_streamed_turn_shows_each_tool_call_and_its_result(streaming, chat_model):
    gateway, sid = streaming
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "the locker code is 5521"}]},
    )
    call = {
        "id": "call_s",
        "type": "function",
        "function": {"name": "session_search", "arguments": '{"query": "locker code"}'},
    }
    chat_model.then(Reply(None, tool_calls=[call]), Reply("It is 5521."))
    events = turn(gateway, sid, "What was the locker code?")
    names = [name for name, _ in events]
    assert names.index("tool") < names.index("delta") < names.index("done")
    tool = next(data for name, data in events if name == "tool")
    assert tool["name"] == "session_search" and "5521" in tool["result"]
    assert events[-1][1]["reply"]["content"] == "It is 5521."
    assert pending_tool_calls(Session.objects.get(pk=sid)) == set()


def test_a_model_that_fails_before_writing_is_a_plain_http_error(streaming, chat_model):
    gateway, sid = streaming
    chat_model.then(Fail(500, "upstream exploded"))
    response = gateway.post(f"/sessions/{sid}/turn", {"content": "hi", "stream": True})
    assert response.status_code == 502
    assert "your message is stored" in response.json()["detail"]


def test_a_streamed_command_that_calls_no_model_is_one_done_event(streaming, chat_model):
    gateway, sid = streaming
    called = len(chat_model.requests)
    events = turn(gateway, sid, "/compress")  # the stream ends cleanly after its only event
    assert [name for name, _ in events] == ["done"]
    assert events[0][1]["reply"] is None and events[0][1]["command"]
    assert len(chat_model.requests) == called


@pytest.fixture
def live(live_server, hermes_config, chat_model, transactional_db):
    hermes_config(
        model={"default": "gpt-4o", "base_url": chat_model.base_url},
        server={"allowed_hosts": ["localhost", "127.0.0.1", "testserver"]},
    )
    channel, issued = create_channel("stream-live")
    session = open_session(channel, model="gpt-4o", system_prompt="sys").session
    return live_server.url, issued.plaintext, session


@pytest.mark.slow
def test_the_first_words_arrive_before_the_model_has_finished(live, chat_model):
    url, key, session = live
    chat_model.then(Reply("one two three four five six", chunks=6, chunk_delay=0.4))
    started = time.monotonic()
    seen: dict[str, float] = {}
    turn_url = f"{url}/api/v1/sessions/{session.pk}/turn"
    with post(turn_url, key, {"content": "count", "stream": True}) as response:
        assert response.status == 200
        for line in lines(response):
            if line.startswith("event: "):
                seen.setdefault(line[7:], time.monotonic() - started)
    # The model took about 2.4 s to write its six pieces; the first was on the wire long before.
    assert seen["done"] - seen["delta"] >= 1.5, seen


def _answering(live_server) -> bool:
    """Whether a thread of the live server is handling a request (the server does not track
    its threads: each is found by the method it runs)."""
    httpd = live_server.thread.httpd
    return any(
        getattr(getattr(t, "_target", None), "__self__", None) is httpd
        for t in threading.enumerate()
    )


def test_a_client_that_goes_away_mid_reply_leaves_a_consistent_session(
    live, chat_model, live_server
):
    url, key, session = live
    chat_model.then(Reply("piece " * 40, chunks=20, chunk_delay=0.15))
    turn_url = f"{url}/api/v1/sessions/{session.pk}/turn"
    with post(turn_url, key, {"content": "tell me a long story", "stream": True}) as response:
        for line in lines(response):
            if line.startswith("event: delta"):
                break  # and hang up
    # The reply is kept once the server sees the hang-up (its next write or two), in the request's
    # own thread. The live server shares this test's in-memory SQLite connection: a read from here
    # while that thread writes can land inside its transaction, or deadlock the two threads on
    # the connection. So nothing is read until the request is over.
    wait_for(lambda: not _answering(live_server), "the hung-up request's end", seconds=30)
    unlocked(session.refresh_from_db)
    rows = unlocked(lambda: list(Message.objects.filter(session=session).order_by("position")))
    live_rows = [(r.role, r.content) for r in rows if r.active]
    assert live_rows == [("system", "sys"), ("user", "tell me a long story")]
    (cut,) = [r for r in rows if r.rollback_reason == "interrupted"]
    assert cut.role == "assistant" and cut.content.startswith("piece") and cut.kind == "rolled_back"
    assert len(cut.content) < len("piece " * 40)  # cut off, as the client left it
    assert unlocked(lambda: recount(session)).live_tokens == session.live_tokens
    # The conversation goes on.
    chat_model.script.default = Reply("Welcome back.")
    with post(turn_url, key, {"content": "again?"}) as answer:
        assert answer.status == 200, answer.read()
