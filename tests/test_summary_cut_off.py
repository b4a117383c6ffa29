"""A reply the provider cut off at its own output limit never becomes a summary: chat
completions' ``finish_reason: length`` (or ``content_filter``), the Responses API's
``incomplete``, streamed, and a provider that answers a stream request with one JSON body. Each
is a failed summary -- the local fallback, or nothing with abort_on_summary_failure -- with the
reason in the event (SPEC L2, L4)."""

from __future__ import annotations

import pytest

from compression.engine.compress import compress
from compression.models import CompressionEvent
from compression.testing.fake_model import FakeModelServer, Raw, Reply
from tests.test_compression import make_session, originals_digest

Outcome = CompressionEvent.Outcome
CUT = "## Goal\nThe user wanted the deploy fixed. ## Completed actions\n- #4 ran the mig"
WHOLE = "## Goal\nThe user wanted the deploy fixed.\n" + "- a completed action, kept.\n" * 30


@pytest.fixture
def model_server():
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def summariser(hermes_config, model_server):
    def configure(api_mode: str = "chat_completions", **compression):
        return hermes_config(
            auxiliary={
                "compression": {
                    "model": "fake-summary",
                    "base_url": model_server.base_url,
                    "api_mode": api_mode,
                }
            },
            compression={
                "context_timeout_seconds": 2,
                "context_total_ceiling_seconds": 5,
                **compression,
            },
        )

    configure()
    return configure


@pytest.fixture
def channel(db):
    from sessions_app.keys import create_channel

    return create_channel("cut-off")[0]


@pytest.mark.parametrize(
    ("api_mode", "finish", "said"),
    [
        ("chat_completions", "length", "cut off (length)"),
        ("chat_completions", "content_filter", "cut off (content_filter)"),
        ("codex_responses", "length", "cut off (max_output_tokens)"),
    ],
)
def test_a_reply_cut_off_by_the_provider_becomes_the_local_fallback(
    summariser, model_server, channel, api_mode, finish, said
):
    summariser(api_mode)
    model_server.script.default = Reply(CUT, finish_reason=finish)
    session = make_session(channel)
    result = compress(session)
    assert result.outcome == Outcome.FALLBACK
    event = result.events[0]
    assert event.error.startswith("truncated: the reply was cut off")
    assert said in event.error
    assert event.fell_back_because.startswith("truncated")
    summary = result.passes[0].summary
    assert summary.is_fallback_summary and CUT not in summary.content
    session.refresh_from_db()
    assert session.failure_streak == 1 and session.cooldown_until is not None  # F1


def test_with_abort_on_failure_a_cut_reply_changes_nothing(summariser, model_server, channel):
    summariser(abort_on_summary_failure=True)
    model_server.script.default = Reply(CUT, finish_reason="length")
    session = make_session(channel)
    digest, live = originals_digest(session), session.live_tokens
    result = compress(session)
    assert result.outcome == Outcome.FAILED
    assert "truncated" in result.events[0].error
    session.refresh_from_db()
    assert (originals_digest(session), session.live_tokens) == (digest, live)


def test_the_responses_api_summarises_when_the_reply_is_complete(summariser, model_server, channel):
    summariser("codex_responses")
    model_server.script.default = Reply(WHOLE)
    result = compress(make_session(channel))
    assert result.outcome == Outcome.COMPRESSED
    request = model_server.requests[-1]
    assert request.path.endswith("/responses") and request.body["stream"] is True
    assert "TRANSCRIPT TO SUMMARISE" in request.body["input"]
    assert "max_output_tokens" not in request.body  # L2: no output cap, on this API too
    assert "a completed action, kept." in result.passes[0].summary.content


def test_a_whole_json_answer_to_a_stream_request_is_not_kept_either(
    summariser, model_server, channel
):
    model_server.script.default = Raw(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": CUT},
                    "finish_reason": "length",
                }
            ],
        }
    )
    result = compress(make_session(channel))
    assert result.outcome == Outcome.FALLBACK
    assert result.events[0].error.startswith("bad_response")
    assert CUT not in result.passes[0].summary.content


def test_a_complete_reply_is_still_a_summary(summariser, model_server, channel):
    model_server.script.default = Reply(WHOLE, finish_reason="stop")
    result = compress(make_session(channel))
    assert result.outcome == Outcome.COMPRESSED


def test_micro_compaction_does_not_fold_a_cut_reply(
    hermes_config, model_server, gateway, django_capture_on_commit_callbacks
):
    hermes_config(
        auxiliary={"compression": {"model": "fake", "base_url": model_server.base_url}},
        compression={"micro_compact": True, "protect_first_n": 1, "protect_last_n": 4},
    )
    model_server.script.default = Reply(CUT, finish_reason="length")
    from tests.test_compression import turn

    sid = gateway.open(system_prompt="sys")["id"]
    for n in range(4):
        with django_capture_on_commit_callbacks(execute=True):
            gateway.post(f"/sessions/{sid}/messages", {"messages": turn(n)})
    micro = CompressionEvent.objects.filter(session_id=sid, trigger="micro").first()
    assert micro is not None and micro.outcome == Outcome.FALLBACK
    assert CUT not in micro.summary_message.content
    assert micro.retention is not None  # a fold is scored like any written summary
