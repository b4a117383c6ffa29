"""``manage.py mcp --key-env VAR``: the MCP server over stdio, for an agent on this machine.

The channel key comes from an environment variable, never an argument (arguments show in
``ps``). For example, in an MCP client's configuration::

    {"command": "/srv/hermes/.venv/bin/python",
     "args": ["/srv/hermes/manage.py", "mcp", "--key-env", "HERMES_KEY"],
     "env": {"HERMES_KEY": "hm_…"}}

The key is checked when the server starts and again on every tool call, so a key revoked or
expired while the agent runs stops working at its next call.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from mcp.server.mcpserver.exceptions import ToolError

from agent.mcp.caller import Caller, Refused, caller_for


class Command(BaseCommand):
    help = "Serve the MCP tools (search, memory, pins, compress) over stdio for one channel key."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--key-env",
            default="HERMES_MCP_KEY",
            metavar="VAR",
            help="the environment variable holding the channel key (default HERMES_MCP_KEY)",
        )

    def handle(self, *args: Any, key_env: str, **options: Any) -> None:
        from agent.mcp.server import build

        key = os.environ.get(key_env, "")
        try:
            caller_for(key)
        except Refused as exc:
            raise CommandError(f"${key_env}: {exc}") from None

        def caller_of(ctx: Any) -> Caller:
            try:
                return caller_for(key)
            except Refused as exc:
                raise ToolError(str(exc)) from None

        # Logs go to stderr, one line each; stdout is the protocol's.
        logging.getLogger("mcp").setLevel(logging.WARNING)
        build(caller_of).run("stdio")
