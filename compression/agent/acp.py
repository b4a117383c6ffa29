"""The Agent Client Protocol adapter (SPEC T6): editors that speak ACP (Zed and others) talk to
this service over stdio as they would to a coding agent. ``manage.py acp`` runs it.

* ``session/new`` opens a session in the adapter's channel (the ACP session id is ours);
* ``session/prompt`` runs the same turn service as ``POST /api/v1/sessions/{id}/turn`` (hygiene,
  preflight, the model call, the reply stored, the post-call check) and streams the reply back
  as an agent message;
* ``/compress [focus]`` is advertised as a slash command and compresses the session now
  (trigger ``manual_acp``, ignoring cooldown and anti-thrash), answering with what it did;
* ``session/cancel`` is honoured at the end of the turn: the model call already in flight is not
  interrupted (its reply is stored like any other), but the prompt answers ``cancelled``.

The Django ORM is synchronous: each turn runs in a worker thread, closing its database
connection when done, so the event loop keeps answering (cancel, further sessions).
"""

from __future__ import annotations

import asyncio
import logging
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
from acp.helpers import update_available_commands
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    Implementation,
    TextContentBlock,
    UnstructuredCommandInput,
)
from django.db import close_old_connections, connections

from compression.agent.turn import COMMAND, ChatFailed, ChatUnavailable, run_turn
from compression.models import CompressionEvent
from sessions_app.models import Channel, Session
from sessions_app.services import ServiceError, open_session

logger = logging.getLogger(__name__)

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
        # One prompt at a time per session (turns must not interleave), each with its own
        # cancel flag.
        self._locks: dict[str, asyncio.Lock] = {}
        self._cancelled: dict[str, asyncio.Event] = {}

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
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock)).strip()
        if not text:
            raise RequestError.invalid_params({"prompt": "send at least one text block"})
        try:
            UUID(session_id)
        except (TypeError, ValueError):
            raise RequestError.resource_not_found(session_id) from None
        async with self._locks.setdefault(session_id, asyncio.Lock()):
            cancelled = self._cancelled[session_id] = asyncio.Event()
            return await self._turn(session_id, text, cancelled)

    async def _turn(self, session_id: str, text: str, cancelled: asyncio.Event) -> PromptResponse:
        def turn() -> str:
            session = Session.objects.filter(pk=session_id, channel=self.channel).first()
            if session is None:
                raise RequestError.resource_not_found(session_id)
            result = run_turn(session, text, command_trigger=CompressionEvent.Trigger.MANUAL_ACP)
            if result.command is not None:  # the message was /compress [focus]
                return describe_compression(result.command)
            return (result.reply.content or "") if result.reply else ""

        try:
            reply = await _in_thread(turn)
        except (ChatUnavailable, ChatFailed) as exc:
            raise RequestError.internal_error({"detail": exc.message}) from None
        except ServiceError as exc:
            raise RequestError.invalid_params({"detail": exc.message}) from None
        if cancelled.is_set():
            return PromptResponse(stop_reason="cancelled")
        await self._conn.session_update(
            session_id=session_id, update=update_agent_message(text_block(reply))
        )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        event = self._cancelled.get(session_id)
        if event is not None:
            event.set()
