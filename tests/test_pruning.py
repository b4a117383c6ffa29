"""Proactive pruning (T7d): when a guard holds compression back over the threshold, tool output
outside the tail is de-duplicated and trimmed locally; originals stay in the database and search."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from compression.models import CompressionEvent
from compression.paths import pruning
from compression.policy import due
from compression.policy.threshold import threshold_for
from sessions_app.models import Message, Session
from sessions_app.services import recount

BIG = "\n".join(f"line {n}: GET /api/orders/{n} 200 in {n % 97} ms" for n in range(600))
SAME = "total 48\n" + "\n".join(f"-rw-r--r-- 1 app app {n} report_{n}.csv" for n in range(40))
LONG_ARG = "def handler(event):\n" + "    value = compute(event)  # step\n" * 200


def call(n: int, arguments: str) -> dict:
    return {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "tool", "arguments": arguments},
    }


def tool_turn(n: int, result: str, arguments: str = '{"cmd": "ls"}') -> list[dict]:
    return [
        {"role": "user", "content": f"step {n} please"},
        {"role": "assistant", "content": None, "tool_calls": [call(n, arguments)]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": result},
        {"role": "assistant", "content": f"done with step {n}"},
    ]


@pytest.fixture
def pruning_on(hermes_config):
    return hermes_config(
        compression={
            "proactive_prune_tokens": 1_000,
            "proactive_prune_min_result_chars": 2_000,
            "proactive_prune_min_reclaim_tokens": 500,
        }
    )


@pytest.fixture
def held_back(gateway):
    """A session over its threshold (8K window) in cooldown after a failed summary."""
    sid = gateway.open(system_prompt="sys", context_window=8192)["id"]
    messages = (
        tool_turn(0, "warm-up")  # the protected head
        + tool_turn(1, SAME)
        + tool_turn(2, BIG, json.dumps({"path": "app.py", "source": LONG_ARG}))
        + tool_turn(3, SAME)
        + tool_turn(4, "short result")
        + tool_turn(5, "not json args", "x" * 3_000)
        + [m for n in range(6, 13) for m in tool_turn(n, f"result {n}")]
        + tool_turn(13, BIG + "\nsecond run")  # in the tail: never pruned
    )
    assert gateway.post(f"/sessions/{sid}/messages", {"messages": messages}).status_code == 201
    Session.objects.filter(pk=sid).update(cooldown_until=timezone.now() + timedelta(hours=1))
    return sid


def rows(sid: str) -> dict[str, Message]:
    out = {}
    for m in Message.objects.filter(session_id=sid).order_by("position"):
        key = m.tool_call_id or (m.tool_calls[0]["id"] + "/args" if m.tool_calls else None)
        if key:
            out[key] = m
    return out


def test_a_guarded_session_over_the_threshold_gets_its_tool_output_pruned(
    gateway, held_back, pruning_on, django_capture_on_commit_callbacks
):
    sid = held_back
    before = rows(sid)
    tokens_before = Session.objects.get(pk=sid).live_tokens
    with django_capture_on_commit_callbacks(execute=True):
        response = gateway.post(
            f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "and now?"}]}
        )
    decision = response.json()["decisions"][0]
    assert decision["action"] == "locked"
    assert "cooldown" in decision["reason"] and "proactive pruning queued" in decision["reason"]

    after = rows(sid)
    # 1. a later identical result points back at the first copy (a rollback, which removes the
    #    newest rows first, can never leave a reference to a row it removed)
    assert after["call_3"].pruned_content.startswith("[identical to the tool result at #")
    assert "call_1" in after["call_3"].pruned_content
    assert after["call_1"].pruned_content is None
    # 2. the large result keeps its head and tail around a marker
    trimmed = after["call_2"].pruned_content
    assert trimmed.startswith("line 0:") and trimmed.rstrip().endswith("in 17 ms")
    assert "characters pruned from this tool output" in trimmed and len(trimmed) < 1_300
    # 3. long arguments shortened inside valid JSON; arguments that are not JSON left alone
    args = json.loads(after["call_2/args"].pruned_tool_calls[0]["function"]["arguments"])
    assert args["path"] == "app.py" and "characters pruned" in args["source"]
    assert after["call_5/args"].pruned_tool_calls is None
    # the head, the tail and small results untouched; originals kept verbatim
    for key in ("call_0", "call_4", "call_13"):
        assert after[key].pruned_content is None, key
    for key, row in before.items():
        assert (after[key].content, after[key].tool_calls) == (row.content, row.tool_calls)
    # counters follow the pruned sizes exactly
    session = Session.objects.get(pk=sid)
    assert session.live_tokens < tokens_before - 500
    assert recount(session).live_tokens == session.live_tokens
    assert after["call_2"].token_count < before["call_2"].token_count
    # the live context sends the pruned forms; search still finds the original text
    context = gateway.get(f"/sessions/{sid}/context").json()["messages"]
    sent = {m.get("tool_call_id"): m["content"] for m in context if m["role"] == "tool"}
    assert sent["call_2"] == trimmed and sent["call_13"] == BIG + "\nsecond run"
    hits = gateway.get("/search", q='"GET /api/orders/300"').json()["hits"]
    assert {h["message"]["id"] for h in hits} == {after["call_2"].pk, after["call_13"].pk}
    event = CompressionEvent.objects.get(session_id=sid, trigger="prune")
    assert event.outcome == "pruned" and event.tokens_after == session.live_tokens
    assert "compression held back: threshold_pre" in event.reason


def test_pruning_writes_nothing_when_it_would_reclaim_too_little(held_back, hermes_config):
    hermes_config(
        compression={"proactive_prune_tokens": 1_000, "proactive_prune_min_reclaim_tokens": 10**6}
    )
    result = pruning.prune(Session.objects.get(pk=held_back), "threshold_pre")
    assert (
        result.outcome == "skipped" and "under proactive_prune_min_reclaim_tokens" in result.reason
    )
    assert not Message.objects.filter(session_id=held_back, pruned_at__isnull=False).exists()
    assert not CompressionEvent.objects.filter(trigger="prune").exists()


def test_a_failed_prune_leaves_the_session_as_it_was(held_back, pruning_on, monkeypatch):
    session = Session.objects.get(pk=held_back)
    tokens = session.live_tokens

    def broken(*args, **kwargs):
        raise DatabaseError("disk I/O error")

    monkeypatch.setattr(Message.objects, "bulk_update", broken)
    result = pruning.prune(session, "threshold_pre")  # no exception reaches the caller
    assert result.outcome == "failed" and "session unchanged" in result.reason
    session.refresh_from_db()
    assert session.live_tokens == tokens
    assert not Message.objects.filter(session_id=held_back, pruned_at__isnull=False).exists()
    assert CompressionEvent.objects.get(trigger="prune").outcome == "failed"


def test_pruning_twice_finds_nothing_more_to_do(held_back, pruning_on):
    session = Session.objects.get(pk=held_back)
    assert pruning.prune(session, "threshold_pre").outcome == "pruned"
    second = pruning.prune(session, "threshold_pre")
    assert second.outcome == "skipped"
    assert CompressionEvent.objects.filter(trigger="prune").count() == 1


def test_pruning_is_off_by_default(gateway, held_back, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = gateway.post(
            f"/sessions/{held_back}/messages", {"messages": [{"role": "user", "content": "hi"}]}
        )
    assert "pruning" not in response.json()["decisions"][0]["reason"]
    assert not Message.objects.filter(session_id=held_back, pruned_at__isnull=False).exists()


def test_a_session_under_the_threshold_is_not_pruned(gateway, pruning_on):
    sid = gateway.open(system_prompt="sys")["id"]  # a 128K window: far under
    gateway.post(f"/sessions/{sid}/messages", {"messages": tool_turn(0, BIG) + tool_turn(1, BIG)})
    session = Session.objects.get(pk=sid)
    assert not due.prune_wanted(session.live_tokens, threshold_for(session).tokens)


def test_the_master_switch_off_holds_pruning_back_too(
    gateway, held_back, hermes_config, django_capture_on_commit_callbacks
):
    hermes_config(
        compression={
            "enabled": False,
            "proactive_prune_tokens": 1_000,
            "proactive_prune_min_result_chars": 2_000,
            "proactive_prune_min_reclaim_tokens": 500,
        }
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = gateway.post(
            f"/sessions/{held_back}/messages", {"messages": [{"role": "user", "content": "hi"}]}
        )
    decision = response.json()["decisions"][0]
    assert decision["action"] == "locked" and "compression.enabled" in decision["reason"]
    assert "pruning" not in decision["reason"]
    assert not Message.objects.filter(session_id=held_back, pruned_at__isnull=False).exists()


def test_pruning_waits_its_turn_while_a_compression_of_the_session_runs(held_back, pruning_on):
    session = Session.objects.get(pk=held_back)
    Session.objects.filter(pk=held_back).update(
        compressing_until=timezone.now() + timedelta(minutes=5)
    )
    result = pruning.prune(session, "threshold_pre")
    assert result.outcome == "skipped" and "compression of this session is running" in result.reason
    assert not Message.objects.filter(session_id=held_back, pruned_at__isnull=False).exists()


def test_a_prune_queued_while_held_back_does_nothing_once_the_hold_ended(held_back, pruning_on):
    from compression.tasks import prune_task

    Session.objects.filter(pk=held_back).update(cooldown_until=None)
    assert prune_task(held_back, "threshold_pre")["reason"] == "no longer held back"
    assert not Message.objects.filter(session_id=held_back, pruned_at__isnull=False).exists()
