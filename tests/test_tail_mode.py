"""``compression.tail_mode``: the seed's message-count tail (legacy, the default here) and Hermes
Agent's lean tail (2.5% of the context window in tokens, 10,000-25,000, whole messages, tool
groups whole, the latest real user message kept), with Hermes's own numbers."""

from __future__ import annotations

import pytest

from compression.engine.compress import compress
from compression.engine.selection import select
from compression.engine.tail import lean_budget, select_live
from core.config import CompressionConfig
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session


@pytest.mark.parametrize(
    ("window", "budget"),
    [
        (128_000, 10_000),  # 3,200 -> the 10,000 floor
        (262_144, 10_000),  # 6,553 -> the floor
        (400_000, 10_000),  # exactly 2.5%
        (600_000, 15_000),
        (1_000_000, 25_000),  # the cap
        (2_000_000, 25_000),
        (16_000, 3_200),  # never more than 20% of a small window
    ],
)
def test_the_lean_budget_is_hermess_clamped_share_of_the_window(window, budget):
    assert lean_budget(window) == budget


def test_a_deeper_pass_halves_the_lean_budget_as_it_halves_the_message_tail():
    assert [lean_budget(1_000_000, n) for n in range(3)] == [25_000, 12_500, 6_250]


def _rows(spec: list[tuple[str, int]]) -> list[Message]:
    """Unsaved rows: (role, tokens); an assistant "call" row carries a tool call."""
    rows = []
    for position, (role, size) in enumerate(spec):
        calls = None
        if role == "call":
            role, calls = "assistant", [{"id": f"c{position}", "type": "function"}]
        rows.append(
            Message(
                position=position,
                role=role,
                content="x",
                tool_calls=calls,
                tool_call_id=f"c{position - 1}" if role == "tool" else None,
                token_count=size,
            )
        )
    return rows


def _tail(rows: list[Message], budget: int | None, **kw) -> list[Message]:
    options = {"protect_first_n": 0, "protect_last_n": 20, "min_tail_user_messages": 1, **kw}
    return select(rows, tail_budget_tokens=budget, **options).tail


def test_the_lean_tail_is_the_newest_whole_messages_within_one_and_a_half_budgets():
    # 30 messages of 1,000 tokens: 15 fit 1.5 x 10,000.
    rows = _rows([("system", 50)] + [("user" if i % 2 else "assistant", 1_000) for i in range(30)])
    tail = _tail(rows, 10_000)
    assert len(tail) == 15 and sum(m.token_count for m in tail) == 15_000
    # The seed's tail for the same rows: the last 20 messages, whatever their size.
    assert len(_tail(rows, None)) == 20


def test_oversized_messages_still_leave_hermess_floor_of_eight_messages():
    rows = _rows([("system", 50)] + [("user" if i % 2 else "assistant", 9_000) for i in range(30)])
    assert len(_tail(rows, 10_000)) == 8
    assert len(_tail(rows, 10_000, protect_last_n=5)) == 5  # protect_last_n below 8 lowers it


def test_when_the_newest_user_message_is_older_than_the_budget_the_tail_reaches_it():
    spec = [("system", 50), ("user", 100), ("assistant", 100), ("user", 500)]
    spec += [("call", 100), ("tool", 3_000)] * 12  # a long tool run after the last ask
    rows = _rows(spec)
    tail = _tail(rows, 10_000)
    assert tail[0].position == 3 and tail[0].role == "user"
    assert sum(m.token_count for m in tail) > 15_000  # the user's ask wins over the budget
    # With no real user message required, the budget rules.
    assert sum(m.token_count for m in _tail(rows, 10_000, min_tail_user_messages=0)) <= 15_000


def test_the_lean_tail_never_starts_between_a_tool_call_and_its_results():
    spec = [("system", 50), ("user", 100)] + [("assistant", 100), ("user", 100)] * 5
    spec += [("call", 100), ("tool", 5_000), ("tool", 5_000), ("tool", 5_000), ("user", 2_000)]
    rows = _rows(spec)
    tail = _tail(rows, 10_000, min_tail_user_messages=0, protect_last_n=3)
    # 2,000 + 2 x 5,000 fit 15,000 and the third result does not: the walk stops between two
    # results of one call, and the tail grows back to the call.
    assert tail[0].role == "assistant" and tail[0].tool_calls
    assert [m.role for m in tail[1:]] == ["tool", "tool", "tool", "user"]


def test_when_everything_fits_one_and_a_half_budgets_the_plain_budget_still_leaves_a_middle():
    rows = _rows([("system", 50)] + [("user" if i % 2 else "assistant", 700) for i in range(20)])
    tail = _tail(rows, 10_000)  # 14,000 tokens after the head: under 15,000
    assert sum(m.token_count for m in tail) <= 10_000 and len(tail) == 14


def test_the_configured_mode_reaches_compression_micro_compaction_and_pruning_alike():
    rows = _rows([("system", 50)] + [("user" if i % 2 else "assistant", 1_000) for i in range(60)])
    legacy = CompressionConfig()
    lean = CompressionConfig(tail_mode="lean")
    assert len(select_live(rows, legacy, 1_000_000).tail) == 20
    assert len(select_live(rows, lean, 1_000_000).tail) == 37  # 25,000 x 1.5 = 37,500
    assert len(select_live(rows, lean, 128_000).tail) == 15
    assert len(select_live(rows, lean, 128_000, attempt=1).tail) == 8  # 5,000 x 1.5; floor 8


@pytest.fixture
def channel(db):
    return create_channel("tail")[0]


@pytest.mark.slow
def test_a_lean_compression_keeps_a_token_budgeted_tail(channel, hermes_config):
    hermes_config(compression={"tail_mode": "lean", "protect_first_n": 1})
    session = services.open_session(channel, model="gpt-4o", system_prompt="Be brief.").session
    words = " ".join(f"w{i}" for i in range(700))
    services.append_messages(
        session,
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i}: {words}"}
            for i in range(40)
        ],
    )
    session.refresh_from_db()
    budget = lean_budget(session.context_window)
    result = compress(session, max_passes=1)
    assert result.outcome in ("compressed", "fallback")
    live = list(Message.objects.filter(session=session, active=True).order_by("position"))
    summary = next(i for i, m in enumerate(live) if m.is_summary)
    tail = live[summary + 1 :]
    assert 8 <= len(tail) < 20  # not the seed's 20 messages
    assert sum(m.token_count for m in tail) <= budget * 1.5
    assert any(m.role == "user" for m in tail)
    assert Session.objects.get(pk=session.pk).live_messages == len(live)


@pytest.mark.parametrize("mode", ["legacy", "lean"])
def test_an_agent_run_whose_only_user_message_is_in_the_head_still_has_a_middle(mode):
    """System prompt, one task, then eighty tool calls and results: the task is in the head,
    so no real user message exists to keep in the tail, and the tail must not walk back to
    the head looking for one (nothing would ever compress)."""
    from compression.engine.selection import select

    rows = [Message(role="system", content="sys", position=0, token_count=10)]
    rows.append(Message(role="user", content="fix the build", position=1, token_count=10))
    for n in range(40):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
        rows.append(
            Message(role="assistant", tool_calls=[call], position=len(rows), token_count=50)
        )
        rows.append(
            Message(
                role="tool",
                tool_call_id=f"c{n}",
                content="out" * 300,
                position=len(rows),
                token_count=600,
            )
        )
    for row in rows:
        row.pk = row.position + 1
    chosen = select(
        rows,
        protect_first_n=3,
        protect_last_n=20,
        min_tail_user_messages=1,
        tail_budget_tokens=10_000 if mode == "lean" else None,
    )
    assert len(chosen.middle) > 20 and chosen.tail
    assert chosen.tail[0].role == "assistant"  # whole tool groups, never a result alone
