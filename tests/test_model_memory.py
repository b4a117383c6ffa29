"""The model keeps its session's memory blocks in the turn the service runs (memory_write and
memory_delete), only when ``memory_blocks.model_tools`` is on; each write is audited with the
session and the message it came from. Against the loopback model scripted to call the tools."""

from __future__ import annotations

import json

import pytest

from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app.models import AuditEntry, MemoryBlock, Message
from tests.test_recall import call


@pytest.fixture
def chat_model():
    with FakeModelServer() as server:
        server.script.default = Reply("Noted.")
        yield server


@pytest.fixture
def session_id(make_gateway, hermes_config, chat_model):
    def configure(model_tools: bool):
        hermes_config(
            model={"default": "gpt-4o", "base_url": chat_model.base_url},
            memory_blocks={"model_tools": model_tools},
        )

    configure(True)
    gw = make_gateway("memory")
    sid = gw.open(system_prompt="sys")["id"]
    return gw, sid, configure


def _offered(chat_model) -> list[str]:
    return [t["function"]["name"] for t in chat_model.requests[-1].body.get("tools", [])]


def test_memory_tools_are_off_by_default_and_a_call_to_them_is_refused(session_id, chat_model):
    gw, sid, configure = session_id
    configure(False)
    chat_model.then(
        Reply(None, tool_calls=[call({"label": "plan", "text": "x"}, name="memory_write")]),
        Reply("ok"),
    )
    assert gw.post(f"/sessions/{sid}/turn", {"content": "remember x"}).status_code == 200
    assert "memory_write" not in _offered(chat_model)
    assert not MemoryBlock.objects.filter(session_id=sid).exists()
    result = Message.objects.get(session_id=sid, role="tool")
    assert "unknown tool 'memory_write'" in json.loads(result.content)["error"]


def test_the_model_writes_a_block_the_next_request_carries_and_the_write_is_audited(
    session_id, chat_model
):
    gw, sid, _ = session_id
    chat_model.then(
        Reply(
            None,
            tool_calls=[
                call(
                    {"label": "plan", "text": "Ship the 斑马 migration on Friday."},
                    name="memory_write",
                    id="w1",
                )
            ],
        ),
        Reply("Saved it."),
    )
    answer = gw.post(f"/sessions/{sid}/turn", {"content": "Remember: ship on Friday."})
    assert answer.status_code == 200, answer.content
    assert {"session_search", "memory_write", "memory_delete"} <= set(_offered(chat_model))
    block = MemoryBlock.objects.get(session_id=sid, label="plan")
    assert block.text == "Ship the 斑马 migration on Friday."
    caller = Message.objects.get(session_id=sid, role="assistant", tool_calls__isnull=False)
    entry = AuditEntry.objects.get(action=AuditEntry.Action.MEMORY_WRITE)
    assert entry.actor == "model:gpt-4o" and entry.target == f"session {sid}"
    assert entry.details["position"] == caller.position
    assert entry.details["tool_call_id"] == "w1" and entry.details["label"] == "plan"
    assert "Friday" not in json.dumps(entry.details)  # ids and counts, never the text
    # The next request carries the block after the system prompt.
    gw.post(f"/sessions/{sid}/turn", {"content": "what is the plan?"})
    sent = chat_model.requests[-1].body["messages"]
    assert "Ship the 斑马 migration on Friday." in json.dumps(sent, ensure_ascii=False)


@pytest.mark.parametrize(
    "arguments, said",
    [
        ({"text": "no label"}, "label"),
        ({"label": "has space", "text": "x"}, "label"),
        ({"label": "ok", "text": "y" * 6000}, "5,000"),
        ("{oops", "JSON object"),
    ],
)
def test_a_refused_write_is_answered_to_the_model_and_nothing_is_stored(
    session_id, chat_model, arguments, said
):
    gw, sid, _ = session_id
    chat_model.then(Reply(None, tool_calls=[call(arguments, name="memory_write")]), Reply("ok"))
    assert gw.post(f"/sessions/{sid}/turn", {"content": "go"}).status_code == 200
    result = json.loads(Message.objects.get(session_id=sid, role="tool").content)
    assert said in result["error"], result
    assert not MemoryBlock.objects.filter(session_id=sid).exists()
    assert not AuditEntry.objects.filter(action=AuditEntry.Action.MEMORY_WRITE).exists()


def test_the_model_deletes_its_block_and_the_delete_is_audited(session_id, chat_model):
    gw, sid, _ = session_id
    chat_model.then(
        Reply(None, tool_calls=[call({"label": "plan", "text": "a"}, name="memory_write")]),
        Reply("ok"),
        Reply(None, tool_calls=[call({"label": "plan"}, name="memory_delete", id="d1")]),
        Reply("gone"),
    )
    gw.post(f"/sessions/{sid}/turn", {"content": "keep a"})
    gw.post(f"/sessions/{sid}/turn", {"content": "forget it"})
    assert not MemoryBlock.objects.filter(session_id=sid).exists()
    entry = AuditEntry.objects.get(action=AuditEntry.Action.MEMORY_DELETE)
    assert entry.details["tool_call_id"] == "d1"
