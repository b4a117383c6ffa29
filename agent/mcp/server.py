"""The MCP server: the SDK's ``MCPServer`` with the tools, and the two things it does not do
for a Django service -- run each tool with Django's database rules, and word every refusal as
the JSON API would, never as a traceback."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from agent.mcp import tools
from agent.mcp.caller import Caller
from core.errors import report
from sessions_app.services import ServiceError

INSTRUCTIONS = (
    "Hermes Memory keeps every message of this channel's agent conversations, including the "
    "originals that compression replaced with summaries. Use `search` to find what was said "
    "(a hit under a summary names the summary's position), `read_messages` to read the "
    "originals around a position, and the memory tools for what every request should carry."
)


def _in_django(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool body runs in one of the SDK's worker threads: give back its database connection
    as a request would, and turn the store's refusals into the tool's."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except ServiceError as exc:
            raise ToolError(exc.message) from None
        except DatabaseError as exc:
            message = report(exc, f"the MCP tool {fn.__name__}")
            raise ToolError(f"the store failed ({message}); try again shortly") from None
        finally:
            close_old_connections()

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
