"""Triggers, the agent turn and the failure guards, driven through loopback model servers."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from compression.engine.compress import compress
from compression.engine.prompt import SUMMARY_PREFIX
from compression.models import CompressionEvent, ModelThresholdOverride
from compression.policy import guards, plugins
from compression.policy.hygiene import hygiene
from compression.policy.recovery import classify_error
from compression.testing.fake_model import Fail, FakeModelServer, Reply
from sessions_app import selectors, services
from sessions_app.models import Message, Session
from tests.processes import isolated_env, python
from tests.test_compression import assert_consistent, db_thread, turn
from tests.waiting import unlocked

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def chat_model():
    with FakeModelServer() as server:
        server.script.default = Reply(
            "Sure — done.",
            usage={"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912},
        )
        yield server


@pytest.fixture
def configured(hermes_config, chat_model):
    def apply(**compression):
        return hermes_config(
            model={"default": "gpt-4o", "base_url": chat_model.base_url},
            compression=compression,
        )

    apply()
    return apply


@pytest.fixture
def gw(make_gateway):
    return make_gateway("turns")


def open_long(gw, turns: int = 12, **fields) -> str:
    sid = gw.open(system_prompt="sys", **fields)["id"]
    gw.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(turns) for m in turn(n)]})
    return sid


def events(sid: str, **filters) -> list[CompressionEvent]:
    return list(CompressionEvent.objects.filter(session_id=sid, **filters).order_by("id"))


# --- The turn -------------------------------------------------------------------------------


def test_a_turn_stores_the_message_calls_the_model_and_stores_the_reply(gw, configured, chat_model):
    sid = open_long(gw, turns=2)
    response = gw.post(f"/sessions/{sid}/turn", {"content": "and now?"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reply"]["content"] == "Sure — done." and body["reply"]["role"] == "assistant"
    assert body["usage"] == {"prompt_tokens": 900, "completion_tokens": 12}
    sent = chat_model.requests[0].body["messages"]
    assert sent[-1] == {"role": "user", "content": "and now?"}
    assert [d["trigger"] for d in body["decisions"]] == ["hygiene", "preflight", "threshold_post"]
    assert body["session"]["usage"]["last_prompt_tokens"] == 900
    assert_consistent(Session.objects.get(pk=sid))


def test_slash_compress_runs_the_manual_command_instead_of_the_model(gw, configured, chat_model):
    sid = open_long(gw)
    body = gw.post(f"/sessions/{sid}/turn", {"content": "/compress the database"}).json()
    assert body["reply"] is None
    assert body["command"]["outcome"] == "fallback"
    assert not chat_model.requests
    assert events(sid, trigger="manual_channel")[0].outcome == "fallback"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            Fail(
                400,
                "This model's maximum context length is 128000 tokens",
                code="context_length_exceeded",
            ),
            "context_overflow",
        ),
        (Fail(413, "Request Entity Too Large"), "payload_too_large"),
        (Fail(400, "max_tokens is too large: 9000000"), "output_too_large"),
        (Fail(429, "Rate limit for long context requests exceeded"), "long_context_rate_limit"),
    ],
)
def test_a_too_large_error_compresses_at_once_and_retries(gw, configured, chat_model, error, kind):
    sid = open_long(gw, context_window=1_000_000)
    Session.objects.filter(pk=sid).update(cooldown_until=timezone.now() + timedelta(hours=1))
    chat_model.then(error)
    response = gw.post(f"/sessions/{sid}/turn", {"content": "go on"})
    assert response.status_code == 200, response.content
    body = response.json()
    error_steps = [d for d in body["decisions"] if d["trigger"] == "error"]
    assert len(error_steps) == 1 and kind in error_steps[0]["reason"]
    assert len(chat_model.requests) == 2  # the failed call and the retry
    assert len(chat_model.requests[1].body["messages"]) < len(
        chat_model.requests[0].body["messages"]
    )
    session = Session.objects.get(pk=sid)
    if kind == "long_context_rate_limit":
        assert (session.context_window, session.context_window_source) == (200_000, "lowered")


def test_errors_that_compression_cannot_fix_are_502_and_the_message_is_kept(
    gw, configured, chat_model
):
    sid = open_long(gw, turns=2)
    chat_model.then(Fail(500, "upstream exploded"))
    response = gw.post(f"/sessions/{sid}/turn", {"content": "still there?"})
    assert response.status_code == 502
    assert "upstream exploded" in response.json()["detail"]
    last = Message.objects.filter(session_id=sid).order_by("-position").first()
    assert last.content == "still there?"


def test_after_max_attempts_the_turn_gives_up(gw, configured, chat_model):
    sid = open_long(gw, turns=40)
    chat_model.then(*[Fail(413, "too large")] * 5)
    response = gw.post(f"/sessions/{sid}/turn", {"content": "x"})
    assert response.status_code == 502
    assert len(chat_model.requests) <= 4


@pytest.mark.parametrize(
    ("status", "message", "code", "kind"),
    [
        (413, "", None, "payload_too_large"),
        (400, "Request payload too large", None, "payload_too_large"),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", None, "context_overflow"),
        (400, "", "context_length_exceeded", "context_overflow"),
        (400, "Please reduce the length of the messages", None, "context_overflow"),
        (400, "max_tokens is too large", None, "output_too_large"),
        (429, "long context rate limit reached", None, "long_context_rate_limit"),
        (429, "Rate limit reached for requests", None, None),
        (500, "internal", None, None),
        (401, "invalid api key", None, None),
    ],
)
def test_model_errors_are_classified(status, message, code, kind):
    assert classify_error(status, message, code) == kind


# --- Post-call, pre-call and preflight ------------------------------------------------------


def test_reported_usage_over_the_threshold_enqueues_a_compression(
    gw, configured, django_capture_on_commit_callbacks
):
    sid = open_long(gw)
    with django_capture_on_commit_callbacks(execute=True):
        response = gw.post(
            f"/sessions/{sid}/messages",
            {
                "messages": [{"role": "user", "content": "next"}],
                "usage": {"prompt_tokens": 120_000, "completion_tokens": 10},
            },
        )
    (decision,) = response.json()["decisions"]
    assert decision["action"] == "queued" and "120,010 tokens" in decision["reason"]
    assert events(sid, trigger="threshold_post", outcome="fallback")


def test_every_skip_is_recorded_with_its_reason(gw, configured):
    sid = open_long(gw, turns=1)
    (event,) = events(sid, trigger="threshold_pre")
    assert event.outcome == "skipped" and "under the threshold 96,000" in event.reason
    assert event.threshold_tokens == 96_000


def test_a_run_time_override_changes_the_threshold(gw, configured):
    ModelThresholdOverride.objects.create(pattern="gpt-4o", ratio=0.9, threshold_tokens=5_000)
    sid = open_long(gw, turns=1)
    assert events(sid, trigger="threshold_pre")[0].threshold_tokens == 5_000


def test_a_context_engine_can_ask_for_compression_below_the_threshold(gw, configured):
    class Eager:
        name = "eager"

        def wants_compression(self, session, context):
            return "keep it short" if len(context) > 10 else None

    engine = Eager()
    plugins.register(engine)
    try:
        sid = open_long(gw)
        body = gw.post(f"/sessions/{sid}/turn", {"content": "hello"}).json()
    finally:
        plugins.unregister(engine)
    plugin = [d for d in body["decisions"] if d["trigger"] == "plugin"]
    assert plugin and "eager: keep it short" in plugin[0]["reason"]
    assert events(sid, trigger="plugin", outcome="fallback")


def test_the_master_switch_stops_automatic_triggers_but_not_manual(
    gw, configured, django_capture_on_commit_callbacks
):
    configured(enabled=False)
    sid = open_long(gw)
    with django_capture_on_commit_callbacks(execute=True):
        body = gw.post(
            f"/sessions/{sid}/messages",
            {"messages": [{"role": "user", "content": "x"}], "usage": {"prompt_tokens": 500_000}},
        ).json()
    assert body["decisions"][0]["action"] == "locked"
    assert "compression.enabled: false" in body["decisions"][0]["reason"]
    assert not events(sid, outcome="fallback")
    assert gw.post(f"/sessions/{sid}/compress").json()["outcome"] == "fallback"


# --- Hygiene --------------------------------------------------------------------------------


def test_the_death_spiral_is_broken_with_the_model_unreachable(gw, hermes_config):
    # Nothing listens on the chat or summary port: every network call fails.
    hermes_config(
        model={"default": "gpt-4o", "base_url": "http://127.0.0.1:9/v1"},
        auxiliary={"compression": {"model": "s", "base_url": "http://127.0.0.1:9/v1"}},
    )
    sid = gw.open(system_prompt="sys")["id"]
    session = Session.objects.get(pk=sid)
    for start in range(0, 5_000, 1_000):
        services.append_messages(
            session,
            [
                {"role": "user" if n % 2 == 0 else "assistant", "content": f"m{start + n}"}
                for n in range(1_000)
            ],
            run_hooks=False,
        )
    response = gw.post(f"/sessions/{sid}/turn", {"content": "hello?"})
    assert response.status_code == 502  # the chat model is down...
    hygiene_steps = [e for e in events(sid, trigger="hygiene") if e.outcome == "fallback"]
    assert hygiene_steps, "...but hygiene still compressed, locally"
    session.refresh_from_db()
    assert session.live_messages < 100
    assert_consistent(session)


def test_hygiene_reads_only_counters_and_passes_small_sessions(
    gw, configured, django_assert_max_num_queries
):
    sid = open_long(gw, turns=2)
    session = Session.objects.get(pk=sid)
    with django_assert_max_num_queries(3):  # overrides lookup, the skip's event; no message scan
        decision = hygiene(session)
    assert decision.action == "skip"
    assert events(sid, trigger="hygiene")[-1].reason.startswith("under both hygiene limits")


def test_a_failed_hygiene_compression_starts_the_hygiene_cooldown(gw, configured):
    sid = open_long(gw)
    session = Session.objects.get(pk=sid)
    Session.objects.filter(pk=sid).update(live_tokens=500_000)
    CompressionEvent.objects.create(session=session, trigger="hygiene", outcome="failed")
    session.refresh_from_db()
    decision = hygiene(session)
    assert decision.action == "locked" and "hygiene cooldown" in decision.reason


# --- Guards ---------------------------------------------------------------------------------


def _auto_event(session, before: int, after: int) -> tuple:
    """One automatic compression run: its event, then the arguments guards.record takes."""
    CompressionEvent.objects.create(
        session=session,
        trigger="threshold_post",
        outcome="compressed",
        tokens_before=before,
        tokens_after=after,
    )
    return (session, "threshold_post", "compressed", before, after)


def test_anti_thrash_locks_after_two_poor_compressions_then_probes(gw, configured):
    session = Session.objects.get(pk=open_long(gw, turns=1))
    assert guards.record(*_auto_event(session, 100_000, 95_000)) is None
    assert "2 compressions in a row" in guards.record(*_auto_event(session, 100_000, 97_000))
    assert "anti-thrash lock" in guards.blocked(session, "threshold_post")
    assert guards.blocked(session, "manual_api") is None
    assert guards.blocked(session, "error") is None
    # The lock ends: the next compression is the probe. A poor probe locks again...
    Session.objects.filter(pk=session.pk).update(thrash_lock_until=timezone.now())
    session.refresh_from_db()
    assert guards.blocked(session, "threshold_post") is None
    assert guards.record(*_auto_event(session, 100_000, 99_000))
    assert guards.blocked(session, "threshold_post")
    # ...a good one unlocks and clears the streak.
    Session.objects.filter(pk=session.pk).update(thrash_lock_until=timezone.now())
    session.refresh_from_db()
    assert guards.record(*_auto_event(session, 100_000, 20_000)) is None
    session.refresh_from_db()
    assert session.ineffective_streak == 0 and session.thrash_lock_until is None


def test_too_many_compressions_in_a_window_lock_even_when_each_saves_a_lot(gw, configured):
    session = Session.objects.get(pk=open_long(gw, turns=1))
    reasons = [guards.record(*_auto_event(session, 100_000, 10_000)) for _ in range(5)]
    assert reasons[:4] == [None] * 4
    assert "5 automatic compressions within 600 s" in reasons[4]


def test_exhaustion_resets_to_the_last_good_summary(gw, configured, chat_model, hermes_config):
    sid = open_long(gw)
    session = Session.objects.get(pk=sid)
    compress(session)  # a local (fallback) summary: not "good"
    Message.objects.filter(session=session, is_summary=True).update(is_fallback_summary=False)
    good = Message.objects.get(session=session, is_summary=True)
    services.append_messages(session, [m for n in range(50, 53) for m in turn(n)], run_hooks=False)
    Session.objects.filter(pk=sid).update(failure_streak=3)
    body = gw.post(f"/sessions/{sid}/turn", {"content": "after the reset"}).json()
    assert body["decisions"][0]["action"] == "exhausted"
    (reset,) = events(sid, trigger="exhaustion")
    assert reset.outcome == "reset" and "to the last good summary" in reset.reason
    # Recorded by the reset hook like every reset: what it archived and the context it left.
    assert reset.rows_archived > 0 and f"{reset.rows_archived} rows archived" in reset.reason
    assert reset.tokens_after < reset.tokens_before
    session.refresh_from_db()
    assert session.failure_streak == 0
    live = list(Message.objects.filter(session=session, active=True).order_by("position", "id"))
    assert good in live
    assert not [
        m for m in live if m.position > good.position and m.content.startswith("Question 5")
    ]
    assert (
        Message.objects.filter(session=session, content__startswith="Question 50").get().kind
        == "archived"
    )
    assert_consistent(session)


@pytest.mark.slow
def test_cooldown_survives_a_restart(tmp_path):
    sections = "auxiliary:\n  compression:\n    model: s\n    base_url: http://127.0.0.1:9/v1\n"
    with isolated_env(tmp_path, sections=sections) as env:
        _cooldown_across_processes(env)


def _cooldown_across_processes(env: dict[str, str]) -> None:
    first = """
import django; django.setup()
from compression.engine.compress import compress
from compression.engine.prompt import SUMMARY_PREFIX
from sessions_app import services
from sessions_app.keys import create_channel
from tests.test_compression import turn
s = services.open_session(create_channel("c")[0], model="gpt-4o", system_prompt="s").session
services.append_messages(s, [m for n in range(12) for m in turn(n)], run_hooks=False)
print(compress(s, max_passes=1).outcome, s.pk)
"""
    out = python("-c", first, env=env).split()
    assert out[-2] == "fallback"  # the summary model was unreachable
    second = f"""
import django; django.setup()
from compression.policy import guards
from sessions_app.models import Session
print(guards.blocked(Session.objects.get(pk="{out[-1]}"), "threshold_post"))
"""
    answer = python("-c", second, env=env)
    assert "cooldown after a failed summary until" in answer


def test_concurrent_triggers_on_one_session_make_exactly_one_compression(
    gw, hermes_config, transactional_db
):
    with FakeModelServer() as summary_model:
        summary_model.script.default = Reply("## Goal\nonce", delay=0.8)
        hermes_config(auxiliary={"compression": {"model": "s", "base_url": summary_model.base_url}})
        sid = open_long(gw)
        Session.objects.filter(pk=sid).update(live_messages=6_000)  # hygiene's hard limit
        session = Session.objects.get(pk=sid)
        from compression.policy.triggers import run_automatic

        outcomes = {}
        jobs = [
            lambda: outcomes.setdefault("hygiene", hygiene(Session.objects.get(pk=sid)).action),
            lambda: outcomes.setdefault(
                "post", run_automatic(Session.objects.get(pk=sid), "threshold_post").action
            ),
            lambda: outcomes.setdefault("manual", gw.post(f"/sessions/{sid}/compress").status_code),
        ]
        threads = [db_thread(job) for job in jobs]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join(20)
    assert Message.objects.filter(session=session, is_summary=True).count() == 1
    assert len(summary_model.requests) == 1
    assert len(outcomes) == 3  # every trigger finished: compressed, or refused as already running
    assert outcomes["manual"] in (200, 409)


def test_a_running_compression_refunds_the_attempt(gw, configured):
    session = Session.objects.get(pk=open_long(gw))
    Session.objects.filter(pk=session.pk).update(
        compressing_until=timezone.now() + timedelta(minutes=1)
    )
    from compression.policy.triggers import run_automatic

    decision = run_automatic(session, "threshold_post")
    assert decision.action == "running"
    session.refresh_from_db()
    assert session.failure_streak == 0


# --- Idle (T3) ------------------------------------------------------------------------------


def _idle(sid: str, tokens: int) -> None:
    Session.objects.filter(pk=sid).update(
        live_tokens=tokens, last_activity_at=timezone.now() - timedelta(hours=2)
    )


def test_the_idle_sweep_is_scheduled_and_off_by_default(gw, configured):
    from django_q.models import Schedule

    from compression.tasks import idle_sweep

    assert Schedule.objects.get(func="compression.tasks.idle_sweep").minutes == 1
    sid = open_long(gw)
    _idle(sid, 200_000)
    assert idle_sweep() == {"idle": "off"}
    assert not events(sid, trigger="idle")


def test_the_idle_sweep_compresses_only_idle_sessions_over_the_floor(gw, configured):
    from compression.tasks import idle_sweep

    configured(idle_compact_after_seconds=3600)
    big, small, busy = open_long(gw), open_long(gw), open_long(gw)
    _idle(big, 70_000)
    _idle(small, 60_000)
    Session.objects.filter(pk=busy).update(live_tokens=90_000)  # active just now
    result = idle_sweep()
    assert set(result["idle"]) == {big}
    assert events(big, trigger="idle", outcome="fallback")
    assert not events(small, trigger="idle") and not events(busy, trigger="idle")


def test_the_idle_sweep_respects_the_guards(gw, configured):
    from compression.tasks import idle_sweep

    configured(idle_compact_after_seconds=60)
    sid = open_long(gw)
    _idle(sid, 70_000)
    Session.objects.filter(pk=sid).update(cooldown_until=timezone.now() + timedelta(minutes=5))
    assert idle_sweep()["idle"] == {sid: "locked"}
    assert events(sid, trigger="idle", outcome="locked")


# --- Regressions found in review ------------------------------------------------------------


def test_with_in_place_false_the_turn_continues_in_the_new_session(gw, configured, chat_model):
    configured(in_place=False, threshold_tokens=1_000)
    sid = open_long(gw, turns=40)
    body = gw.post(f"/sessions/{sid}/turn", {"content": "go on"}).json()
    new_id = body["session"]["id"]
    assert new_id != sid
    sent = chat_model.requests[-1].body["messages"]
    assert sent[0] == {"role": "system", "content": "sys"}
    assert sent[-1] == {"role": "user", "content": "go on"}
    assert Message.objects.filter(session_id=new_id, role="assistant").last().content == (
        "Sure — done."
    )


def test_an_error_retry_compresses_deeper_each_time(gw, configured, chat_model):
    sid = open_long(gw, turns=40)
    overflow = Fail(400, "maximum context length exceeded", code="context_length_exceeded")
    chat_model.then(overflow, overflow)
    response = gw.post(f"/sessions/{sid}/turn", {"content": "once more"})
    assert response.status_code == 200, response.content
    sizes = [len(r.body["messages"]) for r in chat_model.requests]
    assert sizes[0] > sizes[1] > sizes[2]


def test_one_model_outage_counts_as_one_failure(gw, hermes_config):
    with FakeModelServer() as summary_model:
        summary_model.script.default = Fail(503, "overloaded")
        hermes_config(
            auxiliary={"compression": {"model": "s", "base_url": summary_model.base_url}},
            compression={"threshold_tokens": 1_000, "max_attempts": 3, "protect_last_n": 40},
        )
        session = Session.objects.get(pk=open_long(gw, turns=30))
        result = compress(session)
    assert len(result.passes) >= 2
    assert len(summary_model.requests) == 1  # later passes summarised locally
    session.refresh_from_db()
    assert session.failure_streak == 1


def test_hygiene_uses_its_own_timeouts(gw, hermes_config):
    with FakeModelServer() as summary_model:
        summary_model.script.default = Reply("late", delay=3)
        hermes_config(
            auxiliary={"compression": {"model": "s", "base_url": summary_model.base_url}},
            compression={
                "hygiene_timeout_seconds": 0.5,
                "hygiene_total_ceiling_seconds": 1,
                "hygiene_hard_message_limit": 10,
            },
        )
        session = Session.objects.get(pk=open_long(gw))
        started = time.monotonic()
        decision = hygiene(session)
        elapsed = time.monotonic() - started
    assert decision.action == "fallback"
    assert elapsed < 2.5


def test_the_hard_message_limit_overrides_cooldown_and_anti_thrash(gw, configured):
    configured(hygiene_hard_message_limit=20)
    sid = open_long(gw)
    later = timezone.now() + timedelta(hours=1)
    Session.objects.filter(pk=sid).update(cooldown_until=later, thrash_lock_until=later)
    assert hygiene(Session.objects.get(pk=sid)).action == "fallback"


def test_a_claim_taken_over_after_expiry_is_not_released_by_its_old_owner(gw, configured):
    from compression.engine import claim

    session = Session.objects.get(pk=open_long(gw, turns=1))
    old = claim.take(session, -1)  # already expired
    new = claim.take(session, 60)
    assert old is not None and new is not None
    claim.release(session, old)
    session.refresh_from_db()
    assert session.compressing_until == new


def test_local_compression_never_archives_the_tail_or_an_unanswered_call(gw, configured):
    sid = open_long(gw, turns=12)
    session = Session.objects.get(pk=sid)
    pending = turn(99)[:2]  # a question and a call whose result is still running
    services.append_messages(session, pending, run_hooks=False)
    last = Message.objects.filter(session=session).order_by("-position").first()
    compress(session, around_position=last.position)
    last.refresh_from_db()
    assert last.active and last.tool_calls
    services.append_messages(session, [turn(99)[2]], run_hooks=False)  # the result arrives
    assert_consistent(session)


@pytest.mark.parametrize(
    "body",
    [
        {"id": "x", "object": "chat.completion", "choices": []},
        {"id": "x", "choices": [{"index": 0}]},
        ["not", "a", "completion"],
    ],
)
def test_a_reply_that_is_not_a_chat_completion_is_502_not_500(gw, configured, chat_model, body):
    from compression.testing.fake_model import Raw

    sid = open_long(gw, turns=1)
    chat_model.then(Raw(body))
    response = gw.post(f"/sessions/{sid}/turn", {"content": "hi"})
    assert response.status_code == 502, response.content
    assert Message.objects.filter(session_id=sid).order_by("-position").first().content == "hi"


def test_null_usage_numbers_are_dropped(gw, configured, chat_model):
    chat_model.then(Reply("ok", usage={"prompt_tokens": None, "completion_tokens": None}))
    sid = open_long(gw, turns=1)
    response = gw.post(f"/sessions/{sid}/turn", {"content": "hi"})
    assert response.status_code == 200
    assert response.json()["usage"] is None


def test_the_idle_sweep_does_not_retry_a_session_it_already_handled(gw, configured):
    from compression.tasks import idle_sweep

    configured(idle_compact_after_seconds=60)
    sid = open_long(gw)
    _idle(sid, 70_000)
    assert sid in idle_sweep()["idle"]
    Session.objects.filter(pk=sid).update(live_tokens=70_000)  # still over the floor
    assert sid not in idle_sweep()["idle"]


def test_a_good_probe_after_a_frequency_lock_is_not_locked_again(gw, configured):
    session = Session.objects.get(pk=open_long(gw, turns=1))
    reasons = [guards.record(*_auto_event(session, 100_000, 10_000)) for _ in range(5)]
    assert "automatic compressions within" in reasons[-1]
    Session.objects.filter(pk=session.pk).update(thrash_lock_until=timezone.now())  # lock ends
    session.refresh_from_db()
    assert guards.record(*_auto_event(session, 100_000, 10_000)) is None
    session.refresh_from_db()
    assert guards.blocked(session, "threshold_post") is None


def test_exhaustion_without_a_good_summary_keeps_only_the_system_prompt(gw, configured):
    from compression.policy.recovery import reset_after_exhaustion

    sid = open_long(gw)
    session = Session.objects.get(pk=sid)
    total = session.total_messages
    Session.objects.filter(pk=sid).update(failure_streak=3, last_prompt_tokens=90_000)
    reset_after_exhaustion(session)
    session.refresh_from_db()
    assert [m["role"] for m in selectors.live_context(session)] == ["system"]
    assert session.failure_streak == 0 and session.last_prompt_tokens is None
    assert Message.objects.filter(session=session).count() == total  # nothing deleted
    assert_consistent(session)
    (reset,) = events(sid, outcome="reset")  # once: by the reset hook, not again by the caller
    assert reset.trigger == "exhaustion" and reset.reason.startswith("compression exhausted")


def test_an_oversized_turn_message_is_refused_before_anything_runs(
    gw, configured, chat_model, hermes_config
):
    hermes_config(
        model={"default": "gpt-4o", "base_url": chat_model.base_url},
        compression={"hygiene_hard_message_limit": 10},
        server={"max_message_bytes": 2048},
    )
    sid = open_long(gw)
    before = list(Message.objects.filter(session_id=sid).values_list("pk", "active"))
    response = gw.post(f"/sessions/{sid}/turn", {"content": "x" * 5000})
    assert response.status_code == 413
    assert list(Message.objects.filter(session_id=sid).values_list("pk", "active")) == before
    assert not chat_model.requests and not events(sid, trigger="hygiene")


# --- The edges (issue 13) ---------------------------------------------------------------------


def test_a_turn_calls_the_sessions_own_model_and_the_default_only_for_sessions_without_one(
    gw, configured, chat_model
):
    sid = gw.open(model="claude-sonnet-4", system_prompt="sys")["id"]
    assert gw.post(f"/sessions/{sid}/turn", {"content": "hi"}).status_code == 200
    assert chat_model.requests[-1].body["model"] == "claude-sonnet-4"
    response = gw.post("/sessions", {"system_prompt": "sys"})
    unnamed = response.json()["id"]
    assert gw.post(f"/sessions/{unnamed}/turn", {"content": "hi"}).status_code == 200
    assert chat_model.requests[-1].body["model"] == "gpt-4o"  # model.default


def _over_threshold(gw, sid: str, n: int):
    return gw.post(
        f"/sessions/{sid}/messages",
        {
            "messages": [{"role": "user", "content": f"next {n}"}],
            "usage": {"prompt_tokens": 120_000, "completion_tokens": 10},
        },
    ).json()["decisions"]


def test_appends_over_the_threshold_queue_one_automatic_compression_not_one_each(
    gw, configured, django_capture_on_commit_callbacks
):
    sid = open_long(gw)
    with django_capture_on_commit_callbacks(execute=False) as queued:  # the worker is down
        decisions = [_over_threshold(gw, sid, n)[0] for n in range(5)]
    assert len(queued) == 1
    assert [d["action"] for d in decisions] == ["queued"] * 5
    assert all("already queued" in d["reason"] for d in decisions[1:])
    # The worker comes back: the one task runs, and the next append may queue again.
    queued[0]()
    assert len(events(sid, trigger="threshold_post", outcome="fallback")) == 1
    assert Session.objects.get(pk=sid).auto_queued_at is None
    with django_capture_on_commit_callbacks(execute=False) as again:
        _over_threshold(gw, sid, 9)
    assert len(again) == 1


def test_an_append_during_a_running_compression_says_so_and_queues_nothing(
    gw, configured, django_capture_on_commit_callbacks
):
    sid = open_long(gw)
    Session.objects.filter(pk=sid).update(compressing_until=timezone.now() + timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=False) as queued:
        (decision,) = _over_threshold(gw, sid, 1)
    assert queued == []
    assert decision["action"] == "running" and "is running" in decision["reason"]


def test_a_late_automatic_task_rechecks_the_threshold_and_skips_a_compressed_session(
    gw, configured, django_capture_on_commit_callbacks
):
    sid = open_long(gw, turns=30)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        _over_threshold(gw, sid, 1)
    # Meanwhile an operator compresses; the reported usage no longer describes the context.
    compress(Session.objects.get(pk=sid), trigger="manual_admin")
    session = Session.objects.get(pk=sid)
    compressions, streak = session.compressions, session.ineffective_streak
    queued[0]()  # the worker catches up
    session.refresh_from_db()
    assert session.compressions == compressions and session.ineffective_streak == streak
    (skip,) = events(sid, trigger="threshold_post", outcome="skipped")[-1:]
    assert "no longer needed" in skip.reason


def test_micro_compaction_folds_do_not_count_toward_the_frequency_guard(gw, configured):
    session = Session.objects.get(pk=open_long(gw, turns=1))
    for _ in range(6):
        CompressionEvent.objects.create(
            session=session,
            trigger="micro",
            path="micro",
            outcome="compressed",
            tokens_before=10_000,
            tokens_after=9_000,
        )
    assert guards.record(*_auto_event(session, 100_000, 20_000)) is None
    session.refresh_from_db()
    assert session.thrash_lock_until is None
    assert guards.blocked(session, "micro") is None


def test_preflight_fires_end_to_end_when_the_request_estimate_crosses_the_threshold(
    gw, hermes_config, chat_model
):
    # Hygiene passes (the stored rows are under the threshold); the turn's own message takes
    # the request over it, so preflight compresses before the model call.
    hermes_config(
        model={"default": "gpt-4o", "base_url": chat_model.base_url},
        auxiliary={"compression": {"model": "summariser", "base_url": chat_model.base_url}},
        compression={"threshold_tokens": 1_000},
    )
    sid = gw.open(system_prompt="sys")["id"]
    gw.post(
        f"/sessions/{sid}/messages",
        {"messages": [m for n in range(8) for m in turn(n, size=100)]},
    )
    session = Session.objects.get(pk=sid)
    assert session.live_tokens < 1_000
    body = gw.post(f"/sessions/{sid}/turn", {"content": "long question " * 120}).json()
    steps = [(d["trigger"], d["action"]) for d in body["decisions"]]
    assert steps[0] == ("hygiene", "skip")
    assert ("preflight", "compress") in steps
    assert ("preflight", "compressed") in steps
    (event,) = events(sid, trigger="preflight", outcome="compressed")[:1]
    assert event.rows_archived > 0
    assert body["reply"]["content"] == "Sure — done."
    sent = chat_model.requests[-1].body["messages"]
    assert any(SUMMARY_PREFIX in (m["content"] or "") for m in sent)  # the model saw the summary


def test_preflight_fires_on_the_message_count_alone(gw, configured, chat_model):
    configured(hygiene_hard_message_limit=30)
    sid = open_long(gw, turns=10)  # 41 live messages, few tokens
    # Hygiene is in its own cooldown after a failure, so it does not enforce the limit itself.
    CompressionEvent.objects.create(
        session_id=sid, trigger="hygiene", outcome="failed", reason="earlier failure"
    )
    body = gw.post(f"/sessions/{sid}/turn", {"content": "next"}).json()
    preflight = [d for d in body["decisions"] if d["trigger"] == "preflight"]
    assert preflight[0]["action"] == "compress"
    assert "exceed the compressible window of 30" in preflight[0]["reason"]
    assert preflight[1]["action"] == "fallback"


def _wait_for_summary(sid: str, seconds: float = 15) -> Message:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        row = unlocked(Message.objects.filter(session_id=sid, is_summary=True).first)
        if row is not None:
            return row
        time.sleep(0.1)
    raise AssertionError("no summary was written")


@pytest.mark.slow
def test_a_turn_waits_for_a_slow_hygiene_compression_only_as_long_as_the_hold(
    gw, hermes_config, chat_model, transactional_db
):
    with FakeModelServer() as summariser:
        summariser.script.default = Reply("## Goal\n" + "Long work, recorded. " * 20, delay=3)
        hermes_config(
            model={"default": "gpt-4o", "base_url": chat_model.base_url},
            auxiliary={"compression": {"model": "s", "base_url": summariser.base_url}},
            compression={"hygiene_max_turn_hold_seconds": 0.5},
        )
        sid = gw.open(system_prompt="sys")["id"]
        gw.post(
            f"/sessions/{sid}/messages",
            {"messages": [m for n in range(12) for m in turn(n, size=300)]},
        )
        # Only now is the session over its threshold: the next turn's hygiene compresses.
        hermes_config(
            model={"default": "gpt-4o", "base_url": chat_model.base_url},
            auxiliary={"compression": {"model": "s", "base_url": summariser.base_url}},
            compression={"threshold_tokens": 1_000, "hygiene_max_turn_hold_seconds": 0.5},
        )
        started = time.monotonic()
        body = gw.post(f"/sessions/{sid}/turn", {"content": "the next question"}).json()
        took = time.monotonic() - started
        assert took < 2.5, f"the turn waited {took:.1f} s for a 3 s summary"
        (step,) = [d for d in body["decisions"] if d["trigger"] == "hygiene"]
        assert step["action"] == "running" and "adopted by the next turn" in step["reason"]
        assert body["reply"]["content"] == "Sure — done."
        sent = chat_model.requests[-1].body["messages"]
        assert not any(SUMMARY_PREFIX in (m["content"] or "") for m in sent)  # the old context
        summary = _wait_for_summary(sid)
        # The hygiene thread goes on writing (its event, the guards) after the summary: let it
        # finish, or a read of the in-memory test database meets its table lock.
        for thread in threading.enumerate():
            if thread.name == "hermes-hygiene":
                thread.join(15)
    ask = Message.objects.get(session_id=sid, content="the next question")
    reply = Message.objects.get(session_id=sid, position=ask.position + 1)
    # Never a summary of what the turn appended: both stay live after it.
    assert summary.covers_to_position < ask.position
    assert ask.active and reply.active
    assert_consistent(Session.objects.get(pk=sid))
    # The next turn gets the summary.
    gw.post(f"/sessions/{sid}/turn", {"content": "and then?"})
    assert any(
        SUMMARY_PREFIX in (m["content"] or "") for m in chat_model.requests[-1].body["messages"]
    )


def test_a_fast_hygiene_compression_is_in_the_same_turns_context(
    gw, hermes_config, chat_model, transactional_db
):
    with FakeModelServer() as summariser:
        summariser.script.default = Reply("## Goal\n" + "Long work, recorded. " * 20)
        hermes_config(
            model={"default": "gpt-4o", "base_url": chat_model.base_url},
            auxiliary={"compression": {"model": "s", "base_url": summariser.base_url}},
            compression={"hygiene_max_turn_hold_seconds": 5},
        )
        sid = gw.open(system_prompt="sys")["id"]
        gw.post(
            f"/sessions/{sid}/messages",
            {"messages": [m for n in range(12) for m in turn(n, size=300)]},
        )
        # Only now is the session over its threshold: the next turn's hygiene compresses.
        hermes_config(
            model={"default": "gpt-4o", "base_url": chat_model.base_url},
            auxiliary={"compression": {"model": "s", "base_url": summariser.base_url}},
            compression={"threshold_tokens": 1_000, "hygiene_max_turn_hold_seconds": 5},
        )
        body = gw.post(f"/sessions/{sid}/turn", {"content": "the next question"}).json()
    (step,) = [d for d in body["decisions"] if d["trigger"] == "hygiene"]
    assert step["action"] == "compressed"
    sent = chat_model.requests[-1].body["messages"]
    assert any(SUMMARY_PREFIX in (m["content"] or "") for m in sent)


@pytest.mark.slow
def test_the_summarisers_own_timeout_bounds_the_call(gw, hermes_config):
    with FakeModelServer() as summariser:
        summariser.script.default = Reply("## Goal\n" + "Late. " * 50, delay=3)
        hermes_config(
            auxiliary={
                "compression": {"model": "s", "base_url": summariser.base_url, "timeout": 1}
            },
        )
        session = Session.objects.get(pk=open_long(gw))
        started = time.monotonic()
        result = compress(session, max_passes=1)
    assert time.monotonic() - started < 2.5
    assert result.outcome == "fallback" and result.events[0].error.startswith("timeout")


@pytest.mark.slow
def test_a_too_large_error_while_another_compression_runs_waits_without_calling_again(
    gw, configured, chat_model
):
    sid = open_long(gw)
    chat_model.script.default = Fail(413, "Request Entity Too Large")
    # Another compression (a hygiene compression still running, say) holds the session for 2 s.
    Session.objects.filter(pk=sid).update(compressing_until=timezone.now() + timedelta(seconds=2))
    response = gw.post(f"/sessions/{sid}/turn", {"content": "go"})
    assert response.status_code == 502
    # One call before the wait, then one per attempt (3): never a call every half second.
    assert len(chat_model.requests) == 1 + 3 + 1


def test_a_broker_that_refuses_the_task_leaves_no_mark_behind(
    gw, configured, django_capture_on_commit_callbacks, monkeypatch
):
    sid = open_long(gw)

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr("django_q.tasks.async_task", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        (decision,) = _over_threshold(gw, sid, 1)
    assert decision["action"] == "queued"
    assert Session.objects.get(pk=sid).auto_queued_at is None  # the next append tries again
