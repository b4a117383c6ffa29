"""OpenAI server-side compaction (T7b) through the turn, against the loopback server speaking the
Responses API: opt-in per model family, our threshold held above the server's, the compaction
item stored (originals archived and searchable) and replayed in place of what it replaced."""

from __future__ import annotations

import pytest

from agent.responses import to_responses_input
from compression.models import CompressionEvent
from compression.policy.threshold import server_compact_threshold, threshold_for
from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app.models import Message, Session
from tests.test_compression import assert_consistent


@pytest.fixture
def model():
    with FakeModelServer() as server:
        server.script.default = Reply("Noted.", usage={"input_tokens": 900, "output_tokens": 5})
        yield server


@pytest.fixture
def server_side(hermes_config, model):
    def configure(**compression):
        return hermes_config(
            model={"default": "gpt-5.1", "base_url": model.base_url},
            compression={
                "codex_responses_native": True,
                "codex_responses_compact_threshold": 100_000,
                **compression,
            },
        )

    configure()
    return configure


def say(gateway, sid: str, text: str) -> dict:
    response = gateway.post(f"/sessions/{sid}/turn", {"content": text})
    assert response.status_code == 200, response.content
    return response.json()


def test_our_threshold_is_held_above_the_servers_for_opted_in_models_only(gateway, server_side):
    server_side(codex_responses_compact_threshold=350_000)
    sid = gateway.open(model="gpt-5.1", context_window=400_000, system_prompt="sys")["id"]
    session = Session.objects.get(pk=sid)
    ours = threshold_for(session)
    assert server_compact_threshold(session) == 350_000
    # ours would be 300,000 (0.75 of the usable window): held at the server's + 5% of the window
    assert ours.tokens == 370_000
    assert "held above the OpenAI server's compact threshold 350,000" in ours.reason
    other = Session.objects.get(pk=gateway.open(model="gpt-4o", system_prompt="sys")["id"])
    assert "held above" not in threshold_for(other).reason
    server_side(codex_responses_native=False)
    assert "held above" not in threshold_for(session).reason


def test_the_turn_asks_the_server_to_compact_at_its_threshold(gateway, server_side, model):
    sid = gateway.open(model="gpt-5.1", system_prompt="You are terse.")["id"]
    body = say(gateway, sid, "Plan the migration of the 缓存 layer")
    assert body["reply"]["content"] == "Noted."
    request = model.requests[-1]
    assert request.path.endswith("/responses")
    sent = request.body
    assert sent["context_management"] == [{"type": "compaction", "compact_threshold": 100_000}]
    assert sent["instructions"] == "You are terse."
    assert sent["input"] == [{"role": "user", "content": "Plan the migration of the 缓存 layer"}]
    assert sent["store"] is False
    assert Session.objects.get(pk=sid).last_prompt_tokens == 900


def test_a_compaction_item_replaces_the_context_and_is_replayed_next_turn(
    gateway, server_side, model
):
    sid = gateway.open(model="gpt-5.1", system_prompt="You are terse.")["id"]
    for n in range(3):
        say(gateway, sid, f"Step {n}: check server-{n}")
    model.then(Reply("Compacted and answered.", compaction="enc-blob-1"))
    body = say(gateway, sid, "Step 3: check server-3")
    assert any(d["trigger"] == "server" and d["action"] == "compressed" for d in body["decisions"])
    event = CompressionEvent.objects.get(session_id=sid, trigger="server")
    assert event.path == "openai_server" and event.rows_archived == 7
    live = list(
        Message.objects.filter(session_id=sid, active=True).order_by("position", "-is_summary")
    )
    assert [m.role for m in live] == ["system", "user", "assistant"]
    assert live[1].is_summary and live[1].provider_item["encrypted_content"] == "enc-blob-1"
    assert live[2].content == "Compacted and answered."
    assert_consistent(Session.objects.get(pk=sid))
    # the originals the server folded away stay searchable
    hits = gateway.get("/search", q="server-1").json()["hits"]
    assert hits and {h["message"]["kind"] for h in hits} == {"archived"}

    say(gateway, sid, "Step 4: and now?")
    sent = model.requests[-1].body
    assert sent["instructions"] == "You are terse."
    assert sent["input"][0] == {
        "type": "compaction",
        "id": live[1].provider_item["id"],
        "encrypted_content": "enc-blob-1",
    }
    assert sent["input"][1:] == [
        {"role": "assistant", "content": "Compacted and answered."},
        {"role": "user", "content": "Step 4: and now?"},
    ]
    assert "server-1" not in str(sent["input"])
    # the gateway's chat-completions view of the context has no trace of the opaque item
    context = gateway.get(f"/sessions/{sid}/context").json()
    assert "enc-blob-1" not in str(context) and "openai_compaction" not in str(context)


def test_models_outside_the_family_keep_chat_completions(gateway, server_side, model):
    sid = gateway.open(model="gpt-4o", system_prompt="sys")["id"]
    say(gateway, sid, "hello")
    assert model.requests[-1].path.endswith("/chat/completions")


def test_tool_calls_and_results_become_function_items():
    instructions, items = to_responses_input(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
            {"role": "assistant", "content": "Two files."},
        ]
    )
    assert instructions == "sys"
    assert items == [
        {"role": "user", "content": "list files"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py b.py"},
        {"role": "assistant", "content": "Two files."},
    ]


def test_content_parts_become_responses_parts():
    _, items = to_responses_input(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is in this picture?"},
                    {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        ]
    )
    assert items == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is in this picture?"},
                {"type": "input_image", "image_url": "https://example.org/cat.png"},
            ],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]},
    ]


def test_rows_stored_while_the_model_answered_are_not_archived_by_its_compaction(
    gateway, server_side
):
    from compression.paths.server_compaction import store_compaction

    sid = gateway.open(model="gpt-5.1", system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "sent"}]})
    sent = list(Message.objects.filter(session_id=sid).values_list("pk", flat=True))
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "late"}]})
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "x"}
    store_compaction(Session.objects.get(pk=sid), item, 100_000, sent)
    live = {m.content: m for m in Message.objects.filter(session_id=sid, active=True)}
    assert "late" in live and "sent" not in live and "sys" in live
    assert_consistent(Session.objects.get(pk=sid))


def test_our_own_compression_keeps_the_servers_compaction_item(gateway, server_side, model):
    sid = gateway.open(model="gpt-5.1", system_prompt="sys")["id"]
    say(gateway, sid, "first")
    model.then(Reply("Compacted.", compaction="enc-blob-2"))
    say(gateway, sid, "second")
    for n in range(12):  # long enough that a summary of them is smaller than they are
        say(gateway, sid, f"later step {n}: " + "the details of this step " * 30)
    response = gateway.post(f"/sessions/{sid}/compress", {"wait": True})
    assert response.json()["outcome"] in ("compressed", "fallback")
    anchor = Message.objects.get(session_id=sid, provider_item__id__isnull=False)
    assert anchor.active, "the encrypted item cannot be summarised: it stays in the head"
    say(gateway, sid, "after our compression")
    sent = model.requests[-1].body["input"]
    assert sent[0]["encrypted_content"] == "enc-blob-2"
    assert any("summary" in str(item.get("content", "")).lower() for item in sent[1:3])


def test_the_migration_moves_stored_compaction_items_out_of_the_replayed_fields(gateway):
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    sid = gateway.open(system_prompt="sys")["id"]
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "enc"}
    row = Message.objects.create(
        session_id=sid,
        channel=gateway.channel,
        position=9,
        role="user",
        content="[compacted]",
        is_summary=True,
        extra={"openai_compaction": item, "reasoning": "kept"},
    )
    plain = Message.objects.create(
        session_id=sid, channel=gateway.channel, position=10, role="user", content="hi"
    )
    migration = importlib.import_module("compression.migrations.0007_compaction_items_out_of_extra")
    migration.move(apps, SimpleNamespace(connection=connection))
    row.refresh_from_db()
    plain.refresh_from_db()
    assert row.provider_item == item and row.extra == {"reasoning": "kept"}
    assert plain.provider_item is None and plain.extra is None


def test_memory_blocks_reach_the_responses_instructions_after_the_system_prompt(
    gateway, server_side, model
):
    sid = gateway.open(model="gpt-5.1", system_prompt="You are terse.")["id"]
    assert gateway.put(f"/sessions/{sid}/memory/user", {"text": "Ada"}).status_code == 201
    say(gateway, sid, "hello")
    instructions = model.requests[-1].body["instructions"]
    assert instructions.startswith("You are terse.\n\nMemory (kept across")
    assert instructions.endswith("<user>\nAda\n</user>")
