"""The engine at the edges (issue 13): every live context it leaves is one a provider accepts."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compression.engine.compress import compress
from compression.engine.prompt import SUMMARY_PREFIX
from compression.testing.fake_model import FakeModelServer, Reply
from search.service import Filters, search
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session
from tests.test_compression import assert_consistent


def repeated_roles(context: list[dict]) -> list[str]:
    """Places where two user or two assistant messages meet."""
    roles = [m["role"] for m in context]
    return [
        f"#{i} {a} then {b}"
        for i, (a, b) in enumerate(pairwise(roles))
        if a == b and a in ("user", "assistant")
    ]


# Messages of a realistic length: a summary of a stretch of them is smaller than the stretch.
DETAIL = "The gauges, the logs and the last three readings all agree with the plan so far. " * 2


def turns(shape: list[int], length: int) -> list[list[dict]]:
    """A chat of about ``length`` messages in OpenAI's format, turn by turn, roles alternating:
    each turn is a user message and an answer; ``shape[k]`` tool calls (0 = none) come before
    turn k's answer. A turn is never cut inside its tool calls."""
    out: list[list[dict]] = []
    n = size = 0
    while size < length:
        tools = shape[n % len(shape)] if shape else 0
        turn = [{"role": "user", "content": f"ask {n}: how is part-{n} doing? {DETAIL}"}]
        if tools:
            calls = [
                {
                    "id": f"c{n}_{k}",
                    "type": "function",
                    "function": {"name": "probe", "arguments": f'{{"part": {n}, "k": {k}}}'},
                }
                for k in range(tools)
            ]
            turn.append({"role": "assistant", "content": None, "tool_calls": calls})
            turn += [
                {"role": "tool", "tool_call_id": c["id"], "content": f"part-{n} reading {k}"}
                for k, c in enumerate(calls)
            ]
        turn.append(
            {"role": "assistant", "content": f"part-{n} is fine, reading {n * 7}. {DETAIL}"}
        )
        if size + len(turn) > length and not tools:
            turn = turn[: length - size]  # a plain chat may end on the user's ask
        out.append(turn)
        size += len(turn)
        n += 1
    return out


def chat(shape: list[int], length: int) -> list[dict]:
    return [m for turn in turns(shape, length) for m in turn]


def open_chat(channel, messages: list[dict]) -> Session:
    session = services.open_session(channel, model="gpt-4o", system_prompt="Be brief.").session
    if messages:
        services.append_messages(session, messages)
        session.refresh_from_db()
    return session


@pytest.fixture
def channel(db):
    return create_channel("edges")[0]


SUMMARY = "## Goal\n" + "Every part was checked and reads fine. " * 5


@pytest.fixture
def summariser(hermes_config):
    """The loopback model as summariser, answering a short good summary; ``configure(**c)``
    sets the compression block."""
    with FakeModelServer() as server:
        server.script.default = Reply(SUMMARY)

        def configure(**compression):
            hermes_config(
                auxiliary={"compression": {"model": "s", "base_url": server.base_url}},
                compression=compression,
            )

        configure()
        yield configure


@pytest.mark.parametrize("length", range(24, 91))
def test_one_compression_of_a_plain_alternating_chat_never_repeats_a_role(
    channel, summariser, length
):
    session = open_chat(channel, chat([], length))
    result = compress(session)
    # Up to 24 the protected head (system + 3) and tail (20) leave at most one message; a
    # middle of two is smaller than any summary of it.
    expected = "skipped" if length <= 24 else "ineffective" if length == 25 else "compressed"
    assert result.outcome == expected, result.events[0].reason
    context = assert_consistent(session)
    assert repeated_roles(context) == [], [m["role"] for m in context]


@given(
    length=st.integers(3, 200),
    shape=st.lists(st.integers(0, 3), max_size=5),
    protect_first_n=st.integers(0, 5),
    protect_last_n=st.integers(1, 30),
    min_tail_user_messages=st.integers(0, 2),
    max_attempts=st.integers(1, 3),
    runs=st.integers(1, 3),
)
@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_live_context_the_engine_leaves_has_two_user_or_two_assistant_messages_in_a_row(
    channel,
    summariser,
    length,
    shape,
    protect_first_n,
    protect_last_n,
    min_tail_user_messages,
    max_attempts,
    runs,
):
    # threshold_tokens at its minimum: every run makes all of its passes.
    summariser(
        **{
            "protect_first_n": protect_first_n,
            "protect_last_n": protect_last_n,
            "min_tail_user_messages": min_tail_user_messages,
            "max_attempts": max_attempts,
            "threshold_tokens": 1_000,
        }
    )
    chat_turns = turns(shape, length)
    size = max(1, len(chat_turns) // runs)
    batches = [chat_turns[k * size : (k + 1) * size] for k in range(runs - 1)]
    batches.append(chat_turns[(runs - 1) * size :])
    session = open_chat(channel, [])
    for batch in batches:
        if batch:
            services.append_messages(session, [m for turn in batch for m in turn])
            session.refresh_from_db()
        compress(session)
        context = assert_consistent(session)
        assert repeated_roles(context) == [], [m["role"] for m in context]


def test_where_no_role_fits_the_summary_leads_the_next_message_and_both_stay_findable(
    channel, hermes_config
):
    # protect_first_n 2: the head ends on an assistant answer; the tail starts with the user.
    hermes_config(compression={"protect_first_n": 2, "protect_last_n": 4})
    session = open_chat(channel, chat([], 30))
    compress(session)
    context = assert_consistent(session)
    assert repeated_roles(context) == []
    summary = Message.objects.get(session=session, is_summary=True, active=True)
    assert summary.role == "user"  # written with the role of the message it leads
    first_tail = (
        Message.objects.filter(session=session, active=True, position__gt=summary.position)
        .order_by("position")
        .first()
    )
    merged = context[3]
    assert merged["role"] == "user"
    assert merged["content"].startswith(SUMMARY_PREFIX)
    assert merged["content"].endswith(first_tail.content)  # its own text, after the block
    assert len(context) == session.live_messages - 1  # two rows travel as one message
    # Findable as both: the summary as a summary, the message as itself, unchanged.
    assert first_tail.content.startswith("ask ")
    phrase = f'"{first_tail.content}"'
    hits = search(phrase, Filters(session_id=session.pk), limit=50).hits
    assert first_tail.pk in [h.message.pk for h in hits]
    hits = search('"ask 3"', Filters(session_id=session.pk, kind="summary")).hits
    assert [h.message.pk for h in hits] == [summary.pk]


# --- Nothing to compress, and errors nobody expected ------------------------------------------

TRACEBACK_SIGNS = ("Traceback", 'File "', ".py", "/work/", "/usr/", "site-packages")


def assert_no_traceback(text: str) -> None:
    assert not any(sign in text for sign in TRACEBACK_SIGNS), text


@pytest.mark.parametrize("count", range(5))
def test_compressing_a_session_of_zero_to_four_messages_is_skipped_with_its_reason(gateway, count):
    sid = gateway.open(system_prompt="sys")["id"]
    if count:
        gateway.post(f"/sessions/{sid}/messages", {"messages": chat([], count)})
    response = gateway.post(f"/sessions/{sid}/compress")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["outcome"] == "skipped", body
    assert_no_traceback(response.content.decode())
    (step,) = body["passes"]
    assert step["reason"].startswith("nothing to compress")
    from compression.models import CompressionEvent

    event = CompressionEvent.objects.get(pk=step["event_id"])
    assert event.outcome == "skipped" and event.reason == step["reason"]


def test_a_session_the_protected_head_and_tail_cover_is_skipped(channel, hermes_config):
    hermes_config(compression={"protect_first_n": 5, "protect_last_n": 20})
    session = open_chat(channel, chat([2], 25))
    result = compress(session)
    assert result.outcome == "skipped"
    assert result.events[0].reason.startswith("nothing to compress")


def test_an_unexpected_error_in_a_compression_is_one_line_with_an_error_id(
    gateway, monkeypatch, caplog
):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": chat([1], 40)})

    def broken(*args, **kwargs):
        raise RuntimeError("boom in /srv/hermes/compression/engine/compress.py")

    monkeypatch.setattr("compression.engine.compress.select_live", broken)
    response = gateway.post(f"/sessions/{sid}/compress")
    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "failed"
    assert_no_traceback(response.content.decode())
    assert "boom" not in body["error"]
    error_id = body["error"].split("error id ")[1][:8]
    # The id finds the traceback in the log.
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None
    from compression.models import CompressionEvent

    event = CompressionEvent.objects.get(session_id=sid, outcome="failed")
    assert error_id in event.error
    assert_no_traceback(event.error + event.reason)


def test_an_unexpected_error_in_any_api_route_is_a_json_500_with_an_error_id(
    gateway, monkeypatch, caplog, settings
):
    settings.DEBUG = True  # django-ninja's own handler would answer the traceback as text
    sid = gateway.open()["id"]

    def broken(*args, **kwargs):
        raise KeyError("/home/op/secret/path.py")

    monkeypatch.setattr("sessions_app.selectors.live_context", broken)
    response = gateway.get(f"/sessions/{sid}/context")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    detail = response.json()["detail"]
    assert_no_traceback(detail)
    assert "error id" in detail
    assert any(detail.split("error id ")[1][:8] in r.getMessage() for r in caplog.records)


def test_an_unexpected_error_in_a_page_is_a_short_page_with_an_error_id(
    admin_client, monkeypatch, caplog
):
    def broken(*args, **kwargs):
        raise ValueError("/etc/hermes/secret")

    monkeypatch.setattr("compression.pages.views.render", broken)
    response = admin_client.get("/console/")
    assert response.status_code == 500
    text = response.content.decode()
    assert "error id" in text
    assert_no_traceback(text)


def test_summaries_are_placed_when_sent_from_the_neighbours_they_have_then(channel, hermes_config):
    # A summary written beside one neighbour may meet another after a rollback, a reset or a
    # later local compression: the context places it again every time it is sent.
    hermes_config(compression={"protect_first_n": 2, "protect_last_n": 6})
    session = open_chat(channel, chat([], 40))
    compress(session, around_position=29)  # a local summary in the middle of the tail side
    services.rollback_messages(session, 2)
    services.append_messages(session, [{"role": "user", "content": f"a new ask. {DETAIL}"}])
    compress(session)  # the full compression's summary lands right before the local one
    context = assert_consistent(session)
    assert repeated_roles(context) == [], [m["role"] for m in context]
    summaries = Message.objects.filter(session=session, is_summary=True, active=True)
    sent_text = "\n".join(str(m["content"]) for m in context)
    for summary in summaries:  # every live summary reaches the model
        assert summary.content in sent_text


def test_a_summary_whose_tail_was_reset_away_is_placed_again(channel, hermes_config):
    from compression.policy.recovery import reset_after_exhaustion

    hermes_config(compression={"protect_first_n": 2})
    session = open_chat(channel, chat([], 41))  # ends on the user's ask
    compress(session)
    Message.objects.filter(session=session, is_summary=True).update(is_fallback_summary=False)
    reset_after_exhaustion(session)  # archives everything after the (good) summary
    services.append_messages(session, [{"role": "user", "content": "start again"}])
    context = assert_consistent(session)
    assert repeated_roles(context) == [], [m["role"] for m in context]
    assert any(SUMMARY_PREFIX in str(m["content"]) for m in context)
