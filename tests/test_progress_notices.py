"""``compression.progress_notices``: after a compression, one notice row tells the channel's
user what was compressed and how to find it again. The row is history (listed with the session's
messages, kind ``notice``), never context: not in the live context, not in its tokens, not in
search (it holds no conversation, only a pointer to what search finds)."""

from __future__ import annotations

import pytest

from compression.engine.compress import compress
from compression.models import CompressionEvent
from search.filters import Filters
from search.service import search
from sessions_app.models import Message, Session
from tests.test_compression import assert_consistent, turn


@pytest.fixture
def long_session(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    return sid


@pytest.fixture
def notices_on(hermes_config):
    return hermes_config(compression={"progress_notices": True})


def _context(gateway, sid) -> dict:
    return gateway.get(f"/sessions/{sid}/context").json()


def test_a_compression_leaves_one_notice_with_its_numbers_and_no_trace_in_the_context(
    gateway, long_session, notices_on
):
    response = gateway.post(f"/sessions/{long_session}/compress")
    assert response.status_code == 200, response.content
    body = response.json()
    (notice,) = Message.objects.filter(session_id=long_session, is_notice=True)
    assert body["notice"] == notice.content
    first = body["passes"][0]
    last = [p for p in body["passes"] if p["summary_message_id"]][-1]
    summaries = Message.objects.filter(
        pk__in=[p["summary_message_id"] for p in body["passes"] if p["summary_message_id"]]
    )
    covers_from = min(s.covers_from_position for s in summaries)
    covers_to = max(s.covers_to_position for s in summaries)
    assert f"messages #{covers_from} to #{covers_to}" in notice.content
    assert f"{first['tokens_before']:,} to {last['tokens_after']:,} tokens" in notice.content
    assert "manual (API)" in notice.content and f"around #{covers_from}" in notice.content
    assert "/api/" not in notice.content  # for the person in the chat
    assert (notice.kind, notice.active, notice.token_count) == ("notice", False, 0)
    # Never context: the context, its count and its tokens are exactly the live rows.
    session = Session.objects.get(pk=long_session)
    context = _context(gateway, long_session)
    assert notice.content not in [m.get("content") for m in context["messages"]]
    assert context["live_tokens"] == session.live_tokens == body["live_tokens"]
    assert_consistent(session)  # total_messages counts the notice, live counters do not
    # History: listed in place with the session's rows, and on its own as kind=notice.
    rows = gateway.get(f"/sessions/{long_session}/messages", limit=1000).json()["items"]
    assert rows[-1]["id"] == notice.pk and rows[-1]["kind"] == "notice"
    only = gateway.get(f"/sessions/{long_session}/messages", kind="notice").json()["items"]
    assert [m["id"] for m in only] == [notice.pk]
    rolled = gateway.get(f"/sessions/{long_session}/messages", kind="rolled_back").json()
    assert rolled["items"] == []
    # Not searchable, even by an operator asking for rolled-back rows; what it covers is.
    for filters in (Filters(), Filters(include_rolled_back=True)):
        assert search('"Context compressed"', filters).hits == []
        found = search('"Question 1"', filters).hits
        assert any(h.message.kind == "archived" for h in found)


def test_the_conversation_goes_on_after_a_notice(gateway, long_session, notices_on):
    gateway.post(f"/sessions/{long_session}/compress")
    notice = Message.objects.get(session_id=long_session, is_notice=True)
    before = _context(gateway, long_session)
    appended = gateway.post(
        f"/sessions/{long_session}/messages", {"messages": [{"role": "user", "content": "next"}]}
    ).json()["messages"][0]
    assert appended["position"] == notice.position + 1
    after = _context(gateway, long_session)
    assert after["messages"][:-1] == before["messages"]
    assert after["messages"][-1]["content"] == "next"
    # Undo takes back the last live message, not the notice.
    undone = gateway.post(f"/sessions/{long_session}/rollback", {"count": 1}).json()
    assert [m["id"] for m in undone["rolled_back"]] == [appended["id"]]
    notice.refresh_from_db()
    assert notice.kind == "notice"
    assert_consistent(Session.objects.get(pk=long_session))


def test_an_automatic_compression_gets_a_notice_too(gateway, long_session, notices_on):
    session = Session.objects.get(pk=long_session)
    result = compress(session, trigger=CompressionEvent.Trigger.IDLE)
    assert result.outcome == "fallback"
    assert result.notice is not None and "(idle)" in result.notice.content


def test_without_progress_notices_there_is_no_notice(gateway, long_session):
    body = gateway.post(f"/sessions/{long_session}/compress").json()
    assert body["outcome"] == "fallback" and body["notice"] is None
    assert not Message.objects.filter(session_id=long_session, is_notice=True).exists()


def test_a_compression_that_writes_nothing_leaves_no_notice(gateway, notices_on):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": turn(0)})
    body = gateway.post(f"/sessions/{sid}/compress").json()
    assert body["outcome"] == "skipped" and body["notice"] is None
    assert not Message.objects.filter(session_id=sid, is_notice=True).exists()


def test_the_console_timeline_shows_the_notice_where_it_happened(
    admin_client, gateway, long_session, notices_on
):
    from django.urls import reverse

    gateway.post(f"/sessions/{long_session}/compress")
    notice = Message.objects.get(session_id=long_session, is_notice=True)
    page = admin_client.get(reverse("console:timeline", args=[long_session])).content.decode()
    assert f'id="m-{notice.pk}"' in page and "kind-notice" in page
    assert "Context compressed" in page


def test_a_run_that_continues_in_a_new_session_leaves_its_notice_there_without_positions(
    gateway, long_session, hermes_config
):
    """in_place: false -- the summary's positions are the earlier session's; the new session's
    session_search (around) cannot look them up, so the notice does not point at them."""
    hermes_config(compression={"progress_notices": True, "in_place": False})
    body = gateway.post(f"/sessions/{long_session}/compress").json()
    child = body["continued_in"]
    assert child and child != long_session
    (notice,) = Message.objects.filter(is_notice=True)
    assert str(notice.session_id).replace("-", "") == str(child).replace("-", "")
    assert "the earlier part of this conversation is now a summary" in notice.content
    assert "#" not in notice.content and body["notice"] == notice.content
