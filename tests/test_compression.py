"""The compression engine against a real loopback model server."""

from __future__ import annotations

import hashlib
import re
import threading
import time

import pytest

from compression.engine.compress import AlreadyRunning, compress
from compression.engine.prompt import SUMMARY_PREFIX, SUMMARY_SUFFIX, budget_tokens
from compression.engine.selection import orphans
from compression.models import CompressionEvent
from compression.testing.fake_model import Drop, Fail, FakeModelServer, Malformed, Reply
from core.config import CompressionConfig
from sessions_app import selectors, services
from sessions_app.models import Message, Session
from sessions_app.services import recount


def turn(n: int, *, tools: int = 1, size: int = 40) -> list[dict]:
    """A user ask, an assistant tool call (``tools`` parallel calls), the results, a reply."""
    calls = [
        {
            "id": f"call_{n}_{k}",
            "type": "function",
            "function": {"name": "run_shell", "arguments": f'{{"cmd": "step {n}.{k}"}}'},
        }
        for k in range(tools)
    ]
    return [
        {"role": "user", "content": f"Question {n}: what about item-{n}? " + "x" * size},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *[
            {
                "role": "tool",
                "tool_call_id": c["id"],
                "name": "run_shell",
                "content": f"output of step {n}.{k} " + "y" * size,
            }
            for k, c in enumerate(calls)
        ],
        {"role": "assistant", "content": f"Answer {n}: item-{n} is fine."},
    ]


def make_session(channel, turns: int = 12, **kwargs) -> Session:
    session = services.open_session(channel, model="gpt-4o", system_prompt="You are terse.").session
    messages = [m for n in range(turns) for m in turn(n, **kwargs)]
    services.append_messages(session, messages)
    session.refresh_from_db()
    return session


def originals_digest(session: Session) -> str:
    rows = Message.objects.filter(session=session, is_summary=False).order_by("position")
    digest = hashlib.sha256()
    for row in rows.values_list("position", "role", "content", "tool_calls", "tool_call_id"):
        digest.update(repr(row).encode())
    return digest.hexdigest()


def assert_consistent(session: Session) -> list[dict]:
    session.refresh_from_db()
    actual = recount(session)
    assert (session.live_messages, session.live_tokens, session.total_messages) == (
        actual.live_messages,
        actual.live_tokens,
        actual.total_messages,
    )
    context = selectors.live_context(session)
    assert orphans(context) == [], orphans(context)
    return context


# --- Selection, shape and write-back ---------------------------------------------------------


def test_a_compression_keeps_head_and_tail_and_archives_the_middle(
    channel, summariser, model_server
):
    model_server.then(Reply("## Goal\nKeep item-3 fine."))
    session = make_session(channel)
    before = originals_digest(session)
    result = compress(session)
    assert result.outcome == "compressed"
    context = assert_consistent(session)
    # system + 3 head messages + summary + tail of 20 (aligned to whole tool groups)
    assert context[0] == {"role": "system", "content": "You are terse."}
    summary = next(m for m in context if m["content"] and SUMMARY_PREFIX in m["content"])
    assert summary["content"].endswith(SUMMARY_SUFFIX)
    assert "## Goal\nKeep item-3 fine." in summary["content"]
    index = context.index(summary)
    assert index == 4
    assert len(context) - index - 1 >= 20
    assert originals_digest(session) == before  # no original changed
    row = Message.objects.get(session=session, is_summary=True)
    archived = Message.objects.filter(session=session, compressed=True)
    assert set(archived.values_list("summarized_by", flat=True)) == {row.pk}
    assert (row.covers_from_position, row.covers_to_position) == (
        archived.order_by("position").first().position,
        archived.order_by("position").last().position,
    )
    assert all(m.content is not None or m.tool_calls for m in archived)
    event = result.events[0]
    assert event.trigger == "manual_api" and event.outcome == "compressed"
    assert event.rows_archived == archived.count()
    assert event.tokens_after < event.tokens_before
    assert event.summary_message_id == row.pk


@pytest.mark.slow
@pytest.mark.parametrize("tools", [1, 2, 3])
def test_cuts_never_split_tool_calls_from_their_results(channel, hermes_config, tools):
    for first_n in range(0, 6):
        for last_n in range(1, 12):
            hermes_config(compression={"protect_first_n": first_n, "protect_last_n": last_n})
            session = make_session(channel, turns=6, tools=tools)
            compress(session)
            assert_consistent(session)


def test_the_tail_always_holds_a_real_user_message(channel, hermes_config):
    hermes_config(compression={"protect_last_n": 3, "min_tail_user_messages": 1})
    session = make_session(channel, turns=8, tools=3)  # each turn ends with 5 non-user rows
    compress(session)
    context = assert_consistent(session)
    summary_at = next(i for i, m in enumerate(context) if SUMMARY_PREFIX in (m["content"] or ""))
    assert any(m["role"] == "user" for m in context[summary_at + 1 :])


def test_the_summary_role_keeps_roles_alternating(channel, hermes_config):
    hermes_config(compression={"protect_first_n": 0})
    session = make_session(channel)
    compress(session)
    context = selectors.live_context(session)
    assert context[1]["role"] == "user"  # right after the system prompt
    hermes_config(compression={"protect_first_n": 1})
    session = make_session(channel)
    compress(session)
    context = selectors.live_context(session)
    assert [m["role"] for m in context[:3]] == ["system", "user", "assistant"]


def test_budget_is_a_fifth_of_the_middle_clamped():
    config = CompressionConfig()
    assert budget_tokens(1_000, config, 1_000_000) == 2_000
    assert budget_tokens(30_000, config, 1_000_000) == 6_000
    assert budget_tokens(500_000, config, 1_000_000) == 10_000


@pytest.mark.parametrize(
    "middle, window, budget",
    [
        (39_720, 32_000, 2_000),  # 5% of 32K is 1,600: the 2,000 floor wins
        (39_720, 128_000, 6_400),  # 5% of 128K under a fifth of the middle (7,944)
        (39_720, 200_000, 7_944),  # a fifth of the middle under 5% of the window
        (400_000, 1_000_000, 10_000),  # the 10,000 ceiling
        (400_000, 100_000, 5_000),
    ],
)
def test_budget_is_capped_at_five_percent_of_the_context_window(middle, window, budget):
    assert budget_tokens(middle, CompressionConfig(), window) == budget


def test_a_32k_session_asks_for_a_summary_within_its_window(
    channel, summariser, model_server, hermes_config
):
    session = make_session(channel, turns=60, size=600)
    Session.objects.filter(pk=session.pk).update(context_window=32_000)
    session.refresh_from_db()
    result = compress(session)
    assert "summary budget 2,000 tokens" in result.events[0].reason
    assert "about 2,000 tokens" in model_server.requests[0].body["messages"][1]["content"]


def test_deeper_passes_keep_a_tail_of_eight_messages_with_a_user_message(channel, hermes_config):
    from compression.engine.tail import tail_length

    assert [tail_length(20, n) for n in range(4)] == [20, 10, 8, 8]
    assert [tail_length(5, n) for n in range(3)] == [5, 5, 5]
    hermes_config(
        compression={"max_attempts": 4, "threshold_tokens": 1_000, "min_tail_user_messages": 0}
    )
    session = make_session(channel, turns=40, tools=3)  # user, call, 3 results, answer
    result = compress(session)
    assert len(result.passes) >= 2
    context = assert_consistent(session)
    at = next(i for i, m in enumerate(context) if SUMMARY_PREFIX in (m["content"] or ""))
    tail = context[at + 1 :]
    assert len(tail) >= 8
    assert any(m["role"] == "user" for m in tail)


# --- What is sent to the model ---------------------------------------------------------------


def test_the_request_has_no_output_cap_and_states_the_target(channel, summariser, model_server):
    session = make_session(channel, turns=20, size=2_000)
    compress(session, focus="item-7")
    (request,) = model_server.requests
    body = request.body
    assert request.path == "/v1/chat/completions"
    assert body["model"] == "fake-summary"
    for cap in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        assert cap not in body
    prompt = body["messages"][1]["content"]
    middle = sum(
        Message.objects.filter(session=session, compressed=True).values_list(
            "token_count", flat=True
        )
    )
    expected = budget_tokens(middle, CompressionConfig(), session.context_window)
    assert expected > 2_000  # a fifth of the middle, not the floor
    assert f"Target length: about {expected:,} tokens" in prompt
    assert "Focus: keep the most detail about: item-7" in prompt
    assert "## Open questions and pending user asks" in prompt
    assert "history" in body["messages"][0]["content"]


def test_long_messages_and_long_input_are_truncated_with_markers(channel, summariser, model_server):
    summariser(summary_input_max_chars=20_000)
    session = make_session(channel, turns=3)
    services.append_messages(
        session,
        [
            {"role": "user", "content": "A" * 4_000 + "MIDDLE" + "B" * 5_000},
            {"role": "assistant", "content": "ok"},
        ]
        + [m for n in range(10, 40) for m in turn(n, size=600)],
    )
    compress(session)
    prompt = model_server.requests[0].body["messages"][1]["content"]
    assert "characters of this message omitted" in prompt
    assert "MIDDLE" not in prompt  # dropped from the middle of the 9,006-character message
    assert "INPUT TRUNCATED" in prompt
    assert "the transcript was too long and was truncated" in prompt
    event = CompressionEvent.objects.get(session=session, trigger="manual_api")
    assert "input truncated" in event.reason


def test_reasoning_is_stripped_from_the_stored_summary(channel, summariser, model_server):
    model_server.then(
        Reply(
            "<think>private chain of thought</think>## Goal\nShip it.",
            reasoning="more hidden reasoning",
        )
    )
    session = make_session(channel)
    assert compress(session).outcome == "compressed"
    summary = Message.objects.get(session=session, is_summary=True)
    assert "chain of thought" not in summary.content
    assert "hidden reasoning" not in summary.content
    assert "## Goal\nShip it." in summary.content


# --- Failures and fallbacks -----------------------------------------------------------------

FAILURES = {
    "rate_limited": Fail(429, "Rate limit reached", code="rate_limit_exceeded"),
    "server_error": Fail(500, "internal error"),
    "payload_too_large": Fail(413, "Request Entity Too Large"),
    "context_length": Fail(
        400,
        "This model's maximum context length is 8192 tokens",
        code="context_length_exceeded",
        type="invalid_request_error",
    ),
    "empty": Reply(content=""),
    "reasoning_only": Reply(content="<think>only thinking, no answer</think>"),
    "malformed": Malformed(),
    "dropped": Drop(),
    "idle_timeout": Reply(delay=3),
    "total_timeout": Reply(content="slow " * 40, chunks=40, chunk_delay=0.2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FAILURES))
def test_every_failure_falls_back_to_a_labelled_local_summary(
    channel, summariser, model_server, name
):
    model_server.then(FAILURES[name])
    session = make_session(channel)
    before = originals_digest(session)
    result = compress(session, max_passes=1)
    assert result.outcome == "fallback"
    event = result.events[0]
    assert event.outcome == "fallback" and event.error
    summary = Message.objects.get(session=session, is_summary=True)
    assert summary.is_fallback_summary
    assert "FALLBACK SUMMARY" in summary.content
    assert "## Scope" in summary.content and "user: Question" in summary.content
    assert len(summary.content) <= 8_000  # L4: the summary as stored, its wrapping included
    session.refresh_from_db()
    assert session.failure_streak == 1 and session.cooldown_until is not None
    assert originals_digest(session) == before
    assert_consistent(session)
    kinds = {"malformed": "bad_response", "empty": "empty", "reasoning_only": "empty"}
    assert event.error.startswith(kinds.get(name, ""))


def test_abort_on_summary_failure_changes_nothing(channel, summariser, model_server):
    summariser(abort_on_summary_failure=True)
    model_server.then(Fail(500, "boom"))
    session = make_session(channel)
    rows_before = list(Message.objects.filter(session=session).values_list("pk", "active"))
    result = compress(session, max_passes=1)
    assert result.outcome == "failed"
    assert "boom" in result.events[0].error
    assert list(Message.objects.filter(session=session).values_list("pk", "active")) == rows_before
    session.refresh_from_db()
    assert session.cooldown_until is not None and session.compressions == 0


def test_with_no_summary_model_the_local_summary_is_used_and_labelled(channel, db):
    session = make_session(channel)
    result = compress(session)
    assert result.outcome == "fallback"
    assert "no summary model configured" in result.events[0].error
    session.refresh_from_db()
    assert session.failure_streak == 0 and session.cooldown_until is None  # expected, not a failure


# --- Iteration, concurrency, passes ----------------------------------------------------------


def db_thread(target) -> threading.Thread:
    """A thread that closes its own database connections when done (an open one would keep
    PostgreSQL from dropping the test database)."""
    from django.db import connections

    def run() -> None:
        try:
            target()
        finally:
            connections.close_all()

    return threading.Thread(target=run)


def compress_in_background(session: Session, model_server: FakeModelServer):
    """Start a compression in another thread and return once its model call is in flight."""
    outcome: dict = {}
    worker = db_thread(lambda: outcome.setdefault("r", compress(session)))
    worker.start()
    deadline = time.monotonic() + 5
    while not model_server.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    return outcome, worker


def test_three_rounds_each_absorb_the_previous_summary(channel, summariser, model_server):
    session = make_session(channel)
    for round_ in range(1, 4):
        model_server.then(Reply(f"## Goal\nRound {round_} summary."))
        if round_ > 1:
            services.append_messages(
                session, [m for n in range(100 * round_, 100 * round_ + 8) for m in turn(n)]
            )
        assert compress(session, max_passes=1).outcome == "compressed"
    prompts = [r.body["messages"][1]["content"] for r in model_server.requests]
    assert "PREVIOUS SUMMARY" not in prompts[0]
    assert "Round 1 summary." in prompts[1] and SUMMARY_PREFIX not in prompts[1]
    assert "Round 2 summary." in prompts[2]
    summaries = list(Message.objects.filter(session=session, is_summary=True).order_by("id"))
    assert [s.active for s in summaries] == [False, False, True]
    assert summaries[0].summarized_by_id == summaries[1].pk
    assert summaries[1].summarized_by_id == summaries[2].pk
    assert "Round 3 summary." in summaries[2].content
    assert_consistent(session)


def test_messages_appended_during_the_model_call_stay_live_after_the_summary(
    channel, summariser, model_server, transactional_db
):
    model_server.then(Reply("## Goal\nslow summary", delay=1.0))
    session = make_session(channel)
    outcome, worker = compress_in_background(session, model_server)
    services.append_messages(session, [{"role": "user", "content": "typed while summarising"}])
    worker.join(10)
    assert outcome["r"].outcome == "compressed"
    context = assert_consistent(session)
    assert context[-1] == {"role": "user", "content": "typed while summarising"}
    summary_at = next(i for i, m in enumerate(context) if SUMMARY_PREFIX in (m["content"] or ""))
    assert summary_at < len(context) - 1


def test_a_second_request_while_one_runs_is_refused_and_one_summary_results(
    channel, summariser, model_server, transactional_db
):
    model_server.then(Reply("## Goal\nonly one", delay=1.0))
    session = make_session(channel)
    worker = db_thread(lambda: compress(session))
    worker.start()
    deadline = time.monotonic() + 5
    while not model_server.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(AlreadyRunning):
        compress(session)
    worker.join(10)
    assert Message.objects.filter(session=session, is_summary=True).count() == 1
    assert len(model_server.requests) == 1
    session.refresh_from_db()
    assert session.compressing_until is None  # the claim is released


def test_a_session_reset_during_the_model_call_is_left_alone(
    channel, summariser, model_server, transactional_db
):
    model_server.then(Reply("## Goal\nstale", delay=1.0))
    session = make_session(channel)
    outcome, worker = compress_in_background(session, model_server)
    services.reset_session(session)
    worker.join(10)
    assert outcome["r"].outcome == "skipped"
    assert "changed while the summary" in outcome["r"].events[0].reason
    assert not Message.objects.filter(session=session, is_summary=True).exists()
    assert_consistent(session)


def test_more_passes_run_while_the_session_stays_over_its_threshold(channel, hermes_config):
    hermes_config(compression={"threshold_tokens": 1_000, "max_attempts": 3, "protect_last_n": 40})
    session = make_session(channel, turns=30, size=400)
    result = compress(session)
    assert len(result.passes) >= 2
    assert [p.outcome for p in result.passes][:2] == ["fallback", "fallback"]
    assert_consistent(session)


def test_local_compression_only_touches_the_window_around_a_message(channel, db):
    session = make_session(channel, turns=20)
    around = Message.objects.get(session=session, content__startswith="Question 10:").position
    result = compress(session, around_position=around)
    assert result.outcome == "fallback"
    summary = Message.objects.get(session=session, is_summary=True)
    assert summary.covers_from_position <= around <= summary.covers_to_position
    assert summary.covers_to_position - summary.covers_from_position <= 25
    context = assert_consistent(session)
    assert context[-1]["content"] == "Answer 19: item-19 is fine."


def test_in_place_false_continues_in_a_linked_session(channel, hermes_config):
    hermes_config(compression={"in_place": False})
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", external_id="chat-9"
    ).session
    services.append_messages(session, [m for n in range(12) for m in turn(n, size=200)])
    result = compress(session)
    new = result.continued_in
    assert new is not None and new.parent_id == session.pk
    assert new.external_id == "chat-9"
    assert services.open_session(channel, external_id="chat-9").session.pk == new.pk
    assert_consistent(new)
    assert Message.objects.filter(session=new, is_summary=True, active=True).count() == 1
    session.refresh_from_db()
    assert session.live_messages == 0
    assert Message.objects.filter(session=session).count() == session.total_messages


def test_nothing_to_compress_is_recorded_as_skipped(channel, db):
    session = make_session(channel, turns=2)
    result = compress(session)
    assert result.outcome == "skipped"
    assert "nothing to compress" in result.events[0].reason


# --- Replies that must not become the summary (issue 13) --------------------------------------


@pytest.mark.parametrize(
    "reply, kind",
    [
        ("I'm sorry, but I can't help with that.", "refusal"),
        ("抱歉，我无法完成这个请求。", "refusal"),  # noqa: RUF001 - a real Chinese comma
        ("Done.", "too_short"),
    ],
)
def test_a_refusal_or_an_absurdly_short_reply_is_a_failed_summary(
    channel, summariser, model_server, reply, kind
):
    model_server.then(Reply(reply))
    session = make_session(channel, turns=40)
    result = compress(session)
    assert result.outcome == "fallback"
    event = result.events[0]
    assert event.error.startswith(kind)
    summary = Message.objects.get(session=session, is_summary=True)
    assert summary.is_fallback_summary and reply not in summary.content
    session.refresh_from_db()
    assert session.failure_streak == 1 and session.cooldown_until is not None


def test_a_summary_that_opens_apologetically_but_is_long_is_kept(channel, summariser, model_server):
    text = "Sorry for the length: " + "## Goal\nKeep item-3 and item-7 fine. " * 40
    model_server.then(Reply(text))
    result = compress(make_session(channel, turns=40))
    assert result.outcome == "compressed"


def test_a_malformed_reply_is_a_bad_response_not_an_empty_summary(
    channel, summariser, model_server
):
    model_server.then(Malformed())
    result = compress(make_session(channel), max_passes=1)
    assert result.events[0].error.startswith("bad_response")


def test_a_compression_that_would_grow_the_context_is_ineffective_and_writes_nothing(
    channel, summariser, model_server
):
    model_server.then(Reply("## Goal\n" + "Every detail of the small middle, at length. " * 60))
    session = make_session(channel, turns=7)
    before = originals_digest(session)
    live_before = session.live_tokens
    result = compress(session, max_passes=1)
    assert result.outcome == "ineffective"
    event = result.events[0]
    assert "would not be smaller" in event.reason and event.tokens_after == live_before
    session.refresh_from_db()
    assert session.live_tokens == live_before and session.compressions == 0
    assert not Message.objects.filter(session=session, is_summary=True).exists()
    assert originals_digest(session) == before


def test_a_good_manual_compression_ends_the_failure_streak_and_the_cooldown(
    channel, summariser, model_server
):
    from datetime import timedelta

    from django.utils import timezone

    session = make_session(channel, turns=30)
    Session.objects.filter(pk=session.pk).update(
        failure_streak=2, cooldown_until=timezone.now() + timedelta(minutes=9)
    )
    model_server.then(Reply("## Goal\n" + "Keep item-3 fine. " * 20))
    assert compress(session).outcome == "compressed"
    session.refresh_from_db()
    assert session.failure_streak == 0 and session.cooldown_until is None


@pytest.mark.parametrize(
    ("turns", "size", "limit"),
    [
        (12, 40, 8_000),
        (60, 400, 8_000),
        (140, 120, 8_000),
        (30, 2_000, 8_000),
        (80, 300, 2_500),
        (200, 50, 1_200),
        pytest.param(25, 5_000, 20_000, marks=pytest.mark.slow),  # 6 s: the quick lane skips it
    ],
)
def test_the_fallback_summary_as_stored_keeps_to_its_limit_wrapping_and_all(
    channel, hermes_config, turns, size, limit
):
    """L4: at most ``fallback_summary_max_chars`` -- the marker, the fallback note and the note
    on the positions it covers included -- whatever the span's length and the limit."""
    hermes_config(compression={"fallback_summary_max_chars": limit})  # no model: local
    session = make_session(channel, turns=turns, size=size)
    assert compress(session, max_passes=1).outcome == "fallback"
    summary = Message.objects.get(session=session, is_summary=True)
    assert len(summary.content) <= limit, len(summary.content)
    assert summary.content.startswith(SUMMARY_PREFIX)


def test_the_fallback_summary_covers_the_whole_span_not_its_end(channel, hermes_config):
    hermes_config()  # no summary model: the local summary
    session = make_session(channel, turns=140, size=120)  # 560 messages
    result = compress(session, max_passes=1)
    assert result.outcome == "fallback"
    summary = Message.objects.get(session=session, is_summary=True)
    text = summary.content
    assert len(text) <= 8_000  # L4
    covered = range(summary.covers_from_position, summary.covers_to_position + 1)
    assert f"(#{covered[0]} to #{covered[-1]})" in text
    # Asks from the first, middle and last tenth of the span are all told.
    mentioned = {int(n) for n in re.findall(r"#(\d+) user: Question", text)}
    tenth = len(covered) // 10
    assert mentioned & set(covered[:tenth])
    assert mentioned & set(covered[4 * tenth : 6 * tenth])
    assert mentioned & set(covered[-tenth:])
    # Each stretch heading names its positions; together they cover the span.
    stretches = [(int(a), int(b)) for a, b in re.findall(r"## #(\d+) to #(\d+)", text)]
    assert stretches[0][0] == covered[0] and stretches[-1][1] == covered[-1]


def test_in_place_false_keeps_provenance_across_the_hop_and_search_shows_a_fact_once(
    channel, hermes_config
):
    from search.service import Filters, search

    hermes_config(compression={"in_place": False})
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(session, [m for n in range(12) for m in turn(n, size=200)])
    result = compress(session)
    assert result.outcome == "fallback"
    new = result.continued_in
    old_summary = Message.objects.get(session=session, is_summary=True)
    new_summary = Message.objects.get(session=new, is_summary=True)
    # The new summary covers the parent's positions and leads back to its originals.
    assert new_summary.continues_id == old_summary.pk
    assert (new_summary.covers_from_position, new_summary.covers_to_position) == (
        old_summary.covers_from_position,
        old_summary.covers_to_position,
    )
    assert old_summary.replaced.count() == result.events[0].rows_archived
    # The parent's rows are archived as compressed, not reset; every carried row is linked.
    reasons = set(Message.objects.filter(session=session).values_list("archive_reason", flat=True))
    assert reasons == {"compression"}
    carried = Message.objects.filter(session=new)
    assert all(row.continues_id for row in carried)
    assert all(row.continues.content == row.content for row in carried)
    # A fact of the tail was said once: search shows it once, in the continuation.
    hits = search('"Answer 11: item-11 is fine"', Filters(channel_id=channel.pk)).hits
    assert [h.session.pk for h in hits] == [new.pk]
    # Filtered to the parent alone, its own row is still found.
    hits = search('"Answer 11: item-11 is fine"', Filters(session_id=session.pk)).hits
    assert [h.session.pk for h in hits] == [session.pk]
    # An archived original of the middle is found in the parent; whatever else tells it (the
    # summary, carried into the continuation) shows once: no text shows twice.
    hits = search('"Question 5: what about item-5"', Filters(channel_id=channel.pk)).hits
    assert "archived" in [h.message.kind for h in hits]
    assert len({h.message.content for h in hits}) == len(hits)
    summary_hits = search('"#4 to #"', Filters(channel_id=channel.pk)).hits
    assert [h.session.pk for h in summary_hits] == [new.pk]


def test_the_demo_model_answers_a_digest_the_engine_accepts(channel, summariser, model_server):
    from compression.testing.fake_model import Digest

    model_server.script.default = Digest()
    session = make_session(channel, turns=140, size=120)
    result = compress(session, max_passes=1)
    assert result.outcome == "compressed", result.events[0].error
    summary = Message.objects.get(session=session, is_summary=True)
    assert "digest of the transcript" in summary.content


def test_a_run_whose_deeper_pass_gains_nothing_still_reports_what_its_first_pass_did(
    channel, summariser, model_server
):
    summariser(threshold_tokens=1_000, max_attempts=2)
    model_server.then(
        Reply("## Goal\n" + "Keep item-3 fine. " * 30),
        Reply("## Goal\n" + "Every detail again, at great length. " * 400),
    )
    session = make_session(channel, turns=30, size=200)
    result = compress(session)
    assert [p.outcome for p in result.passes] == ["compressed", "ineffective"]
    assert result.outcome == "compressed"


def test_a_carried_pair_shows_once_even_across_a_page_edge(channel, hermes_config):
    from search.service import Filters, search

    hermes_config(compression={"in_place": False})
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(session, [m for n in range(12) for m in turn(n, size=200)])
    new = compress(session).continued_in
    phrase = '"Answer 11: item-11 is fine"'  # in the tail: said once, stored twice
    shown = []
    for offset in range(3):
        page = search(phrase, Filters(channel_id=channel.pk), limit=1, offset=offset)
        shown += [h.message for h in page.hits]
    assert [m.session_id for m in shown] == [new.pk]


def test_the_too_short_floor_never_asks_more_than_a_twentieth_of_the_budget():
    from compression.engine.summarizer import floor_tokens

    assert floor_tokens(5_000, 2_000) == 50  # 1% of what it replaces
    assert floor_tokens(524_000, 10_000) == 500  # not 5,240: 5% of the budget
    assert floor_tokens(200_000, 10_000) == 500
    assert floor_tokens(1_000, None) == 10
