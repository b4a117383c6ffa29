"""The MCP server as agents reach it, through the official MCP Python SDK's client: streamable
HTTP at ``/mcp`` on the deployed service (``manage.py serve``: gunicorn and the worker, a
loopback summariser), and stdio (``manage.py mcp --key-env VAR``). Nothing is faked
in-process: the tools run in the service's processes against its database."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from compression.testing.fake_model import FakeModelServer, Reply
from tests.mcp_clients import drive, over_http, over_stdio, text_of
from tests.plugin_support import LiveService, call
from tests.processes import ROOT, isolated_env, python

pytestmark = pytest.mark.slow  # real processes: the service, its worker, stdio servers

FACT = "the staging database password rotates every Tuesday via vault path kv/zebra-42"
FACT_AT = 3
TOOLS = {
    "search",
    "read_messages",
    "list_sessions",
    "get_context",
    "pin",
    "unpin",
    "memory_read",
    "memory_write",
    "memory_delete",
    "compress",
}


def _key(env: dict[str, str], channel: str, *options: str) -> str:
    out = python("manage.py", "create_channel", channel, *options, env=env, timeout=60)
    return out.split("store it now): ")[1].strip()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One deployment for the module: a conversation long enough to compress, its fact planted
    early, and a second channel that must see none of it."""
    tmp = tmp_path_factory.mktemp("mcp")
    with FakeModelServer() as model:
        model.script.default = Reply("## Goal\nThe user is planning a database migration.")
        sections = (
            "auxiliary:\n  compression:\n    model: fake-summary\n"
            f"    base_url: {model.base_url}\n"
            "compression:\n  protect_first_n: 1\n  protect_last_n: 4\n"
        )
        with isolated_env(tmp, sections=sections) as env:
            live = LiveService(env)
            live.start()
            try:
                status, session = live.post(
                    "/sessions",
                    {
                        "model": "gpt-4o",
                        "system_prompt": "sys",
                        "external_id": "chat-1",
                        "title": "Migration",
                    },
                )
                assert status == 201, session
                turns: list[dict[str, Any]] = [
                    {"role": "user", "content": "hello, let us plan the migration"},
                    {"role": "assistant", "content": "sure"},
                    {"role": "user", "content": FACT},  # position FACT_AT, in the middle
                ]
                for n in range(30):
                    turns.append(
                        {"role": "assistant", "content": f"step {n}: checked the 斑马 table"}
                    )
                    turns.append({"role": "user", "content": f"next step {n} please"})
                status, _ = live.post(f"/sessions/{session['id']}/messages", {"messages": turns})
                assert status == 201
                yield live, session["id"], model
            finally:
                live.stop()


def _http(live: LiveService, key: str | None = None, mode: str = "auto"):
    return over_http(live.url + "/mcp", live.key if key is None else key, mode)


def _call(live: LiveService, name: str, arguments: dict[str, Any], key: str | None = None):
    async def script(client):
        return await client.call_tool(name, arguments)

    return drive(_http(live, key), script)


def test_an_agent_lists_every_tool_with_both_schemas_and_honest_annotations(service):
    live, _, _ = service

    async def script(client):
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in drive(_http(live), script)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.description, tool.name
    for name in ("search", "read_messages", "list_sessions", "get_context", "memory_read"):
        assert tools[name].annotations.read_only_hint is True, name
        assert tools[name].annotations.destructive_hint is False, name
    for name in ("pin", "unpin", "memory_write", "memory_delete", "compress"):
        assert tools[name].annotations.read_only_hint is False, name
    assert tools["memory_delete"].annotations.destructive_hint is True
    assert tools["search"].input_schema["properties"]["query"]["maxLength"] == 1000


def test_every_tool_answers_structured_content_and_readable_text(service):
    live, session_id, _ = service

    async def script(client):
        said = {}
        said["list"] = await client.call_tool("list_sessions", {})
        said["context"] = await client.call_tool("get_context", {"session": "chat-1"})
        said["around"] = await client.call_tool("read_messages", {"session": "chat-1", "around": 1})
        said["range"] = await client.call_tool(
            "read_messages", {"session": session_id, "start": 1, "end": 3}
        )
        said["pin"] = await client.call_tool("pin", {"session": "chat-1", "position": 2})
        said["unpin"] = await client.call_tool("unpin", {"session": "chat-1", "position": 2})
        said["write"] = await client.call_tool(
            "memory_write", {"label": "team_prefs", "text": "deploys happen on Thursdays"}
        )
        said["read"] = await client.call_tool("memory_read", {"session": "chat-1"})
        said["delete"] = await client.call_tool("memory_delete", {"label": "team_prefs"})
        said["search"] = await client.call_tool("search", {"query": "zebra-42"})
        return said

    said = drive(_http(live), script)
    for name, result in said.items():
        assert not result.is_error, (name, text_of(result))
        assert result.structured_content is not None, name
        assert text_of(result) and "Traceback" not in text_of(result), name
    listed = said["list"].structured_content["sessions"]
    assert [(s["external_id"], s["title"]) for s in listed] == [("chat-1", "Migration")]
    assert "Migration" in text_of(said["list"])
    assert said["context"].structured_content["messages"][0]["role"] == "system"
    assert [r["position"] for r in said["around"].structured_content["rows"]] == [0, 1, 2, 3, 4, 5]
    assert [r["position"] for r in said["range"].structured_content["rows"]] == [1, 2, 3]
    assert said["pin"].structured_content["pinned"] is True
    assert said["unpin"].structured_content["pinned"] is False
    blocks = said["read"].structured_content["blocks"]
    assert [(b["label"], b["scope"]) for b in blocks] == [("team_prefs", "channel")]
    assert said["delete"].structured_content["deleted"] is True
    hit = said["search"].structured_content["hits"][0]
    assert hit["position"] == FACT_AT and hit["external_id"] == "chat-1"
    assert "⟦zebra-42⟧" in hit["excerpt"] or "⟦zebra⟧" in hit["excerpt"]
    assert FACT[:20] in text_of(said["search"])


def test_after_compress_a_search_hit_says_it_is_archived_and_which_summary_replaced_it(service):
    live, _, model = service
    compressed = _call(live, "compress", {"session": "chat-1", "focus": "the vault path"})
    assert not compressed.is_error, text_of(compressed)
    assert compressed.structured_content["outcome"] in ("compressed", "fallback")
    assert 0 <= compressed.structured_content["retention"] <= 1  # the summary's score
    assert "salient items" in text_of(compressed)
    assert model.requests, "the summariser was not called"
    assert "the vault path" in json.dumps(model.requests[-1].body, ensure_ascii=False)
    found = _call(live, "search", {"query": "zebra-42", "kind": "archived"})
    hit = found.structured_content["hits"][0]
    assert hit["kind"] == "archived" and hit["covered_by"] is not None
    assert f"under the summary at #{hit['covered_by']}" in text_of(found)
    # The summary sits where the text says, and reading there shows it.
    read = _call(live, "read_messages", {"session": "chat-1", "around": hit["covered_by"]})
    kinds = {r["position"]: r["kind"] for r in read.structured_content["rows"]}
    assert kinds[hit["covered_by"]] in ("summary", "archived")


def test_compress_while_one_runs_is_refused_as_the_api_refuses_it(service):
    live, session_id, _ = service
    hold = (
        "from datetime import timedelta; from django.utils import timezone; "
        "from sessions_app.models import Session; "
        f"Session.objects.filter(pk='{session_id}').update(compressing_until=%s)"
    )
    python("manage.py", "shell", "-c", hold % "timezone.now() + timedelta(minutes=5)", env=live.env)
    try:
        refused = _call(live, "compress", {"session": "chat-1"})
        assert refused.is_error and "already running" in text_of(refused), text_of(refused)
        api = live.post(f"/sessions/{session_id}/compress", {})
        assert api[0] == 409 and api[1]["detail"] in text_of(refused)
    finally:
        python("manage.py", "shell", "-c", hold % "None", env=live.env)


def test_two_channels_keys_see_nothing_of_each_other(service):
    live, session_id, _ = service
    other = _key(live.env, "other-team")
    found = _call(live, "search", {"query": "zebra-42"}, key=other)
    assert not found.is_error and found.structured_content["hits"] == []
    listed = _call(live, "list_sessions", {}, key=other)
    assert listed.structured_content["sessions"] == []
    for ref in (session_id, "chat-1"):
        refused = _call(live, "read_messages", {"session": ref, "around": 0}, key=other)
        assert refused.is_error and "no session" in text_of(refused).lower(), text_of(refused)


@pytest.mark.parametrize(
    "name, arguments, says",
    [
        ("search", {"query": "x", "limit": 500}, "limit"),
        ("search", {"query": ""}, "query"),
        ("search", {"query": 42}, "query"),
        (
            "search",
            {"query": "x", "since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
            "since",
        ),
        ("search", {"query": " ".join(f"w{n}" for n in range(40))}, "32"),
        ("read_messages", {"session": "chat-1"}, "around"),
        ("read_messages", {"session": "chat-1", "start": 5, "end": 2}, "end"),
        ("pin", {"session": "chat-1", "position": 99999}, "no message"),
        ("memory_write", {"label": "has space", "text": "x"}, "label"),
        ("memory_write", {"label": "ok", "text": "a\x00b"}, "NUL"),
        ("compress", {"session": "chat-1", "wait_seconds": -1}, "wait_seconds"),
    ],
)
def test_bad_arguments_answer_a_tool_error_a_person_can_act_on(service, name, arguments, says):
    live, _, _ = service
    result = _call(live, name, arguments)
    assert result.is_error
    text = text_of(result)
    assert says.lower() in text.lower(), text
    assert "Traceback" not in text and "errors.pydantic.dev" not in text


def test_a_thousand_character_chinese_query_works(service):
    live, _, _ = service
    query = ("斑马表迁移计划" * 143)[:1000]
    result = _call(live, "search", {"query": query})
    assert not result.is_error, text_of(result)


def test_scopes_hold_a_read_key_can_search_but_not_write_memory_or_compress(service):
    live, _, _ = service
    reader = _key(live.env, "mcp", "--new-key", "--scopes", "read")
    assert not _call(live, "search", {"query": "zebra"}, key=reader).is_error
    for name, arguments in (
        ("memory_write", {"label": "x", "text": "y"}),
        ("compress", {"session": "chat-1"}),
    ):
        refused = _call(live, name, arguments, key=reader)
        assert refused.is_error and "scope" in text_of(refused), text_of(refused)


def _post_mcp(live: LiveService, key: str | None, body: Any, method: str = "POST"):
    request = urllib.request.Request(  # noqa: S310 - loopback
        live.url + "/mcp",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        | ({"Authorization": f"Bearer {key}"} if key else {}),
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_a_missing_revoked_or_expired_key_is_refused_before_any_tool_runs(service):
    live, _, _ = service
    doomed = _key(live.env, "mcp", "--new-key", "--label", "doomed")
    assert not _call(live, "list_sessions", {}, key=doomed).is_error
    python(
        "manage.py",
        "shell",
        "-c",
        "from sessions_app.keys import authenticate_key, revoke_key; "
        f"revoke_key(authenticate_key('{doomed}'))",
        env=live.env,
    )
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for key, says in ((doomed, "revoked"), (None, "Missing"), ("hm_nonsense", "Unknown")):
        status, headers, body = _post_mcp(live, key, ping)
        assert status == 401, body
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert says in json.loads(body)["error"]["message"]
    # The SDK's client gives up, with the server's own words.
    with pytest.raises(ExceptionGroup) as raised:
        _call(live, "list_sessions", {}, key=doomed)
    assert "Unknown or revoked channel key" in repr(raised.value)


def test_the_endpoint_answers_other_methods_and_bad_bodies_as_json(service):
    live, _, _ = service
    status, headers, body = _post_mcp(live, live.key, None, method="GET")
    assert status == 405 and headers["Allow"] == "POST" and json.loads(body)["error"]
    status, _, body = _post_mcp(live, live.key, "not a json-rpc message")
    assert 400 <= status < 500 and b"Traceback" not in body
    # A body declared over server.max_request_bytes (16 MiB by default) is refused before it
    # is read: 413, in the protocol's words.
    connection = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
    connection.putrequest("POST", "/mcp")
    for name, value in (
        ("Authorization", f"Bearer {live.key}"),
        ("Content-Type", "application/json"),
        ("Content-Length", str(17 * 1024 * 1024)),
    ):
        connection.putheader(name, value)
    connection.endheaders(b'{"jsonrpc": "2.0"')
    answer = connection.getresponse()
    said = json.loads(answer.read())
    connection.close()
    assert answer.status == 413 and "server.max_request_bytes" in said["error"]["message"]
    # The JSON API is unchanged beside it.
    assert call("GET", live.api + "/sessions", live.key)[0] == 200


def test_over_stdio_an_agent_on_the_same_machine_searches_with_its_key(service):
    live, _, _ = service

    async def script(client):
        tools = (await client.list_tools()).tools
        found = await client.call_tool("search", {"query": "zebra-42"})
        bad = await client.call_tool("search", {"query": "x", "limit": 0})
        return tools, found, bad

    tools, found, bad = drive(over_stdio(live.env, live.key), script)
    assert {tool.name for tool in tools} == TOOLS
    assert found.structured_content["hits"], text_of(found)
    assert bad.is_error and "limit" in text_of(bad)


def test_stdio_refuses_to_start_without_a_working_key(service, tmp_path):
    live, _, _ = service
    import subprocess
    import sys

    from tests.processes import ROOT

    done = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--key-env", "NO_SUCH_VAR"],
        cwd=ROOT,
        env=live.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "$NO_SUCH_VAR: Missing channel key" in done.stderr
    assert "Traceback" not in done.stderr


RECORDED = ROOT / "tests" / "data" / "hermes_mcp" / "chat_turn.jsonl"


def test_what_the_real_hermes_client_sent_is_answered_as_it_was(service):
    """Hermes Agent 0.19.0's MCP client, as recorded in a real turn (tests/test_hermes_mcp.py):
    its probes, its handshake, tools/list and the search call, replayed with this channel's key;
    each gets the status Hermes got, and the search finds the fact."""
    live, _, _ = service
    recorded = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
    assert any((e["body"] or {}).get("method") == "tools/call" for e in recorded)
    for exchange in recorded:
        headers = {k: v for k, v in exchange["headers"].items() if k != "authorization"}
        if "authorization" in exchange["headers"]:
            headers["Authorization"] = f"Bearer {live.key}"
        body = json.dumps(exchange["body"]).encode() if exchange["body"] is not None else None
        request = urllib.request.Request(  # noqa: S310 - loopback
            live.url + exchange["path"], data=body, method=exchange["method"], headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                status, answer = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, answer = error.code, error.read()
        assert status == exchange["status"], (exchange, answer[:300])
        if (exchange["body"] or {}).get("method") == "tools/call":
            result = json.loads(answer)["result"]
            assert not result.get("isError") and "kv/zebra-42" in result["content"][0]["text"]
