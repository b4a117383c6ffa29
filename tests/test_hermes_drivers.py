"""The other ways to drive the real Hermes Agent, each against the loopback model with Hermes's
own built-in compressor: the gateway's API server (many turns from one long-lived process),
ACP over stdio, and the TUI gateway's JSON-RPC. What each shows is what a context-engine
plugin driven through it will see."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from compression.testing.fake_model import FakeModelServer
from tests.hermes_peer import (
    HermesGateway,
    HermesHome,
    ScriptedAgent,
    needs_hermes,
    processes_under,
    text_of,
)

pytestmark = needs_hermes


def sent(request: dict) -> str:
    """Everything one model request carried, as one text."""
    return "\n".join(text_of(m) for m in request.get("messages") or [])


def test_one_gateway_process_serves_two_conversations_and_follows_hermes_across_a_rotation(
    tmp_path,
):
    size = {"tokens": 1_000}
    agent = ScriptedAgent(prompt_tokens=lambda body: size["tokens"])
    with FakeModelServer() as server:
        server.script.default = agent.behaviour()
        rotation = {"compression": {"in_place": False}}  # 0.19.0's config default is in place
        home = HermesHome(tmp_path / "home", server.base_url, config=rotation)
        with HermesGateway(home) as gateway:
            first = gateway.turn("Remember the vault code 4417, then run `echo vault-4417`")
            for n in range(3):
                gateway.turn(f"fact {n}: the colour is C{n}.")
            other = gateway.turn("A separate chat about tides.", conversation="other")
            before = gateway.turns[-2].session_id
            size["tokens"] = 150_000  # past Hermes's threshold, half of 200,000
            compacted = gateway.turn("and now run `echo over-the-threshold`")
            size["tokens"] = 1_000
            after = gateway.turn("after the compaction, fact 3: the colour is C3.")
        assert processes_under(home.path) == []

    # The tool call went through Hermes's terminal and its output came back as the reply.
    assert first.reply.startswith("Done:") and "vault-4417" in first.reply
    # Each turn is one more request to the model, carrying the conversation so far from
    # Hermes's state.db (the request body held only the new message).
    fact_2 = next(r for r in agent.requests if "fact 2:" in text_of(r["messages"][-1]))
    assert "fact 0: the colour is C0." in sent(fact_2) and "vault code 4417" in sent(fact_2)
    tides = next(r for r in agent.requests if "tides" in text_of(r["messages"][-1]))
    assert "4417" not in sent(tides) and other.session_id != first.session_id
    # One compaction, with rotation: the reply named Hermes's new session and the next turn
    # went on there, with Hermes's summary in place of the oldest middle turns.
    assert len(agent.summary_requests) == 1
    assert first.session_id == before != compacted.session_id == after.session_id
    last = [text_of(m) for m in agent.requests[-1]["messages"]]
    assert last[1].startswith("Remember the vault code 4417")
    assert any(t.startswith("[CONTEXT COMPACTION") for t in last)
    assert "fact 0: the colour is C0." not in last
    with sqlite3.connect(home.state_db) as db:
        sessions = dict(
            db.execute(
                "SELECT id, parent_session_id FROM sessions WHERE id = ?", (after.session_id,)
            )
        )
        ended = db.execute("SELECT end_reason FROM sessions WHERE id = ?", (before,)).fetchone()
    assert sessions == {after.session_id: before} and ended == ("compression",)
    # A warm turn is a request to a running process, not a start of Hermes.
    warm = sorted(t.seconds for t in gateway.turns[1:])
    assert warm[len(warm) // 2] < 2.0, [round(t.seconds, 2) for t in gateway.turns]


def test_a_gateway_stops_with_the_commands_it_runs_when_the_test_fails_midway(tmp_path):
    # Hermes's gateway finishes its shutdown in 5 s, but a turn blocked in a tool keeps its
    # process alive after that: so the harness's kill is what ends it here, after 8 s.
    with FakeModelServer() as server:
        server.script.default = ScriptedAgent().behaviour()
        home = HermesHome(tmp_path / "home", server.base_url)
        failures: list[BaseException] = []

        def hang() -> None:
            try:
                gateway.turn("run `sleep 300`", timeout=60)
            except BaseException as error:  # the gateway goes away under the turn
                failures.append(error)

        with (
            pytest.raises(RuntimeError, match="the test failed"),
            HermesGateway(home, stop_timeout=8) as gateway,
        ):
            waiter = threading.Thread(target=hang, daemon=True)
            waiter.start()
            deadline = time.monotonic() + 60
            while not any(_is_sleep(pid) for pid in processes_under(home.path)):
                assert time.monotonic() < deadline, gateway.log_tail()
                time.sleep(0.2)
            raise RuntimeError("the test failed")
        assert processes_under(home.path) == []
        waiter.join(30)
        assert failures and not waiter.is_alive()


def _is_sleep(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"sleep\x00300" in cmdline.read()
    except OSError:
        return False
