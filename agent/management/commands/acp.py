"""``manage.py acp``: serve the Agent Client Protocol over stdio (see agent.acp).

An editor starts it as its agent, for example in Zed's settings::

    "agent_servers": {"Hermes Memory": {"command": "/srv/hermes/.venv/bin/python",
                                        "args": ["/srv/hermes/manage.py", "acp"]}}
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import cast

from django.core.management.base import BaseCommand, CommandError

from core.config import get_config

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant working with the user in their editor."


async def _protocol_streams() -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    """stdout carries protocol JSON only: keep a private copy of it for the protocol and point
    file descriptor 1 (and ``sys.stdout``) at stderr, so no print or log line can corrupt it."""
    loop = asyncio.get_running_loop()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, protocol_out
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return writer, reader


class _SeenCancelRequest(logging.Filter):
    """Drops the SDK's complaint that nothing handles ``$/cancel_request`` (``agent.observe``
    does): any record that names the method, whatever the SDK's wording of the day."""

    def filter(self, record: logging.LogRecord) -> bool:
        from agent.acp import CANCEL_REQUEST  # imported by then: the SDK is there

        try:
            said = record.getMessage()
        except Exception:  # a record that cannot be formatted is not ours to judge
            return True
        return CANCEL_REQUEST not in said


class Command(BaseCommand):
    help = "Serve the Agent Client Protocol over stdio, for editors (Zed and others)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--channel", default="acp", help="channel the sessions belong to (created if missing)"
        )
        parser.add_argument("--model", help="chat model for new sessions (default: model.default)")
        parser.add_argument("--system-prompt", default=DEFAULT_SYSTEM_PROMPT)

    def handle(self, *args, channel: str, model: str | None, system_prompt: str, **options):
        from acp import run_agent

        from agent.acp import HermesAcpAgent
        from sessions_app.models import Channel, Session
        from sessions_app.services import InvalidInput
        from sessions_app.services.validation import check_text, validate_message

        # Both are CharFields: their max_length is set.
        channel, limit = channel.strip(), cast(int, Channel._meta.get_field("name").max_length)
        if not channel or len(channel) > limit:
            raise CommandError(f"--channel needs a name (at most {limit} characters).")

        model = model or get_config().model.default or "gpt-4o"
        limit = cast(int, Session._meta.get_field("model").max_length)
        try:
            check_text({"model": model, "system_prompt": system_prompt}, "arguments")
            validate_message({"role": "system", "content": system_prompt})
            if not model.strip() or len(model) > limit:
                raise InvalidInput(f"--model needs a model name (at most {limit} characters).")
        except InvalidInput as exc:  # refused here, not on every session/new of the editor
            raise CommandError(exc.message) from None

        chosen, _ = Channel.objects.get_or_create(
            name=channel, defaults={"description": "Editors speaking the Agent Client Protocol"}
        )
        agent = HermesAcpAgent(chosen, model, system_prompt)

        async def serve() -> None:
            writer, reader = await _protocol_streams()
            # acp's naming: input_stream is what the agent writes, output_stream what it reads.
            # The agent has part of acp's Agent protocol: the SDK looks each method up by name
            # and answers "method not found" for one it lacks.
            await run_agent(
                agent,  # type: ignore[arg-type]
                input_stream=writer,
                output_stream=reader,
                observers=[agent.observe],
            )

        # The SDK answers $/cancel_request (handled by agent.observe) as an unknown method and
        # logs that with a traceback; the editor's log needs neither.
        logging.getLogger().addFilter(_SeenCancelRequest())

        asyncio.run(serve())
