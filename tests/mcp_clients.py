"""The official MCP Python SDK's client, driven as an agent drives it: over streamable HTTP
with a channel key in the ``Authorization`` header, or over stdio with ``manage.py mcp``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.processes import ROOT

T = TypeVar("T")


def over_http(url: str, key: str | None, mode: str = "auto") -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


def over_stdio(env: dict[str, str], key: str, mode: str = "auto") -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "manage.py"), "mcp", "--key-env", "TEST_MCP_KEY"],
        env={**env, "TEST_MCP_KEY": key},
        cwd=str(ROOT),
    )
    return Client(params, mode=mode)


def drive(client: Client, script: Callable[[Client], Awaitable[T]], timeout: float = 120) -> T:
    """Run ``script`` with the client connected, in a thread of its own (the browser tests keep
    an event loop running in this one)."""

    async def run() -> T:
        async with client:
            return await asyncio.wait_for(script(client), timeout)

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
