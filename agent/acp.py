"""The Agent Client Protocol adapter (SPEC T6): editors that speak ACP (Zed and others) talk to
this service over stdio as they would to a coding agent. ``manage.py acp`` runs it.

* ``session/new`` opens a session in the adapter's channel (the ACP session id is ours);
* ``session/prompt`` runs the same turn service as ``POST /api/v1/sessions/{id}/turn`` with
  ``"stream": true`` (hygiene, preflight, the model call, the reply stored, the post-call check)
  and passes the reply on as the model writes it, one ``agent_message_chunk`` per piece; the
  prompt's text blocks and resource links (ACP's baseline) make the user's message;
* ``/compress [focus]`` is advertised as a slash command and compresses the session now
  (trigger ``manual_acp``, ignoring cooldown and anti-thrash), answering with what it did;
* ``session/cancel`` answers the running prompt ``cancelled`` at once and stops the turn at the
  model's next piece, as a streamed turn whose client went away: the user's message stays, the
  reply cut off is kept rolled back (searchable, never in the live context). A cancel that comes
  before the turn has begun keeps the user's message too, and asks no model. The session's next
  prompt waits until the turn has stopped, so turns never interleave. ``$/cancel_request`` for a
  prompt means the same.

The Django ORM is synchronous: each turn runs in a worker thread, closing its database
connection when done, so the event loop keeps answering (cancel, further sessions).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any
from uuid import UUID

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    text_block,
    update_agent_message,
)
from acp.helpers import start_tool_call, tool_content, update_available_commands, update_tool_call
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    Implementation,
    ResourceContentBlock,
    TextContentBlock,
    UnstructuredCommandInput,
)
from django.db import close_old_connections, connections

from agent.turn import (
    COMMAND,
    ChatFailed,
    ChatUnavailable,
    is_command,
    turn_steps,
)
from compression.models import CompressionEvent
from core.errors import report
from sessions_app.models import Channel, Session
from sessions_app.selectors.sessions import find_session
from sessions_app.services import ServiceError, append_messages, open_session

logger = logging.getLogger(__name__)
CANCEL_REQUEST = "$/cancel_request"

COMMANDS = [
    AvailableCommand(
        name=COMMAND.lstrip("/"),
        description="Compress this conversation now: summarise the middle, keep every original "
        "searchable",
        input=UnstructuredCommandInput(hint="optional focus topic"),
    )
]


def _in_thread(fn, *args, **kwargs):
    """Run ORM work off the event loop, with a connection of its own that is closed after."""

    def run():
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    return asyncio.to_thread(run)


def prompt_text(blocks: list) -> str:
    """The user's message: the text blocks, and each resource link (ACP's baseline, with text:
    an editor's @-mention of a file) as a Markdown link -- the file itself is not read (no
    ``fs`` capability is asked for), but the model knows which one is meant."""
    parts = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[@{block.title or block.name}]({block.uri})")
    return "".join(parts).strip()


def describe_compression(result) -> str:
    passes = result.passes
    if not passes:
        return "Nothing was compressed."
    first, last = passes[0].event, passes[-1].event
    if result.outcome in (CompressionEvent.Outcome.COMPRESSED, CompressionEvent.Outcome.FALLBACK):
        note = " (local fallback summary)" if result.outcome == "fallback" else ""
        archived = sum(p.event.rows_archived for p in passes)
        return (
            f"Compressed{note}: {archived} message(s) archived (still searchable), live context "
            f"{first.tokens_before:,} → {last.tokens_after:,} tokens."
        )
    return f"Not compressed: {last.reason or last.outcome}."


class HermesAcpAgent:
    """An ``acp.Agent``: the protocol calls these methods by name."""

    def __init__(self, channel: Channel, model: str, system_prompt: str) -> None:
        self.channel = channel
        self.model = model
        self.system_prompt = system_prompt
        self._conn: Any = None
        # One prompt at a time per session (turns must not interleave); the running one's turn.
        self._locks: dict[str, asyncio.Lock] = {}
        self._turns: dict[str, _Turn] = {}
        self._prompts: dict[Any, str] = {}  # JSON-RPC id of a session/prompt -> its session

    def observe(self, event: Any) -> None:
        """A stream observer (it sees every raw message): ACP's protocol-level
        ``$/cancel_request`` names a request id, and the SDK does not route it. For a prompt it
        is that prompt's ``session/cancel`` (the official TypeScript client sends it when a
        prompt's cancellation signal is aborted)."""
        message = event.message
        if not isinstance(message, dict):
            return
        method, params = message.get("method"), message.get("params")
        if event.direction != "incoming":
            if method is None and "id" in message:  # our answer: that request is over
                self._prompts.pop(message["id"], None)
        elif method == "session/prompt" and "id" in message and isinstance(params, dict):
            self._prompts[message["id"]] = str(params.get("sessionId"))
        elif method == CANCEL_REQUEST and isinstance(params, dict):
            session_id = self._prompts.get(params.get("requestId"))
            turn = self._turns.get(session_id) if session_id else None
            if turn is not None:
                turn.cancel()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="hermes-memory", title="Hermes Memory", version="0.1"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any):
        def create() -> Session:
            return open_session(
                self.channel,
                model=self.model,
                system_prompt=self.system_prompt,
                title=f"ACP · {cwd}"[:300],
            ).session

        try:
            session = await _in_thread(create)
        except ServiceError as exc:
            raise RequestError.invalid_params({"detail": exc.message}) from None
        session_id = str(session.pk)
        # The client learns the session id from this response; advertise commands right after.
        asyncio.get_running_loop().call_later(
            0.05, lambda: asyncio.ensure_future(self._advertise(session_id))
        )
        return NewSessionResponse(session_id=session_id)

    async def _advertise(self, session_id: str) -> None:
        await self._conn.session_update(
            session_id=session_id, update=update_available_commands(COMMANDS)
        )

    async def prompt(self, session_id: str, prompt: list, **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        if not text:
            raise RequestError.invalid_params(
                {"prompt": "send at least one text or resource_link block"}
            )
        try:
            UUID(session_id)
        except (TypeError, ValueError):
            raise RequestError.resource_not_found(session_id) from None
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        await lock.acquire()
        turn = self._turns[session_id] = _Turn(asyncio.get_running_loop())
        work = asyncio.ensure_future(_in_thread(self._run, session_id, text, turn))
        work.add_done_callback(lambda _: turn.queue.put_nowait(_DONE))
        try:
            return await self._relay(session_id, turn, work)
        finally:
            turn.stop.set()  # a no-op unless the prompt ended early (cancelled, connection gone)
            if self._turns.get(session_id) is turn:
                del self._turns[session_id]
            # The lock is held until the worker has stopped, even after a cancel was answered.
            if work.done():
                lock.release()
            else:
                work.add_done_callback(lambda done: _release_after(lock, done))

    async def _relay(self, session_id: str, turn: _Turn, work: asyncio.Future) -> PromptResponse:
        """Pass the turn's pieces on as they come; answer when it ends or is cancelled."""
        while (item := await turn.queue.get()) is not _DONE:
            if item is _CANCELLED:
                return PromptResponse(stop_reason="cancelled")
            await self._conn.session_update(session_id=session_id, update=item)
        try:
            said = work.result()
        except (ChatUnavailable, ChatFailed) as exc:
            raise RequestError.internal_error({"detail": exc.message}) from None
        except ServiceError as exc:
            raise RequestError.invalid_params({"detail": exc.message}) from None
        except RequestError:
            raise
        except Exception as exc:  # one line with an error id; the traceback goes to the log
            message = report(exc, f"an ACP prompt of session {session_id}")
            raise RequestError.internal_error({"detail": message}) from None
        if turn.stop.is_set():
            return PromptResponse(stop_reason="cancelled")
        if said:
            await self._conn.session_update(
                session_id=session_id, update=update_agent_message(text_block(said))
            )
        return PromptResponse(stop_reason="end_turn")

    def _run(self, session_id: str, text: str, turn: _Turn) -> str:
        """The turn, in the worker thread: each piece of the reply goes to ``turn`` as the model
        writes it. Returns what is left to say at the end (what ``/compress`` did; a reply that
        came whole, as the Responses API's), or "" when it was streamed or cancelled."""
        session = find_session(session_id, channel=self.channel)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        if turn.stop.is_set():
            # Cancelled before the turn began: what the user said is kept, as a cancel a moment
            # later keeps it; no model is asked, and a /compress does not run.
            if not is_command(text):
                append_messages(session, [{"role": "user", "content": text}], run_hooks=False)
            return ""
        steps = turn_steps(session, text, command_trigger=CompressionEvent.Trigger.MANUAL_ACP)
        streamed = False
        try:
            while not turn.stop.is_set():
                try:
                    event = next(steps)
                except StopIteration as done:
                    result = done.value
                    break
                if event["event"] == "delta":
                    streamed = True
                    turn.put(update_agent_message(text_block(event["content"])))
                elif event["event"] == "tool":
                    for update in tool_updates(event):
                        turn.put(update)
            else:
                return ""
        finally:
            steps.close()  # cut short: the user's message stays, a partial reply is rolled back
        if result.command is not None:  # the message was /compress [focus]
            return describe_compression(result.command)
        if streamed or result.reply is None:
            return ""
        return result.reply.content or ""

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        turn = self._turns.get(session_id)
        if turn is not None:
            turn.cancel()


def tool_updates(event: dict[str, Any]) -> list[Any]:
    """A tool the model called in the turn (``session_search``), as an editor shows one: the
    call with what it asked (a search), then its result. The turn reports a call once it has
    run, so both go out together."""
    call_id = str(event.get("id") or event.get("name") or "tool")
    try:
        asked = json.loads(event.get("arguments") or "{}")
    except (TypeError, ValueError):
        asked = event.get("arguments")
    query = asked.get("query") if isinstance(asked, dict) else None
    title = f"{event.get('name')}: {query}" if query else str(event.get("name"))
    return [
        start_tool_call(call_id, title, kind="search", status="in_progress", raw_input=asked),
        update_tool_call(
            call_id,
            status="completed",
            content=[tool_content(text_block(str(event.get("result") or "")))],
            raw_output=event.get("result"),
        ),
    ]


_DONE = object()  # the worker thread has finished (its result is on the future)
_CANCELLED = object()  # session/cancel arrived


class _Turn:
    """A running prompt: the pieces its worker thread streams, and the cancel it watches."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.stop = threading.Event()

    def put(self, item: Any) -> None:
        """From the worker thread."""
        self.loop.call_soon_threadsafe(self.queue.put_nowait, item)

    def cancel(self) -> None:
        """On the event loop."""
        self.stop.set()
        self.queue.put_nowait(_CANCELLED)


def _release_after(lock: asyncio.Lock, work: asyncio.Future) -> None:
    """A turn that went on after its prompt was answered has stopped: free the session."""
    lock.release()
    error = None if work.cancelled() else work.exception()
    if error is not None and not isinstance(
        error, (ChatFailed, ChatUnavailable, ServiceError, RequestError)
    ):
        logger.error("an ACP turn failed after its prompt was answered", exc_info=error)
