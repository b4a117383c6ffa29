"""The Hermes plugin's own logic, without Hermes and without the service: what it mirrors of a
Hermes message, what it hands back, how its spool numbers batches, and how it finds its place
again in a list Hermes reloaded from its state.db."""

from __future__ import annotations

import json
from pathlib import Path

from tests.plugin_support import convert, cursor, delivery, settings, store, sync

# What the real Hermes Agent 0.19.0 handed its post_llm_call hook after three gateway turns
# (re-record with `.venv/bin/python -m tests.record_hermes_working_list`).
RECORDED = Path(__file__).resolve().parent / "data" / "hermes_working_list.json"
OPENAI_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name"}


def test_a_hermes_message_is_mirrored_in_openai_format_without_hermes_private_keys():
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "call_id": "call_1",
                "response_item_id": "fc_9",
                "function": {"name": "terminal", "arguments": {"command": "ls"}},
            }
        ],
        "finish_reason": "tool_calls",
        "reasoning": "thinking…",
        "reasoning_details": [{"type": "x"}],
        "timestamp": 1764637000.0,
    }
    tool = {
        "role": "tool",
        "tool_call_id": "call_1",
        "tool_name": "terminal",
        "content": "a.py\x00b.py",
        "effect_disposition": "ok",
    }
    user = {
        "role": "user",
        "content": "  hi  ",
        "api_content": "hi [ctx]",
        "_todo_snapshot_synthetic": True,
    }

    assert convert.to_service(assistant) == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "ls"}'},
            }
        ],
    }
    # The service cannot store NUL; the name Hermes keeps as tool_name is OpenAI's name.
    assert convert.to_service(tool) == {
        "role": "tool",
        "content": "a.py\ufffdb.py",
        "tool_call_id": "call_1",
        "name": "terminal",
    }
    # What the user typed, blanks and all (api_content is what Hermes sent that one time).
    assert convert.to_service(user) == {"role": "user", "content": "  hi  "}
    assert convert.to_service({"role": "assistant", "content": None}) == {
        "role": "assistant",
        "content": "",
    }
    assert convert.to_service({"role": "developer", "content": "x"}) is None
    assert convert.to_service("not a message") is None


def test_hermes_recorded_working_list_is_mirrored_with_openai_keys_only():
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    mirrored = [convert.to_service(m) for m in recorded]
    assert len(mirrored) == len(recorded) and None not in mirrored
    assert {key for m in mirrored for key in m} <= OPENAI_KEYS
    assert any("_db_persisted" in m or "finish_reason" in m for m in recorded)  # Hermes's own
    call = next(m for m in mirrored if m.get("tool_calls"))["tool_calls"][0]
    assert set(call) == {"id", "type", "function"} and call["function"]["name"] == "terminal"
    result = next(m for m in mirrored if m["role"] == "tool")
    assert result["tool_call_id"] == call["id"] and result["name"] == "terminal"
    assert [m["content"] for m in mirrored] == [m["content"] for m in recorded]


def test_an_oversized_tool_result_is_cut_in_the_middle_under_the_services_limit():
    big = "head " + "x" * 2_000_000 + " tail"
    message = convert.to_service({"role": "tool", "tool_call_id": "c", "content": big})
    size = len(json.dumps(message, ensure_ascii=False).encode())
    assert size < convert.MAX_MESSAGE_BYTES
    assert message["content"].startswith("head ") and message["content"].endswith(" tail")
    assert "truncated by the hermes-memory plugin" in message["content"]


def test_the_services_live_context_becomes_hermes_list_without_the_system_prompt():
    context = [
        {"role": "system", "content": "You are helpful.\n\nMemory (kept across …)"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "[Summary of messages #2-#40 …]", "extra": 1},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c9", "name": "t", "content": "ok"},
    ]
    assert convert.context_to_hermes(context) == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "[Summary of messages #2-#40 …]"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "content": "ok", "tool_call_id": "c9", "name": "t"},
    ]


def test_the_spool_numbers_every_message_once_and_keeps_what_the_service_has_not_taken(
    tmp_path,
):
    places = store.Store(tmp_path)
    with places.open("h1") as conversation:
        first = conversation.spool([{"role": "user", "content": "a"}], None)
        second = conversation.spool(
            [{"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
            {"prompt_tokens": 9},
        )
    assert (first.sequence, second.sequence, second.end) == (0, 1, 3)

    with places.open("h1") as conversation:  # another process, later
        assert conversation.state.sent == 3
        assert [b.sequence for b in conversation.pending()] == [0, 1]
        conversation.state.acked = 1  # the service took the first batch
        assert [b.sequence for b in conversation.pending()] == [1]
        conversation.state.acked = 3
        conversation.drop_delivered()
        assert conversation.pending() == []


def test_a_spool_line_cut_short_by_a_crash_is_never_delivered(tmp_path):
    places = store.Store(tmp_path)
    with places.open("h1") as conversation:
        conversation.spool([{"role": "user", "content": "a"}], None)
        with open(conversation.spool_path, "a", encoding="utf-8") as spool:
            spool.write('{"sequence": 1, "messages": [{"role": "us')  # the process died here
    with places.open("h1") as conversation:
        assert [b.sequence for b in conversation.pending()] == [0]


def test_a_rotations_new_hermes_id_continues_the_same_conversation(tmp_path):
    config = settings.Settings(url="http://127.0.0.1:9", key="k", home=tmp_path)
    places = sync.store(config)
    with places.open("20261201_100000_aaaaaa") as conversation:
        conversation.state.service_id = "svc-1"
    sync.begin(config, "20261201_110000_bbbbbb", old_id="20261201_100000_aaaaaa")
    with places.open("20261201_110000_bbbbbb") as conversation:
        assert conversation.state.service_id == "svc-1"
        assert conversation.state.external_id == "20261201_100000_aaaaaa"
        assert conversation.state.hermes_ids == ["20261201_100000_aaaaaa", "20261201_110000_bbbbbb"]


def _history(n: int) -> list[dict]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"  message {i}  "}
        for i in range(n)
    ]


def test_the_mirror_finds_its_place_again_in_a_list_hermes_reloaded_and_cleaned(tmp_path):
    places = store.Store(tmp_path)
    with places.open("h1") as conversation:
        batch = cursor.take(conversation, _history(6))
        assert batch is not None and len(batch.messages) == 6
        # Hermes reloads the session: its text comes back stripped, and a new message follows.
        reloaded = [{**m, "content": m["content"].strip()} for m in _history(6)]
        batch = cursor.take(conversation, [*reloaded, {"role": "user", "content": "new"}])
        assert batch is not None
        assert [m["content"] for m in batch.messages] == ["new"]
        assert batch.sequence == 6
        # Nothing new: nothing spooled.
        assert cursor.take(conversation, [*reloaded, {"role": "user", "content": "new"}]) is None


def test_the_mirror_follows_its_last_message_where_hermes_inserted_one_before_it(tmp_path):
    places = store.Store(tmp_path)
    with places.open("h1") as conversation:
        cursor.take(conversation, _history(4))
        moved = [*_history(2), {"role": "user", "content": "todo snapshot"}, *_history(4)[2:]]
        batch = cursor.take(conversation, [*moved, {"role": "user", "content": "after"}])
        assert batch is not None
        assert [m["content"] for m in batch.messages] == ["after"]


def test_usage_waits_for_the_batch_holding_the_message_its_call_produced(tmp_path):
    config = settings.Settings(url="http://127.0.0.1:9", key="k", home=tmp_path)
    places = sync.store(config)
    with places.open("h1") as conversation:
        cursor.take(conversation, _history(1))
    sync.record_usage(config, "h1", {"prompt_tokens": 1234, "completion_tokens": 5})
    with places.open("h1") as conversation:
        batch = cursor.take(conversation, _history(3))
        assert batch is not None and batch.usage == {"prompt_tokens": 1234, "completion_tokens": 5}
        assert conversation.state.usage is None


def test_settings_come_from_the_config_block_with_bad_values_at_their_defaults(tmp_path):
    loaded = settings.from_mapping(
        {"url": "http://svc:8000/", "key": "hm_x", "timeout_seconds": "fast", "scope": "all"},
        tmp_path,
    )
    assert loaded.api == "http://svc:8000/api/v1"
    assert (loaded.timeout, loaded.scope, loaded.configured) == (3.0, "session", True)
    # An unexpanded ${VAR} (the variable is not set) is not a key.
    assert not settings.from_mapping({"url": "http://x", "key": "${NOPE}"}, tmp_path).configured


def test_after_an_undo_the_mirror_goes_on_from_where_hermes_list_went_back_to(tmp_path):
    places = store.Store(tmp_path)
    with places.open("h1") as conversation:
        cursor.take(conversation, _history(6))
        # /retry: Hermes dropped its last turn and asks again; nothing of it is lost.
        retried = [*_history(4), {"role": "user", "content": "again"}]
        batch = cursor.take(conversation, retried)
        assert batch is not None
        assert [m["content"] for m in batch.messages] == ["again"]
        assert batch.sequence == 6


def test_consecutive_spooled_batches_go_out_as_one_request_with_the_newest_usage():
    batches = [
        store.Batch(0, [{"role": "user", "content": "a"}] * 3, {"prompt_tokens": 1}),
        store.Batch(3, [{"role": "user", "content": "b"}] * 2, None),
        store.Batch(5, [{"role": "user", "content": "c"}], {"prompt_tokens": 7}),
        store.Batch(9, [{"role": "user", "content": "d"}], None),  # after a renumbering
    ]
    merged, count = delivery.merge(batches)
    assert (merged.sequence, len(merged.messages), merged.usage, count) == (
        0,
        6,
        {"prompt_tokens": 7},
        3,
    )


def test_only_a_prefix_of_the_mirrored_list_is_a_partial_compression_not_an_undo(tmp_path):
    places = store.Store(tmp_path)
    with places.open("h1") as conversation:
        cursor.take(conversation, _history(8))
        state = conversation.state
        assert cursor.held_back(state, _history(8)[:-2]) == 2  # /compress here: 2 kept
        assert cursor.held_back(state, _history(8)) == 0
        undone = [*_history(6), {"role": "user", "content": "something else"}]
        assert cursor.held_back(state, undone) == 0
