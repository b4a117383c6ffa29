"""``manage.py acp`` driven over stdio as an editor drives it, with the protocol's own client:
initialize, open a session, prompt turns through the turn service, ``/compress [focus]``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from compression.testing.fake_model import FakeModelServer, Reply
from tests.processes import ROOT, isolated_env, python

acp = pytest.importorskip("acp", reason="agent-client-protocol is not installed")
from acp.schema import (  # noqa: E402 - after the skip
    AgentMessageChunk,
    AvailableCommandsUpdate,
    ClientCapabilities,
    Implementation,
    ToolCallProgress,
    ToolCallStart,
)


class Editor:
    """An ACP client: records what the agent streams."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.tools: list[Any] = []
        self.commands: list[Any] = []
        self.commands_seen = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.text.append(update.content.text)
        elif isinstance(update, (ToolCallStart, ToolCallProgress)):
            self.tools.append(update)
        elif isinstance(update, AvailableCommandsUpdate):
            self.commands = update.available_commands
            self.commands_seen.set()

    async def request_permission(self, *args: Any, **kwargs: Any):
        raise acp.RequestError.method_not_found("session/request_permission")


@pytest.fixture
def models():
    with FakeModelServer() as chat, FakeModelServer() as summariser:
        chat.script.default = Reply("Here is the plan: migrate the cache, then restart nginx.")
        summariser.script.default = Reply("## Goal\nThe user is migrating a cache.")
        yield chat, summariser


def _serve(env: dict[str, str], script) -> Any:
    async def run():
        editor = Editor()
        async with acp.spawn_agent_process(
            editor,
            sys.executable,
            str(ROOT / "manage.py"),
            "acp",
            env=env,
            cwd=str(ROOT),
            transport_kwargs={"stderr": subprocess.DEVNULL},
        ) as (conn, _process):
            return await asyncio.wait_for(script(conn, editor), timeout=120)

    # In a thread of its own: the browser tests' Playwright keeps an event loop running in this
    # one for the whole session, and asyncio.run refuses to nest.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()


def _search(env: dict[str, str], query: str) -> dict:
    return json.loads(python("manage.py", "search", query, "--json", env=env))


async def _prompt(conn, editor: Editor, session_id: str, text: str) -> tuple[str, str]:
    editor.text.clear()
    response = await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
    return response.stop_reason, "".join(editor.text)


@pytest.mark.slow
def test_an_editor_opens_a_session_takes_turns_and_compresses_with_a_focus(tmp_path, models):
    chat, summariser = models
    sections = (
        f"model:\n  default: gpt-4o\n  base_url: {chat.base_url}\n"
        "auxiliary:\n  compression:\n    model: fake-summary\n"
        f"    base_url: {summariser.base_url}\n"
        "compression:\n  protect_first_n: 1\n  protect_last_n: 4\n"
    )

    async def script(conn, editor: Editor):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="test-editor", version="1"),
        )
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await asyncio.wait_for(editor.commands_seen.wait(), 10)
        turns = [
            await _prompt(conn, editor, session.session_id, f"Step {n}: 缓存迁移 item-{n}")
            for n in range(6)
        ]
        compressed = await _prompt(conn, editor, session.session_id, "/compress the cache")
        return init, session, editor.commands, turns, compressed

    with isolated_env(tmp_path, sections=sections) as env:
        init, session, commands, turns, compressed = _serve(env, script)
        found = _search(env, "item-2")

    assert init.protocol_version == acp.PROTOCOL_VERSION
    assert init.agent_info.name == "hermes-memory"
    assert [c.name for c in commands] == ["compress"]
    assert commands[0].input.root.hint == "optional focus topic"
    assert turns[0] == ("end_turn", "Here is the plan: migrate the cache, then restart nginx.")
    assert len(chat.requests) == 6
    # the turn service sent the whole live context: system prompt + every turn so far
    last = chat.requests[-1].body["messages"]
    assert last[0]["role"] == "system" and last[-1]["content"] == "Step 5: 缓存迁移 item-5"
    stop, text = compressed
    assert stop == "end_turn" and text.startswith("Compressed:")
    assert "archived (still searchable)" in text
    focus = summariser.requests[-1].body["messages"][-1]["content"]
    assert "Focus: keep the most detail about: the cache" in focus
    # the session is ours: its originals are archived and found by search, trigger named
    kinds = {hit["message"]["kind"] for hit in found["hits"]}
    assert "archived" in kinds
    assert found["hits"][0]["session"]["id"] == session.session_id


@pytest.mark.slow
def test_a_prompt_without_a_chat_model_is_an_error_the_editor_can_show(tmp_path):
    async def script(conn, editor: Editor):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(acp.RequestError) as error:
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
        unknown = None
        try:
            await conn.prompt(session_id="no-such-session", prompt=[acp.text_block("hi")])
        except acp.RequestError as exc:
            unknown = exc
        return error.value, unknown

    with isolated_env(tmp_path) as env:
        missing_model, unknown = _serve(env, script)
    assert "No chat model is configured" in json.dumps(missing_model.data)
    assert unknown is not None


@pytest.mark.slow
def test_cancel_answers_cancelled_and_prompts_of_a_session_take_turns(tmp_path):
    with FakeModelServer() as chat:
        chat.script.default = Reply("Slow answer.", delay=1.0)
        sections = f"model:\n  default: gpt-4o\n  base_url: {chat.base_url}\n"

        async def script(conn, editor: Editor):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = session.session_id
            first = asyncio.create_task(conn.prompt(session_id=sid, prompt=[acp.text_block("one")]))
            await asyncio.sleep(0.3)
            second = asyncio.create_task(
                conn.prompt(session_id=sid, prompt=[acp.text_block("two")])
            )
            await asyncio.sleep(0.1)
            await conn.cancel(session_id=sid)  # the running prompt: the first
            return (await first).stop_reason, (await second).stop_reason, editor.text

        with isolated_env(tmp_path, sections=sections) as env:
            first, second, text = _serve(env, script)
    assert (first, second) == ("cancelled", "end_turn")
    # only the second prompt's reply reached the editor, streamed in the model's pieces
    assert len(text) > 1 and "".join(text) == "Slow answer."
    # the turns did not interleave: the second call came after the first turn had stopped, and
    # the first's cut-off reply is not in the live context (it is kept rolled back)
    assert len(chat.requests) == 2
    sent = [m["content"] for m in chat.requests[-1].body["messages"] if m["role"] == "user"]
    assert sent == ["one", "two"]
    assert [m["role"] for m in chat.requests[-1].body["messages"]] == ["system", "user", "user"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--channel", "  "], "--channel needs a name"),
        (["--model", "m" * 500], "--model needs a model name"),
        (["--model", "  "], "--model needs a model name"),
        (["--system-prompt", b"not utf-8 \xff"], "invalid Unicode"),  # bytes as a shell passes
    ],
)
@pytest.mark.slow
def test_bad_arguments_are_refused_before_serving(tmp_path, args, message):
    with isolated_env(tmp_path) as env:
        result = subprocess.run(
            [sys.executable, "manage.py", "acp", *args],  # str or bytes
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode != 0 and message in result.stderr, result.stderr[-500:]
    assert "Traceback" not in result.stderr
    assert result.stdout == "", "nothing but protocol JSON may reach stdout"


@pytest.mark.slow
def test_the_editor_sees_each_search_the_model_makes_and_what_it_found(tmp_path, models):
    chat, _ = models
    call = {
        "id": "call_locker",
        "type": "function",
        "function": {"name": "session_search", "arguments": '{"query": "locker code"}'},
    }
    chat.then(Reply("Noted: 5521."), Reply(None, tool_calls=[call]), Reply("It is 5521."))
    sections = f"model:\n  default: gpt-4o\n  base_url: {chat.base_url}\n"

    async def script(conn, editor: Editor):
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="test-editor", version="1"),
        )
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await _prompt(conn, editor, session.session_id, "the locker code is 5521")
        answer = await _prompt(conn, editor, session.session_id, "what was the locker code?")
        return answer, list(editor.tools)

    with isolated_env(tmp_path, sections=sections) as env:
        answer, tools = _serve(env, script)

    assert answer == ("end_turn", "It is 5521.")
    start, done = tools
    assert isinstance(start, ToolCallStart) and isinstance(done, ToolCallProgress)
    assert start.tool_call_id == done.tool_call_id == "call_locker"
    assert start.title == "session_search: locker code" and start.kind == "search"
    assert start.raw_input == {"query": "locker code"} and start.status == "in_progress"
    assert done.status == "completed" and "5521" in done.content[0].content.text


def test_an_unexpected_error_reaches_the_editor_as_one_line_with_an_error_id(caplog):
    """Never the exception's text (it may hold a path or data): the log has the traceback."""
    from agent.acp import _DONE, HermesAcpAgent, _Turn

    async def relay():
        agent = HermesAcpAgent(None, "gpt-4o", "")
        loop = asyncio.get_running_loop()
        turn = _Turn(loop)
        work = loop.create_future()
        work.set_exception(RuntimeError("/srv/hermes/var/secret.sqlite3 is locked"))
        turn.queue.put_nowait(_DONE)
        with pytest.raises(acp.RequestError) as caught:
            await agent._relay("s1", turn, work)
        return caught.value

    with ThreadPoolExecutor(max_workers=1) as pool:
        error = pool.submit(asyncio.run, relay()).result()
    detail = json.dumps(error.data)
    assert "error id" in detail and "/srv/" not in detail and "secret" not in detail
    assert "secret.sqlite3" in caplog.text  # for the operator, in the log


def test_a_cancel_before_the_turn_begins_keeps_the_users_message_and_asks_no_model(
    db, hermes_config
):
    """A cancel a moment after the turn began keeps what the user said (the test above); one
    that came before its worker thread started must too, and no model is asked."""
    from agent.acp import HermesAcpAgent, _Turn
    from compression.models import CompressionEvent
    from sessions_app.keys import create_channel
    from sessions_app.models import Message
    from sessions_app.services import open_session

    with FakeModelServer() as chat:
        hermes_config(model={"default": "gpt-4o", "base_url": chat.base_url})
        channel = create_channel("acp-early-cancel")[0]
        session = open_session(channel, model="gpt-4o").session
        agent = HermesAcpAgent(channel, "gpt-4o", "")
        loop = asyncio.new_event_loop()
        try:
            for text in ("keep what I said", "/compress"):
                turn = _Turn(loop)
                turn.stop.set()  # session/cancel arrived first
                assert agent._run(str(session.pk), text, turn) == ""
        finally:
            loop.close()
        assert chat.requests == []
    rows = Message.objects.filter(session=session).values_list("role", "content", "active")
    assert list(rows) == [("user", "keep what I said", True)]
    assert not CompressionEvent.objects.filter(session=session).exists()


@pytest.mark.parametrize(
    ("message", "args", "dropped"),
    [
        ("Unhandled error while handling notification method=%s", ("$/cancel_request",), True),
        ("no handler for %r", ("$/cancel_request",), True),  # another wording, same method
        ("Unhandled error while handling notification method=%s", ("session/cancel",), False),
        ("Receive loop failed", (), False),
        ("%d%%", ("not a number",), False),  # cannot be formatted: kept, not judged
    ],
)
def test_only_the_sdks_complaint_about_cancel_request_is_kept_out_of_the_log(
    message, args, dropped
):
    import logging

    from agent.management.commands.acp import _SeenCancelRequest

    record = logging.LogRecord("root", logging.ERROR, __file__, 1, message, args, None)
    assert _SeenCancelRequest().filter(record) is not dropped
