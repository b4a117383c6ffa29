"""Manual compression through the API (via the django-q2 task), the CLI, and the demo."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from compression.models import CompressionEvent
from search.service import Filters, search
from sessions_app import services
from sessions_app.demo.conversation import DEMO_NEEDLES, build_demo_conversation
from sessions_app.models import Message, Session
from tests.test_compression import assert_consistent, turn


@pytest.fixture
def long_session(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    return sid


def test_the_api_compresses_through_the_task_and_answers_the_result(gateway, long_session):
    response = gateway.post(f"/sessions/{long_session}/compress", {"focus": "item-3"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["outcome"] == "fallback"  # no summary model configured in tests
    assert body["task_id"]
    (step,) = body["passes"][:1]
    assert step["rows_archived"] > 0 and step["summary_message_id"]
    event = CompressionEvent.objects.get(pk=step["event_id"])
    assert event.trigger == "manual_api"
    assert_consistent(Session.objects.get(pk=long_session))


def test_the_api_can_queue_without_waiting(gateway, long_session):
    response = gateway.post(f"/sessions/{long_session}/compress", {"wait": False})
    assert response.status_code == 202
    assert response.json()["outcome"] == "queued" and response.json()["task_id"]


def test_a_compression_already_running_is_409_and_starts_nothing(gateway, long_session):
    Session.objects.filter(pk=long_session).update(
        compressing_until=timezone.now() + timedelta(minutes=5)
    )
    response = gateway.post(f"/sessions/{long_session}/compress")
    assert response.status_code == 409
    assert "already running" in response.json()["detail"]
    assert not CompressionEvent.objects.filter(trigger="manual_api").exists()


def test_an_expired_claim_does_not_block_forever(gateway, long_session):
    Session.objects.filter(pk=long_session).update(
        compressing_until=timezone.now() - timedelta(seconds=1)
    )
    assert gateway.post(f"/sessions/{long_session}/compress").status_code == 200


def test_compress_input_is_validated_and_scoped_to_the_channel(make_gateway, gateway, long_session):
    assert (
        gateway.post(f"/sessions/{long_session}/compress", {"focus": "x" * 501}).status_code == 422
    )
    assert gateway.post(f"/sessions/{long_session}/compress", {"bogus": 1}).status_code == 422
    stranger = make_gateway("stranger")
    assert stranger.post(f"/sessions/{long_session}/compress").status_code == 404
    missing = gateway.post(f"/sessions/{long_session}/compress", {"around_position": 9999})
    assert missing.status_code == 404 and "no message #9999" in missing.json()["detail"]
    assert not CompressionEvent.objects.filter(trigger="manual_api").exists()
    with pytest.raises(CommandError, match="no message #9999"):
        call_command("compress", long_session, "--around", "9999")
    assert not CompressionEvent.objects.filter(trigger="manual_cli").exists()


def test_the_cli_compresses_and_reports_each_pass(long_session):
    out = StringIO()
    call_command("compress", long_session, "--focus", "item-2", stdout=out)
    assert "pass 1: fallback" in out.getvalue()
    assert CompressionEvent.objects.filter(trigger="manual_cli", outcome="fallback").exists()
    with pytest.raises(CommandError, match="No session"):
        call_command("compress", "00000000-0000-0000-0000-000000000000")


def test_the_cli_compresses_locally_around_a_position(gateway):
    # Messages long enough that a summary of twenty of them is smaller than they are.
    sid = gateway.open(system_prompt="sys")["id"]
    turns = [m for n in range(12) for m in turn(n, size=400)]
    gateway.post(f"/sessions/{sid}/messages", {"messages": turns})
    around = Message.objects.get(session_id=sid, content__startswith="Question 6:")
    out = StringIO()
    call_command("compress", sid, "--around", str(around.position), stdout=out)
    summary = Message.objects.get(session_id=sid, is_summary=True)
    assert summary.covers_from_position <= around.position <= summary.covers_to_position


def test_three_compressions_of_the_demo_lose_no_word(channel_and_demo):
    session = channel_and_demo
    originals = list(Message.objects.filter(session=session).values_list("pk", "content"))
    for round_ in range(3):
        if round_:
            services.append_messages(
                session, [m for n in range(50 * round_, 50 * round_ + 5) for m in turn(n)]
            )
        call_command("compress", str(session.pk), stdout=StringIO())
    assert_consistent(session)
    assert Message.objects.filter(session=session, is_summary=True).count() == 3
    # Every original row still exists with its text unchanged.
    after = dict(
        Message.objects.filter(pk__in=[pk for pk, _ in originals]).values_list("pk", "content")
    )
    before_hash = hashlib.sha256(repr(sorted(originals)).encode()).hexdigest()
    after_hash = hashlib.sha256(repr(sorted(after.items())).encode()).hexdigest()
    assert after_hash == before_hash
    # Every needle is found, in archived rows.
    for needle in DEMO_NEEDLES:
        result = search(needle, Filters(session_id=session.pk), limit=50)
        assert result.hits, needle
        assert any(h.message.kind == "archived" for h in result.hits), needle
    # And every original message is found by a phrase from its own text.
    missing = []
    for pk, content in originals:
        words = (content or "").split()
        if len(words) < 4:
            continue
        phrase = " ".join(words[:4]).replace('"', "")
        hits = search(f'"{phrase}"', Filters(session_id=session.pk), limit=100).hits
        if pk not in {h.message.pk for h in hits}:
            missing.append((pk, phrase))
    assert missing == []


@pytest.fixture
def channel_and_demo(db):
    from sessions_app.keys import create_channel

    channel = create_channel("demo")[0]
    demo = build_demo_conversation()
    session = services.open_session(
        channel, model=demo["model"], system_prompt=demo["system_prompt"]
    ).session
    services.append_messages(session, demo["messages"])
    return session
