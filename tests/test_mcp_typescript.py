"""A second real MCP client: the official TypeScript SDK's (@modelcontextprotocol/sdk 1.32.2,
pinned in tests/peers/package-lock.json; bin/peers installs it), over streamable HTTP against
the deployed service and over stdio against ``manage.py mcp``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from tests.plugin_support import LiveService
from tests.processes import ROOT, isolated_env

PEERS = ROOT / "tests" / "peers"
CLIENT = PEERS / "mcp_client.mjs"
SDK = PEERS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(
        NODE is None or not SDK.exists(),
        reason="the MCP TypeScript SDK is not installed: run bin/peers (needs Node.js and npm)",
    ),
    pytest.mark.peer,
    pytest.mark.slow,
]

FACT = "the backup bucket is s3://quokka-archive-7 in eu-west-1"


def run_client(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(NODE), str(CLIENT)],
        cwd=PEERS,
        env={**os.environ, "MCP_SCENARIO": json.dumps(scenario)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert records and records[-1]["kind"] == "done", done.stdout + done.stderr
    return records


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with isolated_env(tmp_path_factory.mktemp("mcp-ts")) as env:
        service = LiveService(env)
        service.start()
        try:
            status, session = service.post(
                "/sessions", {"model": "gpt-4o", "system_prompt": "sys", "external_id": "ts-1"}
            )
            assert status == 201
            messages = [{"role": "user", "content": FACT}, {"role": "assistant", "content": "ok"}]
            sid = session["id"]
            assert service.post(f"/sessions/{sid}/messages", {"messages": messages})[0] == 201
            yield service
        finally:
            service.stop()


CALLS = [
    {"name": "search", "arguments": {"query": "quokka-archive-7"}},
    {"name": "read_messages", "arguments": {"session": "ts-1", "around": 1}},
    {"name": "search", "arguments": {"query": "x", "limit": 1000}},
]


def _check(records: list[dict[str, Any]]) -> None:
    kinds = [r["kind"] for r in records]
    assert "error" not in kinds, records
    server = records[0]
    assert server["version"]["name"] == "hermes-memory" and "tools" in server["capabilities"]
    tools = {t["name"]: t for t in records[1]["tools"]}
    assert tools["search"]["annotations"]["readOnlyHint"] is True
    assert tools["memory_delete"]["annotations"]["destructiveHint"] is True
    assert "outputSchema" in tools["search"]
    found, read, refused = (r["result"] for r in records[2:5])
    assert not found.get("isError") and found["structuredContent"]["hits"][0]["position"] == 1
    assert "quokka-archive-7" in found["content"][0]["text"]
    assert [row["position"] for row in read["structuredContent"]["rows"]] == [0, 1, 2]
    assert refused["isError"] is True and "limit" in refused["content"][0]["text"]


def test_the_typescript_client_over_http_lists_calls_and_is_refused_cleanly(live):
    _check(run_client({"url": f"{live.url}/mcp", "key": live.key, "calls": CALLS}))


def test_the_typescript_client_without_a_key_is_told_why(live):
    records = run_client({"url": f"{live.url}/mcp", "key": None, "calls": []})
    errors = [r for r in records if r["kind"] == "error"]
    assert errors and "Missing channel key" in errors[0]["message"], records


def test_the_typescript_client_over_stdio(live):
    env = {**live.env, "TS_MCP_KEY": live.key}
    scenario = {
        "command": sys.executable,
        "args": [str(ROOT / "manage.py"), "mcp", "--key-env", "TS_MCP_KEY"],
        "env": env,
        "cwd": str(ROOT),
        "calls": CALLS,
    }
    _check(run_client(scenario))
