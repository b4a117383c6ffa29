"""The harness that drives the real Hermes Agent: what it sends the loopback model and what it
writes, as the importer and the plugin tests rely on."""

from __future__ import annotations

import sqlite3

import pytest

from compression.testing.fake_model import FakeModelServer
from tests.hermes_peer import HermesHome, ScriptedAgent, needs_hermes

pytestmark = [needs_hermes, pytest.mark.peer]


def test_real_hermes_streams_calls_a_tool_and_compacts_once_its_reported_prompt_passes_threshold(
    tmp_path,
):
    size = {"tokens": 1_000}
    agent = ScriptedAgent(prompt_tokens=lambda body: size["tokens"])
    with FakeModelServer() as server:
        server.script.default = agent.behaviour()
        in_place = {"compression": {"in_place": True}}
        home = HermesHome(tmp_path / "home", server.base_url, config=in_place)
        first = home.chat("Remember the vault code 4417, then run `echo vault-4417`")
        assert first.reply.startswith("Done:") and "vault-4417" in first.reply
        for n in range(3):
            home.chat(f"fact {n}: the colour is C{n}.", resume=first.session_id)
        size["tokens"] = 150_000  # over Hermes's default threshold, half of 200,000
        home.chat("and now run `echo over-the-threshold`", resume=first.session_id)

    assert all(request.get("stream") for request in agent.requests)
    assert "terminal" in {t["function"]["name"] for t in agent.requests[0]["tools"]}
    assert len(agent.summary_requests) == 1
    with sqlite3.connect(home.state_db) as db:
        rows = db.execute(
            "SELECT role, active, compacted, content FROM messages ORDER BY id"
        ).fetchall()
    # In place: the originals are marked compacted, the new live block opens with head copies.
    assert any(active == 0 and compacted == 1 for _, active, compacted, _ in rows)
    live = [content for _, active, _, content in rows if active]
    assert live[0].startswith("Remember the vault code 4417")
    assert any(c.startswith("[CONTEXT COMPACTION") for c in live)
