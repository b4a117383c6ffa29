"""Memory for any agent over MCP: recall, memory blocks, pins and compression as tools, built
with the official ``mcp`` SDK (``MCPServer``) and served two ways -- streamable HTTP at ``/mcp``
on the service's own port (``http``), and stdio (``manage.py mcp``).

It stands where the agent stands: above the store, the engine and recall, calling their
services and selectors as the JSON API does, with the same channel keys and scopes."""
