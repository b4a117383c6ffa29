"""``manage.py acp`` driven by the official ACP client -- the protocol's TypeScript SDK, pinned in
tests/peers (installed by bin/peers) -- as an editor drives it: initialise, open a session, plain
prompts streamed back, ``/compress <focus>``, a prompt cancelled mid-reply, and the session
still usable and consistent afterwards. tests/test_acp.py drives it with the Python SDK; this
one catches where our framing differs from what the reference client expects."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compression.testing.fake_model import FakeModelServer, Reply
from tests.processes import ROOT, isolated_env, python

PEERS = ROOT / "tests" / "peers"
CLIENT = PEERS / "acp_client.mjs"
SDK = PEERS / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
NODE = shutil.which("node")

needs_client = pytest.mark.skipif(
    NODE is None or not SDK.exists(),
    reason="the ACP SDK client is not installed: run bin/peers (needs Node.js and npm)",
)

REPLY = "First, back up the cache. Then migrate it, and restart nginx when done."
SLOW = "This answer streams slowly, word by word, and will be cut off by the editor."
SUMMARY = "## Goal\nThe user is migrating a cache; steps agreed so far are kept here."


def run_client(env: dict[str, str], cwd: Path, prompts: list[dict]) -> list[dict]:
    """Run the Node client against ``manage.py acp``; the records it printed, in order."""
    scenario = {"cwd": str(cwd), "prompts": prompts}
    result = subprocess.run(
        [NODE, str(CLIENT), sys.executable, str(ROOT / "manage.py"), "acp"],
        cwd=ROOT,
        env={**env, "ACP_SCENARIO": json.dumps(scenario)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    records = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert result.returncode == 0 and records and records[-1]["kind"] == "done", (
        result.stdout[-2000:] + result.stderr[-3000:]
    )
    errors = [r for r in records if r["kind"] == "error"]
    assert not errors, (errors, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]  # the editor's agent log
    return records


def of_prompt(records: list[dict], index: int, kind: str) -> list[dict]:
    return [r for r in records if r["kind"] == kind and r.get("prompt") == index]


def chunks(records: list[dict], index: int) -> list[str]:
    """The text of each agent_message_chunk the editor saw while prompt ``index`` ran."""
    texts = []
    for record in of_prompt(records, index, "update"):
        update = record["notification"]["update"]
        if update["sessionUpdate"] == "agent_message_chunk":
            assert update["content"]["type"] == "text"
            texts.append(update["content"]["text"])
    return texts


def stop_reason(records: list[dict], index: int) -> str:
    (stop,) = of_prompt(records, index, "stop")
    return stop["stopReason"]


SESSION_ROWS = """
import django, json; django.setup()
from sessions_app.models import Message
rows = Message.objects.filter(session_id="{sid}").order_by("position")
print(json.dumps([[r.role, r.content, r.kind] for r in rows]))
"""


def session_rows(env: dict[str, str], sid: str) -> list[list[str]]:
    """Every stored row of the session: [role, content, kind], in order."""
    return json.loads(python("-c", SESSION_ROWS.format(sid=sid), env=env))


@pytest.fixture
def models():
    with FakeModelServer() as chat, FakeModelServer() as summariser:
        chat.script.default = Reply(REPLY, chunks=6, chunk_delay=0.05)
        summariser.script.default = Reply(SUMMARY)
        yield chat, summariser


def _sections(chat: FakeModelServer, summariser: FakeModelServer) -> str:
    return (
        f"model:\n  default: gpt-4o\n  base_url: {chat.base_url}\n"
        "auxiliary:\n  compression:\n    model: fake-summary\n"
        f"    base_url: {summariser.base_url}\n"
        "compression:\n  protect_first_n: 1\n  protect_last_n: 2\n"
    )


@pytest.mark.peer
@needs_client
def test_the_official_client_initialises_streams_a_reply_and_compresses_with_a_focus(
    tmp_path, models
):
    chat, summariser = models
    detail = " ".join(["The cache holds session data for the billing service."] * 4)
    prompts = [{"text": f"Step {n}: how do I migrate cache item-{n}? {detail}"} for n in range(4)]
    prompts.append({"text": "/compress the cache migration"})
    with isolated_env(tmp_path, sections=_sections(chat, summariser)) as env:
        records = run_client(env, tmp_path, prompts)
        sid = records[1]["response"]["sessionId"]
        rows = session_rows(env, sid)

    init = records[0]
    assert init["kind"] == "initialize"
    assert init["response"]["protocolVersion"] == 1
    assert init["response"]["agentCapabilities"]["loadSession"] is False
    assert init["response"]["agentInfo"]["name"] == "hermes-memory"
    assert records[1]["kind"] == "session" and sid

    # the /compress command is advertised to the editor, with its input hint
    advertised = [
        r["notification"]["update"]
        for r in records
        if r["kind"] == "update"
        and r["notification"]["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert advertised and all(
        r["notification"]["sessionId"] == sid for r in records[2:-1] if r["kind"] == "update"
    )
    (command,) = advertised[-1]["availableCommands"]
    assert command["name"] == "compress" and command["input"]["hint"] == "optional focus topic"

    # each plain prompt: the reply arrives streamed, in the model's pieces, then end_turn
    for index in range(4):
        pieces = chunks(records, index)
        assert "".join(pieces) == REPLY
        assert len(pieces) > 1, "the reply came as one block, not streamed"
        assert stop_reason(records, index) == "end_turn"
    # the turn service sent the live context: the system prompt, then every turn so far
    sent = chat.requests[3].body
    assert sent["stream"] is True
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][-1]["content"] == prompts[3]["text"]

    # /compress <focus>: no model turn, one message saying what happened, end_turn
    assert len(chat.requests) == 4
    (said,) = chunks(records, 4)
    assert said.startswith("Compressed:") and "archived (still searchable)" in said
    assert stop_reason(records, 4) == "end_turn"
    focus = summariser.requests[-1].body["messages"][-1]["content"]
    assert "Focus: keep the most detail about: the cache migration" in focus
    kinds = [kind for _, _, kind in rows]
    assert "archived" in kinds and "summary" in kinds
    assert ["user", prompts[1]["text"], "archived"] in rows


@pytest.mark.peer
@needs_client
def test_a_resource_link_in_a_prompt_reaches_the_model_as_a_link(tmp_path, models):
    """ACP's baseline: every agent takes text and resource_link blocks in a prompt (an editor's
    @-mention of a file). We cannot read the file (no fs capability is asked for), but the
    model is told which one the user means."""
    chat, summariser = models
    link = {"type": "resource_link", "uri": f"file://{tmp_path}/cache.py", "name": "cache.py"}
    prompts = [
        {"blocks": [{"type": "text", "text": "Why is "}, link, {"type": "text", "text": " slow?"}]},
        {"blocks": [link]},
    ]
    with isolated_env(tmp_path, sections=_sections(chat, summariser)) as env:
        records = run_client(env, tmp_path, prompts)
        sid = records[1]["response"]["sessionId"]
        rows = session_rows(env, sid)

    assert [stop_reason(records, 0), stop_reason(records, 1)] == ["end_turn", "end_turn"]
    said = f"[@cache.py](file://{tmp_path}/cache.py)"
    assert chat.requests[0].body["messages"][-1]["content"] == f"Why is {said} slow?"
    assert chat.requests[1].body["messages"][-1]["content"] == said
    assert [r[1] for r in rows if r[0] == "user"] == [f"Why is {said} slow?", said]


@pytest.mark.peer
@needs_client
@pytest.mark.parametrize(
    "how",
    [
        "session",  # session/cancel, as ACP's prompt turn defines it
        "request",  # $/cancel_request for the prompt's id: the SDK's cancellationSignal
    ],
)
def test_a_prompt_cancelled_mid_reply_stops_cancelled_and_the_session_goes_on(
    tmp_path, models, how
):
    chat, summariser = models
    chat.script.queue.append(Reply(REPLY))
    chat.script.queue.append(Reply(SLOW, chunks=12, chunk_delay=0.4))
    prompts = [
        {"text": "What is the plan?"},
        {
            "text": "Explain it at length.",
            "cancelAfterChunks": 2,
            "cancelAfterMs": 8000,
            "how": how,
        },
        {"text": "Short version, please."},
    ]
    with isolated_env(tmp_path, sections=_sections(chat, summariser)) as env:
        records = run_client(env, tmp_path, prompts)
        sid = records[1]["response"]["sessionId"]
        rows = session_rows(env, sid)

    assert stop_reason(records, 0) == "end_turn"
    (cancel,) = of_prompt(records, 1, "cancel")
    assert cancel["chunksBefore"] == 2, "the cancel was sent mid-reply, after two pieces"
    assert stop_reason(records, 1) == "cancelled"
    (stop,) = of_prompt(records, 1, "stop")
    # the agent answered the cancel promptly: well before the slow reply would have finished
    assert stop["ms"] - cancel["ms"] < 2000
    seen = "".join(chunks(records, 1))
    assert seen and SLOW.startswith(seen) and seen != SLOW

    # the session is usable after the cancel: the next prompt streams and ends normally
    assert "".join(chunks(records, 2)) == REPLY
    assert stop_reason(records, 2) == "end_turn"

    # and consistent: the cancelled prompt's message is stored, the reply cut off is kept but
    # not live (rolled back), so the next turn's context did not hold it
    live = [[role, content] for role, content, kind in rows if kind == "live"]
    assert live == [
        ["system", live[0][1]],
        ["user", "What is the plan?"],
        ["assistant", REPLY],
        ["user", "Explain it at length."],
        ["user", "Short version, please."],
        ["assistant", REPLY],
    ]
    (cut,) = [r for r in rows if r[0] == "assistant" and r[2] != "live"]
    assert cut[2] == "rolled_back" and SLOW.startswith(cut[1]) and cut[1] != SLOW
    last = [m["content"] for m in chat.requests[-1].body["messages"]]
    assert not any(SLOW[:20] in (text or "") for text in last)
    assert last[-2:] == ["Explain it at length.", "Short version, please."]


def test_the_tested_sdk_version_is_the_one_the_docs_name():
    """bin/peers installs what package-lock.json pins; docs/deployment.md must name it."""
    lock = json.loads((PEERS / "package-lock.json").read_text(encoding="utf-8"))
    version = lock["packages"]["node_modules/@agentclientprotocol/sdk"]["version"]
    docs = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert f"`@agentclientprotocol/sdk` {version}" in docs
    if SDK.exists():  # installed: the lockfile's version, not a stale one
        assert json.loads(SDK.read_text(encoding="utf-8"))["version"] == version


@pytest.mark.peer
@needs_client
def test_the_official_client_takes_a_search_the_model_made_as_a_tool_call(tmp_path, models):
    """The SDK validates every notification it receives: a tool_call and its update that it
    accepts and shows are the editor's view of the model's session_search."""
    chat, summariser = models
    call = {
        "id": "call_locker",
        "type": "function",
        "function": {"name": "session_search", "arguments": '{"query": "locker code"}'},
    }
    chat.then(Reply("Noted."), Reply(None, tool_calls=[call]), Reply("It is 5521."))
    prompts = [{"text": "the locker code is 5521"}, {"text": "what was the locker code?"}]
    with isolated_env(tmp_path, sections=_sections(chat, summariser)) as env:
        records = run_client(env, tmp_path, prompts)

    assert stop_reason(records, 1) == "end_turn" and "".join(chunks(records, 1)) == "It is 5521."
    updates = [r["notification"]["update"] for r in of_prompt(records, 1, "update")]
    start, done = [u for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert start["sessionUpdate"] == "tool_call" and start["toolCallId"] == "call_locker"
    assert start["kind"] == "search" and start["title"] == "session_search: locker code"
    assert done["sessionUpdate"] == "tool_call_update" and done["status"] == "completed"
    assert "5521" in done["content"][0]["content"]["text"]
