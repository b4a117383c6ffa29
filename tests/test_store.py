"""The store's invariants: flags give kinds, counters always equal a recount, order is kept."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from sessions_app import selectors, services
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session
from sessions_app.services import InvalidInput, StateConflict, recount


@pytest.fixture
def channel(db):
    return create_channel("cli")[0]


@pytest.fixture
def session(channel):
    return services.open_session(
        channel, model="gpt-4", system_prompt="You are terse.", title="t"
    ).session


def assert_counters_exact(session: Session) -> None:
    session.refresh_from_db()
    actual = recount(session)
    assert (session.live_messages, session.live_tokens, session.total_messages) == (
        actual.live_messages,
        actual.live_tokens,
        actual.total_messages,
    )


def turn(n: int) -> list[dict]:
    return [
        {"role": "user", "content": f"question {n}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {"name": "ls", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"call_{n}", "name": "ls", "content": f"file_{n}.py"},
        {"role": "assistant", "content": f"answer {n}"},
    ]


def test_opening_a_session_stores_the_system_prompt_as_its_first_live_row(session):
    rows = list(session.messages.all())
    assert [(m.position, m.role, m.kind) for m in rows] == [(0, "system", "live")]
    assert_counters_exact(session)


def test_known_models_get_their_context_window_and_unknown_ones_the_default(channel):
    known = services.open_session(channel, model="openrouter/anthropic/claude-sonnet-4.5").session
    assert (known.context_window, known.context_window_source) == (200_000, "catalog")
    unknown = services.open_session(channel, model="acme-llm-7b").session
    assert (unknown.context_window, unknown.context_window_source) == (128_000, "default")
    declared = services.open_session(channel, model="acme-llm-7b", context_window=32_768).session
    assert (declared.context_window, declared.context_window_source) == (32_768, "declared")


def test_reopening_by_external_id_returns_the_same_session(channel):
    first = services.open_session(channel, model="gpt-4", external_id="chat-42")
    again = services.open_session(channel, model="gpt-4", external_id="chat-42")
    assert first.created and not again.created
    assert first.session.pk == again.session.pk


def test_the_same_external_id_on_two_channels_is_two_sessions(channel):
    other = create_channel("discord")[0]
    a = services.open_session(channel, external_id="room").session
    b = services.open_session(other, external_id="room").session
    assert a.pk != b.pk


def test_appending_keeps_order_roles_tool_data_and_counts_tokens(session):
    services.append_messages(session, turn(1) + turn(2))
    rows = list(session.messages.order_by("position"))
    assert [m.position for m in rows] == list(range(9))
    assert [m.role for m in rows[1:5]] == ["user", "assistant", "tool", "assistant"]
    assert rows[2].tool_calls[0]["id"] == "call_1"
    assert (rows[3].tool_call_id, rows[3].name) == ("call_1", "ls")
    assert all(m.token_count > 0 for m in rows)
    assert all(m.kind == "live" for m in rows)
    assert_counters_exact(session)


def test_counters_stay_exact_after_every_service_call(session):
    services.append_messages(session, turn(1))
    assert_counters_exact(session)
    services.append_messages(session, turn(2), usage={"prompt_tokens": 1234})
    assert_counters_exact(session)
    services.rollback_messages(session, 1, reason="regenerate")
    assert_counters_exact(session)
    services.append_messages(session, [{"role": "assistant", "content": "second try"}])
    assert_counters_exact(session)
    services.reset_session(session)
    assert_counters_exact(session)
    services.append_messages(session, turn(3))
    assert_counters_exact(session)


def test_reported_usage_is_recorded(session):
    services.append_messages(
        session, turn(1), usage={"prompt_tokens": 1234, "completion_tokens": 56}
    )
    session.refresh_from_db()
    assert (session.last_prompt_tokens, session.last_completion_tokens) == (1234, 56)
    assert session.last_usage_at is not None


def test_one_bad_message_in_a_batch_writes_nothing(session):
    before = list(session.messages.values_list("pk", flat=True))
    with pytest.raises(InvalidInput, match=r"messages\[1\].*tool_call_id"):
        services.append_messages(
            session, [{"role": "user", "content": "ok"}, {"role": "tool", "content": "orphan"}]
        )
    assert list(session.messages.values_list("pk", flat=True)) == before
    assert_counters_exact(session)


def test_rolled_back_rows_are_kept_with_both_flags_false(session):
    services.append_messages(session, turn(1))
    rolled = services.rollback_messages(session, 1, reason="regenerate")
    assert [m.content for m in rolled] == ["answer 1"]
    row = Message.objects.get(pk=rolled[0].pk)
    assert (row.active, row.compressed, row.kind) == (False, False, "rolled_back")
    assert row.rollback_reason == "regenerate" and row.rolled_back_at is not None
    assert row.content == "answer 1"


def test_rollback_never_reaches_the_system_prompt(session):
    services.append_messages(session, turn(1))
    with pytest.raises(StateConflict, match="at most 4"):
        services.rollback_messages(session, 5)
    assert session.messages.filter(active=True).count() == 5
    assert_counters_exact(session)


def test_rollback_never_reaches_a_summary(session):
    services.append_messages(session, turn(1))
    Message.objects.filter(session=session, position=4).update(is_summary=True)
    with pytest.raises(StateConflict, match="summary"):
        services.rollback_messages(session, 2)


def test_rollback_counts_outside_the_allowed_range_are_refused(session):
    for count in (0, -1, 10_001):
        with pytest.raises(InvalidInput):
            services.rollback_messages(session, count)


def test_reset_archives_everything_but_the_system_prompt_and_deletes_nothing(session):
    services.append_messages(session, turn(1) + turn(2))
    total = session.messages.count()
    archived = services.reset_session(session)
    assert archived == total - 1
    assert session.messages.count() == total
    kinds = {m.position: m.kind for m in session.messages.all()}
    assert kinds[0] == "live"
    assert all(kind == "archived" for pos, kind in kinds.items() if pos)
    assert set(
        session.messages.filter(compressed=True).values_list("archive_reason", flat=True)
    ) == {"reset"}
    assert selectors.live_context(session) == [{"role": "system", "content": "You are terse."}]
    assert_counters_exact(session)


def test_reset_can_archive_the_system_prompt_too(session):
    services.append_messages(session, turn(1))
    services.reset_session(session, keep_system_prompt=False)
    assert selectors.live_context(session) == []
    assert_counters_exact(session)


@pytest.mark.parametrize("after", [-1, 0, 1, 4, 7, 8, 12])
def test_a_reset_after_a_position_archives_only_the_live_rows_after_it(session, after):
    services.append_messages(session, turn(1) + turn(2))  # positions 0 (system) to 8
    session.refresh_from_db()
    activity, total = session.last_activity_at, session.messages.count()
    archived = services.reset_session(session, after_position=after, note="back to a point")
    live = set(session.messages.filter(active=True).values_list("position", flat=True))
    assert live == {p for p in range(9) if p <= after}
    assert archived == len([p for p in range(9) if p > after])
    assert session.messages.count() == total  # nothing deleted
    session.refresh_from_db()
    assert session.last_activity_at == activity  # going back is not the user's activity
    assert session.last_reset_at is not None and session.last_prompt_tokens is None
    assert_counters_exact(session)


def test_the_live_context_is_a_valid_openai_messages_array_in_order(session):
    services.append_messages(session, turn(1))
    services.append_messages(
        session,
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                ],
                "reasoning_content": "kept verbatim",
            }
        ],
    )
    context = selectors.live_context(session)
    assert [m["role"] for m in context] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert context[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": turn(1)[1]["tool_calls"],
    }
    assert context[3] == {
        "role": "tool",
        "content": "file_1.py",
        "tool_call_id": "call_1",
        "name": "ls",
    }
    assert context[5]["content"][1]["type"] == "image_url"
    assert context[5]["reasoning_content"] == "kept verbatim"
    # The searchable text of multi-part content is its text parts.
    assert session.messages.get(position=5).content == "look"


def test_a_row_can_never_be_both_live_and_compressed(session):
    row = session.messages.first()
    row.compressed = True
    with pytest.raises(IntegrityError), transaction.atomic():
        row.save()


def test_kind_filters_partition_the_rows(session):
    services.append_messages(session, turn(1) + turn(2))
    services.rollback_messages(session, 1)
    Message.objects.filter(session=session, position=2).update(is_summary=True)
    Message.objects.filter(session=session, position=1).update(active=False, compressed=True)
    by_kind = {
        kind: set(
            Message.objects.filter(session=session).of_kind(kind).values_list("position", flat=True)
        )
        for kind in Message.KIND_FILTERS
    }
    assert by_kind["summary"] == {2}
    assert by_kind["archived"] == {1}
    assert by_kind["rolled_back"] == {8}
    assert by_kind["live"] == {0, 3, 4, 5, 6, 7}
    assert sum(len(v) for v in by_kind.values()) == session.messages.count()


def test_rollback_never_splits_a_tool_call_from_its_results(session):
    services.append_messages(session, turn(1))
    with pytest.raises(StateConflict, match="roll back 3 to include the call"):
        services.rollback_messages(session, 2)
    assert session.messages.filter(active=True).count() == 5
    rolled = services.rollback_messages(session, 3)
    assert [m.role for m in rolled] == ["assistant", "tool", "assistant"]
    context = selectors.live_context(session)
    assert [m["role"] for m in context] == ["system", "user"]


def test_a_tool_result_must_answer_a_pending_call(session):
    services.append_messages(session, turn(1)[:2])  # user, assistant calling call_1
    with pytest.raises(StateConflict, match=r"answers no pending tool call.*pending: call_1"):
        services.append_messages(
            session, [{"role": "tool", "tool_call_id": "nope", "content": "x"}]
        )
    services.append_messages(session, [{"role": "tool", "tool_call_id": "call_1", "content": "ok"}])
    with pytest.raises(StateConflict, match="pending: none"):
        services.append_messages(
            session, [{"role": "tool", "tool_call_id": "call_1", "content": "again"}]
        )
    assert_counters_exact(session)


def test_a_result_after_another_message_is_an_orphan(session):
    with pytest.raises(StateConflict, match=r"messages\[3\]"):
        services.append_messages(
            session, [*turn(1)[:2], {"role": "user", "content": "hm"}, turn(1)[2]]
        )


def test_tool_calls_get_the_defaults_a_model_expects(session):
    services.append_messages(
        session,
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c9", "function": {"name": "ls"}}],
            },
            {"role": "tool", "tool_call_id": "c9", "content": "."},
        ],
    )
    call = selectors.live_context(session)[2]["tool_calls"][0]
    assert call == {"id": "c9", "type": "function", "function": {"arguments": "", "name": "ls"}}


@pytest.mark.parametrize(
    "message",
    [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "\ud800"}}],
        },
        {"role": "user", "content": "ok", "reasoning_content": "bad \x00 nul"},
        {"role": "user", "content": [{"type": "text", "text": "\udfff"}]},
    ],
)
def test_unstorable_text_anywhere_in_a_message_is_refused(session, message):
    with pytest.raises(InvalidInput):
        services.append_messages(session, [message])


def test_unstorable_session_fields_are_refused(channel):
    with pytest.raises(InvalidInput, match="NUL"):
        services.open_session(channel, title="a\x00b")
