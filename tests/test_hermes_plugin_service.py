"""The Hermes plugin's delivery against the real service (in-process, on the test database),
without Hermes: exactly once across lost answers and restarts, in order after an outage, never
waiting past its timeout for a service that hangs, and compressing when the service says so."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from compression.testing.fake_model import Digest, FakeModelServer
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session
from tests.plugin_support import convert, free_port, settings, store, sync

TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "terminal", "arguments": '{"command": "echo hi"}'},
}


@pytest.fixture
def summariser():
    with FakeModelServer() as server:
        server.script.default = Digest(0.05)
        yield server


@pytest.fixture
def service(live_server, hermes_config, summariser, transactional_db):
    hermes_config(
        auxiliary={"compression": {"model": "loopback", "base_url": summariser.base_url}},
        compression={"threshold_tokens": 50_000, "protect_first_n": 2, "protect_last_n": 4},
        server={"allowed_hosts": ["localhost", "127.0.0.1", "testserver"]},
    )
    _, issued = create_channel("hermes")
    return live_server.url, issued.plaintext


def config(tmp_path: Path, url: str, key: str = "", **extra) -> settings.Settings:
    return settings.Settings(url=url, key=key or "hm_none", home=tmp_path, **extra)


FILLER = " ".join(f"detail-{i} of the inventory" for i in range(40))


def turn(n: int, tool: bool = False) -> list[dict]:
    """One turn (a tool call and its result with ``tool``), long enough to be worth a summary."""
    messages = [{"role": "user", "content": f"question {n}: what is item {n}? {FILLER}"}]
    if tool:
        call = {**TOOL_CALL, "id": f"call_{n}"}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call], "finish_reason": "x"},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": f"item {n} is {n * 7}"},
        ]
    return [*messages, {"role": "assistant", "content": f"item {n} is {n * 7}. {FILLER}"}]


def stored(external_id: str) -> list[tuple[str, str]]:
    session = Session.objects.get(external_id=external_id)
    rows = Message.objects.filter(session=session, is_summary=False).order_by("position")
    return [(m.role, m.content or "") for m in rows]


def test_every_message_reaches_the_service_once_even_when_an_answer_was_lost(tmp_path, service):
    url, key = service
    plugin = config(tmp_path, url, key)
    history = turn(0, tool=True)
    state = sync.mirror(plugin, "h1", history, model="m")
    assert state.acked == state.sent == 4
    # The answer was lost: the plugin's state says nothing was taken, so it sends again.
    with sync.store(plugin).open("h1") as conversation:
        conversation.state.acked = 0
        conversation.rewrite_spool([store.Batch(0, [convert.to_service(m) for m in history])])
    history += turn(1)
    state = sync.mirror(plugin, "h1", history)
    assert state.acked == state.sent == 6
    assert stored("h1") == [(m["role"], m["content"]) for m in history]


def test_messages_spooled_while_the_service_is_away_arrive_in_order_once_it_answers(
    tmp_path, service
):
    url, key = service
    away = config(tmp_path, f"http://127.0.0.1:{free_port()}", key, retry_seconds=0)
    history: list[dict] = []
    for n in range(3):
        history += turn(n, tool=n == 1)
        state = sync.mirror(away, "h1", history, model="m")
        assert state.acked == 0 and state.service_id is None
    assert state.sent == len(history)
    # The service is back (here: the plugin is pointed at it).
    history += turn(3)
    state = sync.mirror(config(tmp_path, url, key), "h1", history)
    assert state.acked == state.sent == len(history)
    assert stored("h1") == [(m["role"], m["content"]) for m in history]
    assert not (tmp_path / "hermes-memory" / "conversations" / "h1" / "spool.jsonl").exists()


def test_a_service_that_hangs_costs_one_timeout_and_is_then_left_alone(tmp_path, caplog):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections, never answers
    hanging = config(
        tmp_path, f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5, retry_seconds=30
    )
    try:
        started = time.monotonic()
        state = sync.mirror(hanging, "h1", turn(0), model="m")
        first = time.monotonic() - started
        started = time.monotonic()
        state = sync.mirror(hanging, "h1", turn(0) + turn(1), model="m")
        second = time.monotonic() - started
    finally:
        listener.close()
    assert first < 2 and second < 0.2, (first, second)
    assert state.sent == 4 and state.acked == 0
    assert state.away_reason and "did not answer" in state.away_reason
    assert sum("messages wait in the spool" in r.message for r in caplog.records) == 1
    # Meanwhile compress() leaves Hermes's list as it is.
    assert sync.compress(hanging, "h1", turn(0) + turn(1)) is None


def test_the_service_decides_and_compress_hands_back_its_live_context(tmp_path, service):
    url, key = service
    plugin = config(tmp_path, url, key)
    history: list[dict] = []
    for n in range(8):
        history += turn(n, tool=n % 2 == 1)
        sync.record_usage(plugin, "h1", {"prompt_tokens": 2_000 * len(history)})
        state = sync.mirror(plugin, "h1", history, model="gpt-4o")
    assert not sync.wants_compression(plugin, "h1")  # under the service's threshold so far
    history += turn(8)
    sync.record_usage(plugin, "h1", {"prompt_tokens": 60_000})
    state = sync.mirror(plugin, "h1", history)
    assert state.due and sync.wants_compression(plugin, "h1")

    compressed = sync.compress(plugin, "h1", history)
    assert compressed is not None and len(compressed) < len(history)
    assert compressed[0] == {"role": "user", "content": history[0]["content"]}  # the head
    assert any("[Originals #" in (m["content"] or "") for m in compressed)  # the summary
    assert compressed[-1]["content"] == history[-1]["content"]  # the tail
    assert not sync.wants_compression(plugin, "h1")
    assert Session.objects.get(external_id="h1").compressions == 1

    # Hermes goes on from the compressed list: only what is new is mirrored.
    going_on = compressed + turn(9)
    state = sync.mirror(plugin, "h1", going_on)
    assert state.acked == state.sent == len(history) + 2
    originals = stored("h1")
    assert originals[-2:] == [(m["role"], m["content"]) for m in turn(9)]
    assert len(originals) == len(history) + 2


def test_recall_finds_an_archived_original_for_the_model(tmp_path, service):
    url, key = service
    plugin = config(tmp_path, url, key)
    history = turn(0)  # the head the service keeps
    history += [{"role": "user", "content": "Remember the vault code 4417."}]
    history += [{"role": "assistant", "content": "Noted."}]
    for n in range(1, 8):
        history += turn(n)
    sync.mirror(plugin, "h1", history, model="gpt-4o")
    assert sync.compress(plugin, "h1", history, force=True) is not None

    found = sync.recall(plugin, "h1", {"query": "vault code"})
    assert "4417" in found and "archived" in found
    assert "error" in sync.recall(plugin, "h1", {"limit": 99})  # the service's own words


def test_two_processes_mirroring_one_conversation_store_each_message_once(tmp_path, service):
    url, key = service
    plugin = config(tmp_path, url, key)
    history: list[dict] = []
    for n in range(6):
        history += turn(n)
    errors: list[BaseException] = []

    def mirror() -> None:
        try:
            sync.mirror(plugin, "h1", history, model="m")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    workers = [threading.Thread(target=mirror) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert stored("h1") == [(m["role"], m["content"]) for m in history]


def test_compressing_only_the_older_part_leaves_hermes_its_own_copy_of_the_kept_turns(
    tmp_path, service
):
    """The gateway's ``/compress here N``: Hermes hands over all but its last turns, keeps
    those as they are and appends them to what compress() returns."""
    url, key = service
    plugin = config(tmp_path, url, key)
    history: list[dict] = []
    for n in range(8):
        history += turn(n)
    sync.mirror(plugin, "h1", history, model="gpt-4o")
    kept = history[-2:]
    compressed = sync.compress(plugin, "h1", history[:-2], focus="item 3")
    assert compressed is not None
    assert [m["content"] for m in compressed[-2:]] != [m["content"] for m in kept]

    going_on = [*compressed, *kept, *turn(8)]
    state = sync.mirror(plugin, "h1", going_on)
    assert state.acked == state.sent == len(history) + 2
    assert stored("h1") == [(m["role"], m["content"]) for m in history + turn(8)]


def test_a_batch_the_service_refuses_is_set_aside_and_the_rest_still_arrives_in_order(
    tmp_path, service, caplog
):
    url, key = service
    plugin = config(tmp_path, url, key)
    away = config(tmp_path, f"http://127.0.0.1:{free_port()}", key, retry_seconds=0)
    history = turn(0)
    sync.mirror(plugin, "h1", history, model="m")
    # While the service is away: a turn whose tool result answers no call (the service refuses
    # such a batch on every retry), then a good one.
    history += [
        {"role": "user", "content": "orphan ahead"},
        {"role": "tool", "tool_call_id": "call_nobody", "content": "result of nothing"},
    ]
    sync.mirror(away, "h1", history)
    history += turn(1)
    sync.mirror(away, "h1", history)

    state = sync.mirror(plugin, "h1", history)
    assert state.acked == state.sent == len(history) - 2
    assert stored("h1") == [(m["role"], m["content"]) for m in turn(0) + turn(1)]
    rejected = tmp_path / "hermes-memory" / "conversations" / "h1" / "rejected.jsonl"
    (line,) = rejected.read_text(encoding="utf-8").splitlines()
    assert '"status": 409' in line and "call_nobody" in line
    assert any("the service refused messages 2-3 (409)" in r.message for r in caplog.records)


def test_when_the_service_continues_a_compressed_session_in_a_new_one_the_mirror_follows(
    tmp_path, service, hermes_config, summariser
):
    url, key = service
    hermes_config(
        auxiliary={"compression": {"model": "loopback", "base_url": summariser.base_url}},
        compression={"in_place": False, "protect_first_n": 2, "protect_last_n": 4},
        server={"allowed_hosts": ["localhost", "127.0.0.1", "testserver"]},
    )
    plugin = config(tmp_path, url, key)
    history: list[dict] = []
    for n in range(6):
        history += turn(n)
    first = sync.mirror(plugin, "h1", history, model="gpt-4o").service_id
    compressed = sync.compress(plugin, "h1", history, force=True)
    assert compressed is not None
    state = sync.mirror(plugin, "h1", [*compressed, *turn(6)])
    continuation = Session.objects.get(external_id="h1")
    assert state.service_id == str(continuation.pk) != first
    assert continuation.parent_id is not None and str(continuation.parent_id) == first
    assert state.acked == state.sent == continuation.next_sequence == len(history) + 2
    live = Message.objects.filter(session=continuation, active=True).order_by("position")
    assert [m.content for m in live][-2:] == [m["content"] for m in turn(6)]


def test_a_compression_the_service_ran_on_its_own_is_adopted_not_run_again(
    tmp_path, service, hermes_config, summariser
):
    url, key = service
    hermes_config(
        auxiliary={"compression": {"model": "loopback", "base_url": summariser.base_url}},
        compression={"hygiene_hard_message_limit": 20, "protect_first_n": 2, "protect_last_n": 4},
        server={"allowed_hosts": ["localhost", "127.0.0.1", "testserver"]},
    )
    plugin = config(tmp_path, url, key)
    history: list[dict] = []
    for n in range(6):
        history += turn(n, tool=True)
    # Past the hard message limit the service compresses whatever the client says (G1); the
    # plugin hears of it in the answer to its next batch.
    sync.mirror(plugin, "h1", history, model="gpt-4o")
    history += turn(6)
    state = sync.mirror(plugin, "h1", history)
    assert state.compressions >= 1
    assert sync.wants_compression(plugin, "h1")
    requests = len(summariser.requests)

    adopted = sync.compress(plugin, "h1", history)
    assert adopted is not None and any("[Originals #" in (m["content"] or "") for m in adopted)
    assert len(summariser.requests) == requests  # nothing compressed a second time
    assert Session.objects.get(external_id="h1").compressions == 1
    assert not sync.wants_compression(plugin, "h1")
