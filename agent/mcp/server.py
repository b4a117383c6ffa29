"""The MCP server: the SDK's ``MCPServer`` with the tools, and the two things it does not do
for a Django service -- run each tool with Django's database rules, and word every refusal as
the JSON API would, never as a traceback."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import DatabaseError, connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from agent.mcp import tools
from agent.mcp.caller import Caller
from core.config import get_config
from core.errors import report
from sessions_app.services import ServiceError

INSTRUCTIONS = (
    "Hermes Memory keeps every message of this channel's agent conversations, including the "
    "originals that compression replaced with summaries. Use `search` to find what was said "
    "(a hit under a summary names the summary's position), `read_messages` to read the "
    "originals around a position, and the memory tools for what every request should carry."
)


# Tool bodies run on these threads of the process, each keeping its database connection (as a
# persistent connection would be), where a thread per call would open one per call. As many
# as the web server gives a process threads (server.web_threads), so a compress waiting for its
# result holds one of them, not every MCP call of the process; over stdio, a few.
_DATABASE = ThreadPoolExecutor(
    max_workers=max(2, get_config().server.web_threads), thread_name_prefix="mcp-db"
)


def _fresh_connections() -> None:
    """What Django does around a request, without its ``CONN_MAX_AGE`` (0 here: close at the
    end): a connection left broken by an error is dropped; a good one is kept."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and (
            connection.errors_occurred or connection.needs_rollback
        ):
            if not connection.is_usable():
                connection.close()
            connection.errors_occurred = False


def _in_django(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool body, run on the database thread, its refusals turned into the tool's."""

    def call(*args: Any, **kwargs: Any) -> Any:
        _fresh_connections()
        try:
            return fn(*args, **kwargs)
        except ServiceError as exc:
            raise ToolError(exc.message) from None
        except DatabaseError as exc:
            message = report(exc, f"the MCP tool {fn.__name__}")
            raise ToolError(f"the store failed ({message}); try again shortly") from None

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_DATABASE, functools.partial(call, *args, **kwargs))

    return run


class HermesMCP(MCPServer):
    def tool(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        register = super().tool(*args, **kwargs)
        return lambda fn: register(_in_django(fn))

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(tools.readable(exc.__cause__)) from None
            raise


def build(caller_of: Callable[[Any], Caller]) -> HermesMCP:
    server = HermesMCP(
        name="hermes-memory",
        title="Hermes Memory",
        instructions=INSTRUCTIONS,
        version="1",
        log_level="WARNING",
    )
    tools.register(server, caller_of)
    logging.getLogger("mcp").setLevel(logging.WARNING)
    return server
