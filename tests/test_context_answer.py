"""``GET /sessions/{id}/context`` writes its answer as it is, not validated against
``ContextOut`` and encoded value by value again: this holds the two ways to the same bytes over
every kind of row the live context sends."""

from __future__ import annotations

import json

from hermes_site.api import ReadableJSON
from sessions_app.api.routes import context_answer
from sessions_app.api.schemas import ContextOut
from sessions_app.models import Message, Session
from sessions_app.selectors import live_context
from sessions_app.selectors.context import CONTEXT_COLUMNS, LIVE_ORDER, ContextRow, context_rows

from .test_search import planted  # noqa: F401 - the fixture


def _through_the_schema(data: dict) -> bytes:
    """What django-ninja answers for ``data`` with ``ContextOut`` as its response schema."""
    dumped = ContextOut.model_validate(data).model_dump()
    return ReadableJSON().render(None, dumped, response_status=200)


def test_the_context_answer_is_byte_for_byte_what_its_schema_would_write(
    gateway,
    planted,  # noqa: F811 - a summary over archived facts (CJK among them), a rolled-back turn
):
    sid = planted
    assert gateway.put("/memory/user", {"text": "Ada deploys on Fridays, 周五."}).status_code == 201
    call = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    turn = [
        {"role": "assistant", "content": None, "tool_calls": [call], "reasoning": "list it"},
        {"role": "tool", "tool_call_id": "call_1", "name": "ls", "content": "a.py\nb.py"},
        {"role": "user", "content": [{"type": "text", "text": 'and "quoted" \\ text'}]},
        {"role": "assistant", "content": "Two files. 🙂"},
    ]
    assert gateway.post(f"/sessions/{sid}/messages", {"messages": turn}).status_code == 201

    response = gateway.get(f"/sessions/{sid}/context")

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json; charset=utf-8"
    session = Session.objects.get(pk=sid)
    data = context_answer(session, live_context(session))
    assert response.content == _through_the_schema(data)
    messages = json.loads(response.content)["messages"]
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and "Fridays" in messages[0]["content"]  # the memory block
    texts = [m["content"] for m in messages if isinstance(m["content"], str)]
    assert any("zeppelin" in text for text in texts)
    assert messages[-4]["tool_calls"] == [call] and messages[-4]["reasoning"] == "list it"
    assert messages[-2]["content"] == [{"type": "text", "text": 'and "quoted" \\ text'}]
    # json.dumps without an encoder fails on anything that is not JSON's: a datetime, a UUID.
    assert json.loads(json.dumps(data)) == data


def test_the_live_rows_read_on_the_cursor_are_what_the_orm_would_read(gateway, planted):  # noqa: F811
    """context_rows converts each column itself: every JSON column, the summary flag and what
    an import could store (integers past 64 bits, a bare JSON string) read as Django's own
    conversion reads them. (The database refuses text that is not JSON in those columns.)"""
    sid = planted
    session = Session.objects.get(pk=sid)
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"n": 1}'}}
    position = session.messages.order_by("-position").values_list("position", flat=True)[0]
    odd = {
        "content_parts": [{"type": "text", "text": "部分"}],
        "extra": {"reasoning": "why", "signature": None, "score": 0.1},
        "tool_calls": [call],
        "pruned_tool_calls": [call | {"function": {"name": "f", "arguments": "{}"}}],
        "provider_item": "just a string",
        "origin": {"system": "hermes", "id": 2**70, "neg": -(2**63) - 1},
    }
    Message.objects.create(
        session=session,
        channel_id=session.channel_id,
        position=position + 1,
        role="assistant",
        **odd,
    )
    orm = [
        ContextRow(*row)
        for row in Message.objects.filter(session=session, active=True)
        .order_by(*LIVE_ORDER)
        .values_list(*CONTEXT_COLUMNS)
    ]

    read = context_rows(session)

    assert read == orm
    assert any(row.is_summary for row in read) and all(type(r.is_summary) is bool for r in read)
    last = read[-1]
    assert last.extra["score"] == 0.1 and last.origin["id"] == 2**70
    assert last.tool_calls == [call] and last.provider_item == "just a string"
