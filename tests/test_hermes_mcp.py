"""The real Hermes Agent (0.19.0, its ``mcp`` extra: the ``mcp`` 1.26.0 client) as an MCP client
of the deployed service: ``mcp_servers`` in its ``config.yaml`` names ``/mcp`` with the channel
key in a header, as its users write it; in a real ``hermes chat`` turn against the loopback
model, the model calls the service's search tool for a fact compression archived, and the
reply carries what the tool found.

Hermes names an MCP tool ``mcp__<server>__<tool>`` (hyphens become underscores), so the search
tool of the server ``hermes-memory`` reaches the model as ``mcp__hermes_memory__search``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from compression.testing.fake_model import FakeModelServer, Reply, Respond
from tests.hermes_peer import HermesHome, is_summary_request, needs_hermes, text_of
from tests.mcp_recording import RecordingProxy
from tests.plugin_support import LiveService
from tests.processes import isolated_env

pytestmark = [needs_hermes, pytest.mark.peer, pytest.mark.slow]

FACT = "the staging database password rotates every Tuesday via vault path kv/zebra-42"
SEARCH = "mcp__hermes_memory__search"
# What Hermes sent in the turn below, recorded through a proxy (HERMES_RECORD_FIXTURES=1 writes
# it again); tests/test_mcp.py replays it against the service where Hermes cannot install.
RECORDED = Path(__file__).parent / "data" / "hermes_mcp" / "chat_turn.jsonl"


class MemoryUsingModel:
    """The loopback model behind Hermes: asked a question, it calls the memory search tool
    (if Hermes offers it); handed the tool's answer, it replies with what the answer said."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []
        self.tool_results: list[str] = []

    def answer(self, body: dict[str, Any] | None) -> Reply:
        body = body or {}
        if is_summary_request(body):
            return Reply("## Goal\nThe user is planning a database migration.")
        if "tools" not in body:
            return Reply("Loopback session")
        names = [tool.get("function", {}).get("name", "") for tool in body["tools"]]
        self.offered.append(names)
        last = (body.get("messages") or [{}])[-1]
        if last.get("role") == "tool":
            said = text_of(last)
            self.tool_results.append(said)
            return Reply("From the memory service: " + said[:800])
        if SEARCH not in names:
            return Reply("I have no memory tool.")
        call = {
            "id": "call_0001",
            "type": "function",
            "function": {"name": SEARCH, "arguments": json.dumps({"query": "zebra-42"})},
        }
        return Reply(None, tool_calls=[call], usage={"prompt_tokens": 900, "completion_tokens": 9})


def memory_home(path: Path, model_url: str, server_url: str, auth: str, **extra: Any) -> HermesHome:
    """A Hermes home whose config.yaml names this service as the MCP server ``hermes-memory``,
    as a user writes it."""
    server = {"url": server_url, "headers": {"Authorization": auth}, **extra}
    return HermesHome(path, model_url, config={"mcp_servers": {"hermes-memory": server}})


@pytest.fixture
def archived_fact(tmp_path):
    """The deployed service with the fact planted early in a conversation and then compressed
    away: only its archived original still says it."""
    with FakeModelServer() as summariser:
        summariser.script.default = Reply("## Goal\nThe user is planning a database migration.")
        sections = (
            "auxiliary:\n  compression:\n    model: fake-summary\n"
            f"    base_url: {summariser.base_url}\n"
            "compression:\n  protect_first_n: 1\n  protect_last_n: 4\n"
        )
        (tmp_path / "service").mkdir()
        with isolated_env(tmp_path / "service", sections=sections) as env:
            live = LiveService(env)
            live.start()
            try:
                status, session = live.post(
                    "/sessions", {"model": "gpt-4o", "system_prompt": "sys", "title": "Migration"}
                )
                assert status == 201
                turns = [
                    {"role": "user", "content": "hello, let us plan the migration"},
                    {"role": "assistant", "content": "sure"},
                    {"role": "user", "content": FACT},
                ]
                for n in range(20):
                    turns.append({"role": "assistant", "content": f"step {n} checked"})
                    turns.append({"role": "user", "content": f"next {n}"})
                sid = session["id"]
                assert live.post(f"/sessions/{sid}/messages", {"messages": turns})[0] == 201
                status, done = live.post(f"/sessions/{sid}/compress", {}, timeout=120)
                assert status == 200 and done["outcome"] in ("compressed", "fallback"), done
                yield live
            finally:
                live.stop()


def test_real_hermes_calls_the_memory_search_tool_and_its_reply_carries_the_archived_fact(
    archived_fact, tmp_path
):
    live = archived_fact
    model = MemoryUsingModel()
    with FakeModelServer() as chat, RecordingProxy(live.url) as proxy:
        chat.script.default = Respond(model.answer)
        home = memory_home(
            tmp_path / "home", chat.base_url, f"{proxy.url}/mcp", "Bearer ${HERMES_MEMORY_KEY}"
        )
        turn = home.chat(
            "Where does the staging database password rotate?",
            extra_env={"HERMES_MEMORY_KEY": live.key},
        )
    if os.environ.get("HERMES_RECORD_FIXTURES") == "1":
        proxy.save(RECORDED)
    posts = [e for e in proxy.exchanges if e["method"] == "POST"]
    assert [e["body"].get("method") for e in posts if "method" in e["body"]][:1] == ["initialize"]
    assert all(e["status"] in (200, 202) for e in posts), posts
    assert model.offered and SEARCH in model.offered[0], model.offered[:1]
    offered = {name for name in model.offered[0] if name.startswith("mcp__hermes_memory__")}
    assert f"mcp__hermes_memory__{'read_messages'}" in offered
    assert model.tool_results, "Hermes did not send the tool's answer back to the model"
    found = model.tool_results[0]
    assert "kv/zebra-42" in found and "archived" in found, found[:600]
    assert "kv/zebra-42" in turn.reply, turn.stdout[-2000:]


def test_real_hermes_with_a_wrong_key_gets_no_memory_tools_and_the_turn_still_answers(
    archived_fact, tmp_path
):
    live = archived_fact
    model = MemoryUsingModel()
    with FakeModelServer() as chat:
        chat.script.default = Respond(model.answer)
        home = memory_home(
            tmp_path / "home",
            chat.base_url,
            f"{live.url}/mcp",
            "Bearer hm_not_a_key",
            connect_timeout=10,
        )
        turn = home.chat("Where does the staging database password rotate?")
    assert model.offered and not any(n.startswith("mcp__hermes_memory__") for n in model.offered[0])
    assert turn.reply == "I have no memory tool."
