"""The other ways to drive the real Hermes Agent, each against the loopback model with Hermes's
own built-in compressor: the gateway's API server (many turns from one long-lived process),
ACP over stdio, and the TUI gateway's JSON-RPC. What each shows is what a context-engine
plugin driven through it will see."""

from __future__ import annotations

import errno
import socket
import sqlite3
import threading
import time

import pytest

from compression.testing.fake_model import FakeModelServer
from tests.hermes_peer import (
    HermesACP,
    HermesGateway,
    HermesHome,
    HermesTUI,
    ScriptedAgent,
    needs_hermes,
    processes_under,
    text_of,
)

pytestmark = [needs_hermes, pytest.mark.peer]


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
        with socket.socket() as probe:  # and nothing listens on its port any more
            assert probe.connect_ex(("127.0.0.1", gateway.port)) == errno.ECONNREFUSED

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


def live_rows(db_path, session_id: str) -> list[tuple[int, int, str]]:
    """(active, compacted, content) of each state.db row of a session, in order."""
    with sqlite3.connect(db_path) as db:
        return db.execute(
            "SELECT active, compacted, content FROM messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()


def talk(prompt) -> list:
    """The opening every driver test plays: a tool call, then three facts."""
    first = prompt("Remember the vault code 4417, then run `echo vault-4417`")
    assert first.startswith("Done:") and "vault-4417" in first, first
    return [prompt(f"fact {n}: the colour is C{n}.") for n in (1, 2, 3)]


def test_over_acp_compact_compresses_the_live_context_but_not_state_db_and_compress_is_no_command(
    tmp_path,
):
    agent = ScriptedAgent()
    with FakeModelServer() as server:
        server.script.default = agent.behaviour()
        home = HermesHome(tmp_path / "home", server.base_url)
        with HermesACP(home) as hermes:
            assert hermes.info.agent_capabilities.load_session
            session = hermes.new_session()
            talk(lambda text: hermes.prompt(text).text)
            # /compress is the CLI's and the TUI's: over ACP it is text for the model.
            assert hermes.prompt("/compress the vault").text == "Noted: /compress the vault"
            assert agent.summary_requests == []
            compacted = hermes.compact()
            after = hermes.prompt("after the compaction")
        assert processes_under(home.path) == []
        compacted_request = agent.requests[-1]
        with HermesACP(home) as again:
            replayed = again.load_session(session)
            again.prompt("after a restart")
        assert processes_under(home.path) == []

    # /compact is Hermes's own: one summary request, no model turn, and the next request
    # carries the head, Hermes's summary and the tail instead of the middle.
    assert compacted.stop_reason == "end_turn"
    assert compacted.text.startswith("Context compressed:"), compacted.text
    assert len(agent.summary_requests) == 1 and after.text == "Noted: after the compaction"
    live = [text_of(m) for m in compacted_request["messages"]]
    assert live[1].startswith("Remember the vault code 4417")
    assert any(t.startswith("[CONTEXT COMPACTION") for t in live)
    assert "fact 1: the colour is C1." not in live
    # ...but state.db was never told: ACP's /compact detaches the session store while it
    # compresses, and every original row stays live, with no summary row.
    rows = live_rows(home.state_db, session)
    assert rows and all(active == 1 and compacted == 0 for active, compacted, _ in rows)
    assert not any(content.startswith("[CONTEXT COMPACTION") for *_, content in rows)
    # So a session loaded by another `hermes acp` (it replays the history first) has its
    # middle back, uncompacted.
    assert any("fact 1: the colour is C1." in getattr(u.content, "text", "") for u in replayed)
    reloaded = [text_of(m) for m in agent.requests[-1]["messages"]]
    assert "fact 1: the colour is C1." in reloaded
    assert not any(t.startswith("[CONTEXT COMPACTION") for t in reloaded)


def test_the_tui_gateways_session_compress_takes_a_focus_and_compacts_state_db_without_a_terminal(
    tmp_path,
):
    agent = ScriptedAgent()
    with FakeModelServer() as server:
        server.script.default = agent.behaviour()
        home = HermesHome(tmp_path / "home", server.base_url)  # in place: 0.19.0's default
        with HermesTUI(home) as tui:
            tui.create_session()
            talk(lambda text: tui.prompt(text).text)
            result = tui.compress("the vault code")
            after = tui.prompt("after the compaction")
        assert processes_under(home.path) == []

    assert result["status"] == "compressed"
    assert result["after_messages"] < result["before_messages"]
    # The focus reached Hermes's summary prompt.
    (summary,) = agent.summary_requests
    assert "the vault code" in text_of(summary["messages"][-1])
    assert after.text == "Noted: after the compaction"
    live = [text_of(m) for m in agent.requests[-1]["messages"]]
    assert live[1].startswith("Remember the vault code 4417")
    assert any(t.startswith("[CONTEXT COMPACTION") for t in live)
    assert "fact 1: the colour is C1." not in live
    # In place, under the same state.db id: the originals archived, the summary live.
    rows = live_rows(home.state_db, after.session_id)
    archived = [content for active, compacted, content in rows if not active and compacted]
    assert "fact 1: the colour is C1." in archived
    assert any(c.startswith("[CONTEXT COMPACTION") for active, _, c in rows if active)


def calls(home: HermesHome, name: str) -> list[dict]:
    return [c for c in home.engine_calls() if c["call"] == name]


def test_what_a_context_engine_plugin_is_called_with_through_the_gateway_acp_and_the_tui(
    tmp_path,
):
    """The engine-recorder plugin is Hermes's built-in compressor registered as a plugin
    engine; what it wrote down is what a context-engine plugin gets from each driver."""
    size = {"tokens": 1_000}
    agent = ScriptedAgent(prompt_tokens=lambda body: size["tokens"])
    with FakeModelServer() as server:
        server.script.default = agent.behaviour()
        rotation = {"compression": {"in_place": False}}
        gateway_home = HermesHome(tmp_path / "gateway", server.base_url, config=rotation)
        gateway_home.record_engine_calls()
        with HermesGateway(gateway_home) as gateway:
            gateway.turn("Hello.", session_key="channel-7")
            talk(lambda text: gateway.turn(text).reply)
            first = gateway.turns[-1]
            size["tokens"] = 150_000
            rotated = gateway.turn("now run `echo over-the-threshold`")
            size["tokens"] = 1_000
            gateway.turn("/compress the vault")  # the API server has no slash commands
        acp_home = HermesHome(tmp_path / "acp", server.base_url)
        acp_home.record_engine_calls()
        with HermesACP(acp_home) as hermes:
            hermes.new_session()
            talk(lambda text: hermes.prompt(text).text)
            hermes.compact()
        tui_home = HermesHome(tmp_path / "tui", server.base_url)
        tui_home.record_engine_calls()
        with HermesTUI(tui_home) as tui:
            tui.create_session()
            talk(lambda text: tui.prompt(text).text)
            tui.compress("the vault code")

    # The API server builds an agent, so a deep copy of the engine, for every request, and
    # tells each copy on_session_start; X-Hermes-Session-Key arrives as conversation_id.
    starts = calls(gateway_home, "on_session_start")
    fresh = [c for c in starts if "boundary_reason" not in c]
    assert len(fresh) == 7 and len({c["engine"] for c in fresh}) == 7
    assert {(c["platform"], c["conversation_id"]) for c in starts} == {("api_server", "channel-7")}
    # Its automatic compaction: should_compress said yes, then compress, not forced, no focus;
    # the rotation ends the old Hermes session and starts the new one on the same copy.
    (compress,) = calls(gateway_home, "compress")
    assert (compress["force"], compress["focus_topic"], compress["current_tokens"]) == (
        False,
        None,
        150_000,
    )
    log = gateway_home.engine_calls()
    at = log.index(compress)
    assert log[at - 1]["call"] == "should_compress"
    end, start = log[at + 1], log[at + 2]
    assert (end["call"], end["session_id"]) == ("on_session_end", first.session_id)
    assert (start["call"], start["session_id"]) == ("on_session_start", rotated.session_id)
    assert (start["old_session_id"], start["boundary_reason"]) == (first.session_id, "compression")
    assert len({c["engine"] for c in (log[at - 1], compress, end, start)}) == 1
    # No other session end, not even when the gateway stops.
    assert calls(gateway_home, "on_session_end") == [end]

    # ACP: one agent per session; /compact calls compress unasked by should_compress, not
    # forced and without a focus, so an engine cannot tell it from an automatic one by its
    # arguments. Closing the connection ends no session.
    (session_start,) = calls(acp_home, "on_session_start")[:1]
    (compact,) = calls(acp_home, "compress")
    assert (compact["force"], compact["focus_topic"]) == (False, None)
    assert calls(acp_home, "should_compress") == [] and calls(acp_home, "on_session_end") == []
    assert {c["engine"] for c in acp_home.engine_calls()} == {session_start["engine"]}

    # The TUI gateway's session.compress hands the engine its focus (still not forced), and
    # the gateway ends the session when its stdin closes.
    (focused,) = calls(tui_home, "compress")
    assert (focused["force"], focused["focus_topic"]) == (False, "the vault code")
    assert calls(tui_home, "should_compress") == []
    assert tui_home.engine_calls()[-1]["call"] == "on_session_end"


def _is_sleep(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"sleep\x00300" in cmdline.read()
    except OSError:
        return False
