"""The gateway API end to end through Django's test client: every endpoint, auth, bad input."""

from __future__ import annotations

import json
import logging

import pytest

from sessions_app.keys import revoke_key
from sessions_app.models import Message, Session
from sessions_app.services import recount


def snapshot(session_id: str) -> list[tuple]:
    """Everything stored for a session, to prove a refused request changed nothing."""
    session = Session.objects.get(pk=session_id)
    rows = list(
        Message.objects.filter(session=session)
        .order_by("position")
        .values_list("pk", "position", "role", "content", "active", "compressed")
    )
    return [
        (session.live_messages, session.live_tokens, session.total_messages, session.next_position),
        *rows,
    ]


TOOL_TURN = [
    {"role": "user", "content": "用Django写代码 please"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "name": "read_file", "content": "print('hi')"},
    {"role": "assistant", "content": "Done."},
]


@pytest.fixture
def opened(gateway):
    return gateway.open(system_prompt="You are helpful.", title="demo", external_id="chat-1")


def test_opening_a_session_answers_201_with_counters_and_guard_state(gateway):
    body = gateway.open(system_prompt="sys", title="My chat")
    assert body["channel"] == "telegram"
    assert body["context_window"] == 128_000
    assert body["counters"]["live_messages"] == 1
    assert body["counters"]["total_messages"] == 1
    assert body["guard"] == {
        "cooldown_until": None,
        "thrash_lock_until": None,
        "cooling_down": False,
        "thrash_locked": False,
        "failure_streak": 0,
        "ineffective_streak": 0,
    }


def test_reopening_with_the_same_external_id_answers_200_and_the_same_session(gateway, opened):
    again = gateway.post("/sessions", {"model": "gpt-4o", "external_id": "chat-1"})
    assert again.status_code == 200
    assert again.json()["id"] == opened["id"]


def test_listing_sessions_shows_only_this_channel(make_gateway):
    a, b = make_gateway("a"), make_gateway("b")
    mine = a.open(title="mine")
    b.open(title="theirs")
    listed = a.get("/sessions").json()
    assert [s["id"] for s in listed] == [mine["id"]]
    assert a.get("/sessions", external_id="nope").json() == []


def test_listing_sessions_by_an_external_id_holding_nul_is_a_clear_422(gateway):
    gateway.open(external_id="chat-1")
    response = gateway.get("/sessions", external_id="chat\x001")
    assert response.status_code == 422, response.content
    assert "NUL character" in response.json()["detail"]
    assert [s["external_id"] for s in gateway.get("/sessions").json()] == ["chat-1"]


def test_appending_messages_answers_the_rows_counters_and_decisions(gateway, opened):
    response = gateway.post(
        f"/sessions/{opened['id']}/messages",
        {"messages": TOOL_TURN, "usage": {"prompt_tokens": 900, "completion_tokens": 12}},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert [m["position"] for m in body["messages"]] == [1, 2, 3, 4]
    assert [m["kind"] for m in body["messages"]] == ["live"] * 4
    assert body["session"]["counters"]["live_messages"] == 5
    assert body["session"]["usage"]["last_prompt_tokens"] == 900
    (decision,) = body["decisions"]
    assert decision["trigger"] == "threshold_post" and decision["action"] == "skip"
    assert "912 tokens under the threshold 96,000" in decision["reason"]
    session = Session.objects.get(pk=opened["id"])
    assert body["session"]["counters"]["live_tokens"] == recount(session).live_tokens


def test_the_session_endpoint_reads_the_counters(gateway, opened):
    gateway.post(f"/sessions/{opened['id']}/messages", {"messages": TOOL_TURN})
    body = gateway.get(f"/sessions/{opened['id']}").json()
    assert body["counters"]["live_messages"] == 5
    assert body["counters"]["total_messages"] == 5


def test_the_context_endpoint_returns_an_openai_messages_array(gateway, opened):
    gateway.post(f"/sessions/{opened['id']}/messages", {"messages": TOOL_TURN})
    body = gateway.get(f"/sessions/{opened['id']}/context").json()
    assert body["messages"][0] == {"role": "system", "content": "You are helpful."}
    assert body["messages"][1:] == [
        {k: v for k, v in m.items() if v is not None or k == "content"} for m in TOOL_TURN
    ]
    assert body["message_count"] == 5


def test_messages_are_paginated_and_filterable_by_kind(gateway, opened):
    sid = opened["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN + TOOL_TURN[:1]})
    gateway.post(f"/sessions/{sid}/rollback", {"count": 1})
    first = gateway.get(f"/sessions/{sid}/messages", limit=2).json()
    assert [m["position"] for m in first["items"]] == [0, 1]
    second = gateway.get(f"/sessions/{sid}/messages", limit=10, after=first["next_after"]).json()
    assert [m["position"] for m in second["items"]] == [2, 3, 4, 5]
    assert second["next_after"] is None
    rolled = gateway.get(f"/sessions/{sid}/messages", kind="rolled_back").json()
    assert [m["position"] for m in rolled["items"]] == [5]
    assert gateway.get(f"/sessions/{sid}/messages", kind="bogus").status_code == 422


def test_rollback_undoes_the_last_messages(gateway, opened):
    sid = opened["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN})
    response = gateway.post(f"/sessions/{sid}/rollback", {"count": 1, "mode": "regenerate"})
    assert response.status_code == 200
    body = response.json()
    assert [m["content"] for m in body["rolled_back"]] == ["Done."]
    assert body["rolled_back"][0]["kind"] == "rolled_back"
    assert body["session"]["counters"]["live_messages"] == 4
    assert body["session"]["counters"]["total_messages"] == 5


def test_reset_with_an_empty_body_archives_and_keeps_the_system_prompt(gateway, opened):
    sid = opened["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN})
    response = gateway.post(f"/sessions/{sid}/reset")
    assert response.status_code == 200, response.content
    assert response.json()["archived"] == 4
    assert gateway.get(f"/sessions/{sid}/context").json()["message_count"] == 1
    archived = gateway.get(f"/sessions/{sid}/messages", kind="archived").json()["items"]
    assert archived[0]["content"] == "用Django写代码 please"


def test_a_reset_through_the_api_is_on_the_session_s_trail_with_what_it_archived(gateway, opened):
    from compression.models import CompressionEvent

    sid = opened["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN})
    before = Session.objects.get(pk=sid).live_tokens
    gateway.post(f"/sessions/{sid}/reset")
    event = CompressionEvent.objects.get(session_id=sid, outcome="reset")
    assert event.trigger == "manual_api"
    assert event.reason == "reset through the API: 4 rows archived"
    assert (event.tokens_before, event.rows_archived) == (before, 4)
    assert event.tokens_after == Session.objects.get(pk=sid).live_tokens < before


def test_a_turn_without_a_chat_model_is_503_with_what_to_configure(gateway, opened):
    response = gateway.post(f"/sessions/{opened['id']}/turn", {"content": "hi"})
    assert response.status_code == 503
    assert "set model.base_url (and model.default" in response.json()["detail"]


def test_the_openapi_schema_documents_every_fixed_path(gateway):
    schema = gateway.client.get("/api/v1/openapi.json").json()
    paths = set(schema["paths"])
    for path in (
        "/api/v1/sessions",
        "/api/v1/sessions/{session_id}",
        "/api/v1/sessions/{session_id}/messages",
        "/api/v1/sessions/{session_id}/context",
        "/api/v1/sessions/{session_id}/turn",
        "/api/v1/sessions/{session_id}/compress",
        "/api/v1/sessions/{session_id}/rollback",
        "/api/v1/sessions/{session_id}/reset",
        "/api/v1/search",
    ):
        assert path in paths
    assert gateway.client.get("/api/v1/docs").status_code == 200


# --- Authentication and isolation -----------------------------------------------------------


def test_a_key_never_sees_another_channels_session(make_gateway):
    owner, stranger = make_gateway("owner"), make_gateway("stranger")
    sid = owner.open(system_prompt="secret")["id"]
    before = snapshot(sid)
    for response in (
        stranger.get(f"/sessions/{sid}"),
        stranger.get(f"/sessions/{sid}/context"),
        stranger.get(f"/sessions/{sid}/messages"),
        stranger.post(
            f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "x"}]}
        ),
        stranger.post(f"/sessions/{sid}/rollback", {"count": 1}),
        stranger.post(f"/sessions/{sid}/reset"),
        stranger.post(f"/sessions/{sid}/compress", {}),
        stranger.post(f"/sessions/{sid}/turn", {"content": "x"}),
    ):
        assert response.status_code == 404, response.content
        assert "No session" in response.json()["detail"]
    assert snapshot(sid) == before


def test_missing_malformed_wrong_and_revoked_keys_are_401(gateway, opened):
    sid = opened["id"]
    client = gateway.client
    assert client.get(f"/api/v1/sessions/{sid}").status_code == 401
    for header in (
        "Bearer",
        "Bearer nonsense",
        "Basic abc",
        f"Bearer {gateway.key}x",
        f"Bearer {gateway.key[:-1]}",
    ):
        response = client.get(f"/api/v1/sessions/{sid}", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401, header
        assert "create_channel" in response.json()["detail"]
        assert response["WWW-Authenticate"].startswith("Bearer")
    revoke_key(gateway.channel.keys.get())
    assert gateway.get(f"/sessions/{sid}").status_code == 401


# --- Bad input: a clear 4xx, and nothing stored changes -----------------------------------


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"messages": [{"role": "wizard", "content": "x"}]}, 422, "role"),
        ({"messages": [{"role": "tool", "content": "orphan"}]}, 422, "tool_call_id"),
        (
            {"messages": [{"role": "user", "content": "x", "tool_call_id": "c"}]},
            422,
            "only tool messages",
        ),
        ({"messages": [{"role": "user", "content": None}]}, 422, "content must be a string"),
        ({"messages": [{"role": "user", "content": 5}]}, 422, "content"),
        ({"messages": [{"role": "user", "content": "\ud800"}]}, 422, "invalid Unicode"),
        ({"messages": [{"role": "user", "content": "a\u0000b"}]}, 422, "NUL"),
        ({"messages": []}, 422, "messages"),
        ({"message": [{"role": "user", "content": "x"}]}, 422, "messages"),
        (
            {"messages": [{"role": "user", "content": "ok"}, {"role": "tool", "content": "x"}]},
            422,
            "messages.1.tool_call_id: a tool message needs",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}
                        ],
                    }
                ]
            },
            422,
            "arguments",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "usage": {"prompt_tokens": -5}},
            422,
            "prompt_tokens",
        ),
    ],
)
def test_invalid_messages_are_refused_and_nothing_changes(gateway, opened, body, status, fragment):
    sid = opened["id"]
    before = snapshot(sid)
    response = gateway.post(f"/sessions/{sid}/messages", body)
    assert response.status_code == status, response.content
    assert fragment in response.json()["detail"]
    assert snapshot(sid) == before


def test_malformed_json_is_400(gateway, opened):
    sid = opened["id"]
    before = snapshot(sid)
    response = gateway.post(f"/sessions/{sid}/messages", raw=b'{"messages": [')
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]
    assert snapshot(sid) == before


def test_invalid_utf8_is_400(gateway, opened):
    sid = opened["id"]
    before = snapshot(sid)
    raw = b'{"messages": [{"role": "user", "content": "\xff\xfe bad"}]}'
    response = gateway.post(f"/sessions/{sid}/messages", raw=raw)
    assert response.status_code == 400
    assert "UTF-8" in response.json()["detail"]
    assert snapshot(sid) == before


def test_content_over_the_configured_maximum_is_413(gateway, opened, hermes_config):
    hermes_config(server={"max_message_bytes": 2048})
    sid = opened["id"]
    before = snapshot(sid)
    response = gateway.post(
        f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "é" * 1500}]}
    )
    assert response.status_code == 413
    assert "3,000 bytes; the limit is 2,048" in response.json()["detail"]
    assert snapshot(sid) == before


def test_the_default_maximum_is_one_mebibyte(gateway, opened):
    sid = opened["id"]
    ok = gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "a" * (1024 * 1024)}]},
    )
    assert ok.status_code == 201
    too_big = gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "a" * (1024 * 1024 + 1)}]},
    )
    assert too_big.status_code == 413


@pytest.mark.parametrize("count", [-1, 0, 10_001, 10**12, "many"])
def test_out_of_range_rollback_counts_are_422(gateway, opened, count):
    sid = opened["id"]
    before = snapshot(sid)
    response = gateway.post(f"/sessions/{sid}/rollback", {"count": count})
    assert response.status_code == 422
    assert "count" in response.json()["detail"]
    assert snapshot(sid) == before


def test_rolling_back_more_than_exists_is_409(gateway, opened):
    sid = opened["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN})
    before = snapshot(sid)
    response = gateway.post(f"/sessions/{sid}/rollback", {"count": 500})
    assert response.status_code == 409
    assert "at most 4 can be rolled back" in response.json()["detail"]
    assert snapshot(sid) == before


@pytest.mark.parametrize("sid", ["00000000-0000-0000-0000-000000000000", "not-a-uuid", "1"])
def test_unknown_session_ids_are_404(gateway, sid):
    response = gateway.get(f"/sessions/{sid}")
    assert response.status_code == 404
    assert "No session" in response.json()["detail"]


@pytest.mark.parametrize(
    "path", ["/nothing-here", "/sessions//turn", "/sessions/x/messages/extra", "/" + "a" * 5000]
)
def test_a_path_no_endpoint_has_is_a_json_404_naming_the_docs(gateway, path):
    response = gateway.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert "/api/v1/docs" in body["detail"] and body["request_id"]
    assert len(body["detail"]) < 400  # a long path is not echoed whole


def test_a_method_an_endpoint_does_not_take_is_a_json_405_that_keeps_allow(gateway):
    response = gateway.delete("/tools")
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert response["Allow"] == "GET"
    assert "does not take DELETE; it takes GET" in response.json()["detail"]


def test_pages_outside_the_api_keep_their_html_404(client):
    response = client.get("/console/no-such-page/")
    assert response.status_code in (302, 404)  # the console asks for a login first
    assert not response.get("Content-Type", "").startswith("application/json")


def test_bad_session_fields_are_422(gateway):
    for body in (
        {"context_window": 10},
        {"context_window": "big"},
        {"title": "x" * 301},
        {"external_id": ""},
        {"colour": "blue"},
    ):
        response = gateway.post("/sessions", body)
        assert response.status_code == 422, body
    assert Session.objects.count() == 0


def test_a_database_busy_past_the_timeout_is_503_with_retry_after(gateway, opened, monkeypatch):
    from django.db import OperationalError

    from sessions_app import services

    def busy(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(services, "append_messages", busy)
    response = gateway.post(
        f"/sessions/{opened['id']}/messages", {"messages": [{"role": "user", "content": "x"}]}
    )
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "Retry" in response.json()["detail"]


def test_unknown_message_fields_and_content_parts_survive_the_api(gateway, opened):
    sid = opened["id"]
    image = {"type": "image_url", "image_url": {"url": "http://127.0.0.1/cat.png", "detail": "low"}}
    sent = [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]},
        {
            "role": "assistant",
            "content": "A cat.",
            "reasoning_content": "whiskers",
            "refusal": None,
        },
    ]
    response = gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": sent, "usage": {"input_tokens": 321, "output_tokens": 7}},
    )
    assert response.status_code == 201, response.content
    assert response.json()["session"]["usage"]["last_prompt_tokens"] == 321
    context = gateway.get(f"/sessions/{sid}/context").json()["messages"]
    assert context[1:] == sent


def test_huge_integers_are_422_not_500(gateway, opened):
    sid = opened["id"]
    response = gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "x"}], "usage": {"prompt_tokens": 2**70}},
    )
    assert response.status_code == 422
    assert gateway.get("/sessions", offset=10**24).status_code == 422
    assert gateway.get(f"/sessions/{sid}/messages", after=10**24).status_code == 422


def test_a_body_over_the_request_limit_is_a_json_400(gateway, opened, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    response = gateway.post(
        f"/sessions/{opened['id']}/messages",
        {"messages": [{"role": "user", "content": "x" * 4000}]},
    )
    assert response.status_code in (400, 413)
    assert "max_request_bytes" in response.json()["detail"]


def test_what_openai_compatible_stacks_send_is_accepted(gateway, opened):
    sid = opened["id"]
    messages = [
        {"role": "user", "content": "hi"},
        # vLLM and LangChain send an empty list for "no tool calls".
        {"role": "assistant", "content": "hello", "tool_calls": []},
        {"role": "user", "content": "do something bad"},
        # OpenAI's refusals: no content, a refusal.
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    ]
    response = gateway.post(f"/sessions/{sid}/messages", {"messages": messages})
    assert response.status_code == 201, response.content
    context = gateway.get(f"/sessions/{sid}/context").json()["messages"]
    assert context[-1] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    # Still refused: nothing at all to say.
    bare = gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": []}]},
    )
    assert bare.status_code == 422 and "content is required" in bare.json()["detail"]
    missing_role = gateway.post(f"/sessions/{sid}/messages", {"messages": [{"content": "x"}]})
    assert "a message needs 'role'" in missing_role.json()["detail"]


def test_answers_are_utf8_json_that_shows_chinese_as_chinese_not_escapes(gateway):
    opened = gateway.post("/sessions", {"model": "gpt-4o", "title": "数据库迁移"})
    sid = opened.json()["id"]
    appended = gateway.post(
        f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "用Django写代码"}]}
    )
    answers = [
        opened,
        appended,
        gateway.get(f"/sessions/{sid}/context"),
        gateway.get("/search", q="用Django写代码"),
        gateway.post("/sessions", {"model": 5}),  # an error answer too
        gateway.post("/sessions", {"model": "gpt-4o", "数据": 1}),  # one that names Chinese
    ]
    for response in answers:
        assert response["Content-Type"] == "application/json; charset=utf-8"
        assert b"\\u" not in response.content, response.content[:200]
    assert "数据库迁移".encode() in opened.content
    assert "用Django写代码".encode() in answers[3].content
    assert "数据".encode() in answers[5].content and b"request_id" in answers[5].content


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_a_body_that_is_not_json_is_a_json_415_and_nothing_is_stored(gateway, content_type):
    sid = gateway.open()["id"]
    before = snapshot(sid)
    body = json.dumps({"messages": [{"role": "user", "content": "hello"}]})
    response = gateway.client.post(
        f"/api/v1/sessions/{sid}/messages",
        body,
        content_type=content_type,
        **gateway._headers(),
    )
    assert response.status_code == 415
    assert response["Content-Type"].startswith("application/json")
    assert "Content-Type: application/json" in response.json()["detail"]
    assert snapshot(sid) == before


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "application/merge-patch+json"],
)
def test_a_json_body_is_taken_whatever_its_json_type_says(gateway, content_type):
    sid = gateway.open()["id"]
    response = gateway.client.post(
        f"/api/v1/sessions/{sid}/messages",
        json.dumps({"messages": [{"role": "user", "content": "hello"}]}),
        content_type=content_type,
        **gateway._headers(),
    )
    assert response.status_code == 201, response.content


def test_a_bad_host_header_is_a_json_400_and_one_log_line_without_a_traceback(gateway, caplog):
    """Django logs it as an error with its traceback; the service's handler writes one line."""
    with caplog.at_level("WARNING"):
        response = gateway.client.get(
            "/api/v1/sessions", HTTP_HOST="scanner.example", **gateway._headers()
        )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["detail"]
    records = [r for r in caplog.records if r.name.startswith("django.security")]
    assert len(records) == 1 and "scanner.example" in records[0].getMessage()
    # What the service's own log handler (settings.LOGGING's console) writes of it.
    (console,) = [h for h in logging.getLogger().handlers if h.get_name() == "console"]
    record = records[0]
    assert console.filter(record)
    line = console.format(record)
    assert "scanner.example" in line and "\n" not in line and "Traceback" not in line
    assert record.levelname == "WARNING"
