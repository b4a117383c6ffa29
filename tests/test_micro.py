"""Micro-compaction (T7c): opt-in; after every N turns the oldest turn outside the tail folds into
one rolling summary, consolidated when it grows too long; a failed archive step keeps the summary
beside the originals until the next full compression cleans up (F4)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from compression.engine.compress import compress
from compression.models import CompressionEvent
from compression.paths import micro
from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app.models import Message, Session
from tests.test_compression import assert_consistent, turn


@pytest.fixture
def model_server():
    with FakeModelServer() as server:
        server.script.default = Reply("## Goal\nRolling summary of the oldest turns.")
        yield server


@pytest.fixture
def micro_on(hermes_config, model_server):
    def configure(**compression):
        return hermes_config(
            auxiliary={"compression": {"model": "fake", "base_url": model_server.base_url}},
            compression={
                "micro_compact": True,
                "micro_compact_every_n_turns": 1,
                "protect_first_n": 1,
                "protect_last_n": 4,
                "context_timeout_seconds": 2,
                "context_total_ceiling_seconds": 5,
                **compression,
            },
        )

    configure()
    return configure


def take_turns(gateway, sid: str, numbers, capture) -> list[list[dict]]:
    decisions = []
    for n in numbers:
        with capture(execute=True):
            response = gateway.post(f"/sessions/{sid}/messages", {"messages": turn(n)})
        assert response.status_code == 201, response.content
        decisions.append(response.json()["decisions"])
    return decisions


def live(sid: str) -> list[Message]:
    return list(Message.objects.filter(session_id=sid, active=True).order_by("position", "id"))


def test_micro_compaction_is_off_by_default(gateway, django_capture_on_commit_callbacks):
    sid = gateway.open(system_prompt="sys")["id"]
    take_turns(gateway, sid, range(6), django_capture_on_commit_callbacks)
    assert not CompressionEvent.objects.filter(trigger="micro").exists()
    assert not Message.objects.filter(session_id=sid, is_summary=True).exists()


def test_after_each_turn_the_oldest_turn_folds_into_one_rolling_summary(
    gateway, micro_on, model_server, django_capture_on_commit_callbacks
):
    sid = gateway.open(system_prompt="sys")["id"]
    decisions = take_turns(gateway, sid, range(6), django_capture_on_commit_callbacks)
    assert any(d["trigger"] == "micro" and d["action"] == "queued" for d in decisions[-1])
    rows = live(sid)
    summaries = [m for m in rows if m.is_summary]
    assert len(summaries) == 1, "one rolling summary, the earlier ones absorbed into it"
    rolling = summaries[0]
    # head (system + first turn's user message) + the rolling summary + the unfolded turns
    assert rows[0].role == "system" and rows.index(rolling) == 2
    folded = Message.objects.filter(session_id=sid, active=False, is_summary=False)
    assert folded.exists() and all(m.position <= rolling.covers_to_position for m in folded)
    # every folded original hangs off a summary in the chain that ends at the rolling one
    assert all(m.summarized_by_id is not None for m in folded)
    events = CompressionEvent.objects.filter(session_id=sid, trigger="micro")
    assert events.count() == len(model_server.requests) and events.count() >= 3
    assert {e.outcome for e in events} == {"compressed"}
    # the second fold updated the first summary rather than starting over
    assert "PREVIOUS SUMMARY" in model_server.requests[-1].body["messages"][-1]["content"]
    assert_consistent(Session.objects.get(pk=sid))
    # nothing is lost: a folded original is still found
    hits = gateway.get("/search", q="item-1").json()["hits"]
    assert any(h["message"]["kind"] == "archived" for h in hits)


def test_folds_happen_every_n_turns(gateway, micro_on, django_capture_on_commit_callbacks):
    micro_on(micro_compact_every_n_turns=3)
    sid = gateway.open(system_prompt="sys")["id"]
    decisions = take_turns(gateway, sid, range(9), django_capture_on_commit_callbacks)
    queued = [i for i, d in enumerate(decisions) if any(x["trigger"] == "micro" for x in d)]
    assert queued == [2, 5, 8]


def test_a_rolling_summary_over_the_defrag_threshold_is_consolidated(
    gateway, micro_on, model_server, django_capture_on_commit_callbacks
):
    micro_on(micro_compact_defrag_threshold_tokens=40)
    long_summary = "## Goal\n" + "The user asked about many items in turn. " * 30
    model_server.script.default = Reply(long_summary)
    model_server.then(Reply(long_summary), Reply("## Goal\nShort consolidated summary."))
    sid = gateway.open(system_prompt="sys")["id"]
    take_turns(gateway, sid, range(4), django_capture_on_commit_callbacks)
    event = CompressionEvent.objects.filter(session_id=sid, trigger="micro").order_by("id").first()
    assert "consolidated" in event.reason
    consolidation = model_server.requests[1].body["messages"][-1]["content"]
    assert "PREVIOUS SUMMARY" in consolidation and "about 20 tokens" in consolidation
    assert "Short consolidated summary." in event.summary_message.content


ARCHIVE_FAILS = {
    "sqlite": [
        "CREATE TRIGGER test_archive_fails BEFORE UPDATE OF active ON sessions_app_message "
        "WHEN OLD.is_summary = 0 AND NEW.active = 0 AND NEW.compressed = 1 "
        "BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected by the test)'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION test_archive_fails() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'disk I/O error (injected by the test)'; END $$",
        "CREATE TRIGGER test_archive_fails BEFORE UPDATE OF active ON sessions_app_message "
        "FOR EACH ROW WHEN (NOT OLD.is_summary AND NOT NEW.active AND NEW.compressed) "
        "EXECUTE FUNCTION test_archive_fails()",
    ],
}
ARCHIVE_WORKS = {
    "sqlite": ["DROP TRIGGER test_archive_fails"],
    "postgresql": [
        "DROP TRIGGER test_archive_fails ON sessions_app_message",
        "DROP FUNCTION test_archive_fails",
    ],
}


def _sql(statements: dict[str, list[str]]) -> None:
    with connection.cursor() as cursor:
        for statement in statements[connection.vendor]:
            cursor.execute(statement)


def test_a_failed_archive_step_shows_originals_and_summary_until_a_full_compression(
    gateway, micro_on, model_server, django_capture_on_commit_callbacks
):
    micro_on(micro_compact=False)
    sid = gateway.open(system_prompt="sys")["id"]
    take_turns(gateway, sid, range(5), django_capture_on_commit_callbacks)
    micro_on()
    session = Session.objects.get(pk=sid)
    _sql(ARCHIVE_FAILS)  # the database refuses to archive originals: the fold's second step
    result = micro.micro_compact(session)
    _sql(ARCHIVE_WORKS)
    assert result.outcome == "failed" and "until the next full compression" in result.reason
    rows = live(sid)
    summary = next(m for m in rows if m.is_summary)
    covered = [
        m
        for m in rows
        if not m.is_summary
        and summary.covers_from_position <= m.position <= summary.covers_to_position
    ]
    assert [m.role for m in covered][:2] == ["assistant", "tool"], "the folded turn is still live"
    context = gateway.get(f"/sessions/{sid}/context").json()["messages"]
    assert summary.content in [m["content"] for m in context]
    assert any(m.get("tool_call_id") == covered[1].tool_call_id for m in context)
    assert_consistent(Session.objects.get(pk=sid))
    # the next fold leaves rows the summary already covers alone
    requests = len(model_server.requests)
    assert micro.micro_compact(Session.objects.get(pk=sid)).outcome == "compressed"
    assert len(model_server.requests) == requests + 1
    still = Message.objects.filter(pk__in=[m.pk for m in covered], active=True)
    assert still.count() == len(covered)
    # a full compression cleans up: one summary, every covered original archived under it
    compress(Session.objects.get(pk=sid))
    after = live(sid)
    assert sum(m.is_summary for m in after) == 1
    assert not Message.objects.filter(pk__in=[m.pk for m in covered], active=True).exists()
    assert_consistent(Session.objects.get(pk=sid))


def test_a_fold_never_reorders_the_context_around_a_later_local_summary(
    gateway, micro_on, model_server, django_capture_on_commit_callbacks
):
    micro_on(micro_compact=False)
    sid = gateway.open(system_prompt="sys")["id"]
    take_turns(gateway, sid, range(10), django_capture_on_commit_callbacks)
    micro_on()
    assert micro.micro_compact(Session.objects.get(pk=sid)).outcome == "compressed"
    later = Message.objects.get(session_id=sid, content__startswith="Question 6:")
    compress(Session.objects.get(pk=sid), around_position=later.position)
    summaries = [m for m in live(sid) if m.is_summary]
    assert len(summaries) == 2, "the rolling summary and a local one further on"
    result = micro.micro_compact(Session.objects.get(pk=sid))
    assert result.outcome == "compressed"
    rows = live(sid)
    assert [m.position for m in rows] == sorted(m.position for m in rows)
    assert result.summary.position == summaries[0].position
    assert Message.objects.get(pk=summaries[1].pk).active, "the local summary is left alone"
    assert_consistent(Session.objects.get(pk=sid))


def test_the_master_switch_and_a_cooldown_hold_micro_compaction_back(
    gateway, micro_on, django_capture_on_commit_callbacks
):
    micro_on(enabled=False)
    sid = gateway.open(system_prompt="sys")["id"]
    take_turns(gateway, sid, range(6), django_capture_on_commit_callbacks)
    assert not CompressionEvent.objects.filter(trigger="micro").exists()
    micro_on()
    Session.objects.filter(pk=sid).update(cooldown_until=timezone.now() + timedelta(hours=1))
    take_turns(gateway, sid, range(6, 9), django_capture_on_commit_callbacks)
    assert not CompressionEvent.objects.filter(trigger="micro").exists()
    Session.objects.filter(pk=sid).update(cooldown_until=None)
    take_turns(gateway, sid, range(9, 10), django_capture_on_commit_callbacks)
    assert CompressionEvent.objects.filter(trigger="micro", outcome="compressed").exists()


def test_a_second_queued_fold_for_the_same_turns_does_nothing(gateway, micro_on):
    from compression.tasks import micro_task

    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(6) for m in turn(n)]})
    assert micro_task(sid)["outcome"] == "compressed"
    assert micro_task(sid) == {"session_id": sid, "outcome": "skipped", "reason": "no fold due"}
    assert CompressionEvent.objects.filter(trigger="micro").count() == 1
