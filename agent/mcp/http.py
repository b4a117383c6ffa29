"""``/mcp``: the SDK's streamable-HTTP transport, on the port the service already serves.

The service is WSGI (granian's or gunicorn's threads); the SDK's transport is ASGI. Each
process runs the SDK's app on an event loop of its own thread, started on its first MCP
request (after the web server's fork), with its session manager's lifespan entered once;
a2wsgi carries each request across. The transport is stateless and answers JSON: any worker
process can answer any request, as for the JSON API, and nothing is kept between requests but
the key.

The Django view in front authenticates the channel key first (so a missing, revoked or
expired key is a 401 before any MCP is spoken), reads the body under the API's size limit,
and is behind the same middleware as every request: host check, request id, metrics, logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import threading
from typing import Any, cast

from a2wsgi import ASGIMiddleware
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.transport_security import TransportSecuritySettings

from agent.mcp.caller import ENVIRON_KEY, Caller, Refused, caller_for
from agent.mcp.server import build
from core.errors import report

PATH = "/mcp"
STARTUP_SECONDS = 30


def _caller_of(ctx: Any) -> Caller:
    return ctx.request_context.request.scope["wsgi_environ"][ENVIRON_KEY]


class _Served:
    """The SDK's app, running, in this process."""

    def __init__(self) -> None:
        server = build(_caller_of)
        app = server.streamable_http_app(
            streamable_http_path=PATH,
            json_response=True,
            stateless_http=True,
            max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
            # Django has checked the Host header (ALLOWED_HOSTS) before this runs; and a
            # channel key, not a cookie, is what opens anything, so a page a browser was
            # rebound to cannot call with the user's credentials.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mcp", daemon=True).start()
        ready = threading.Event()

        async def hold() -> None:
            async with app.router.lifespan_context(app):
                ready.set()
                await asyncio.Event().wait()  # the process's lifetime

        self._holding = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        if not ready.wait(STARTUP_SECONDS):
            raise RuntimeError("the MCP transport did not start")
        self.wsgi = ASGIMiddleware(cast(Any, app), loop=self.loop)


_served: _Served | None = None
_lock = threading.Lock()


def _app() -> _Served:
    global _served
    with _lock:
        if _served is None:
            _served = _Served()
        return _served


def _rpc_error(status: int, message: str, code: int = -32600) -> HttpResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return HttpResponse(
        json.dumps(body, ensure_ascii=False), status=status, content_type="application/json"
    )


def _bearer(request: HttpRequest) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


@csrf_exempt
def endpoint(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        # Stateless: no server-initiated stream to GET, no session to DELETE.
        response = _rpc_error(405, "This MCP endpoint takes POST (stateless, JSON answers).")
        response["Allow"] = "POST"
        return response
    try:
        caller = caller_for(_bearer(request))
    except Refused as exc:
        response = _rpc_error(401, str(exc))
        response["WWW-Authenticate"] = 'Bearer realm="hermes"'
        return response
    try:
        body = request.body
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _rpc_error(
            413, f"The request body is over {limit:,} bytes (server.max_request_bytes)."
        )
    environ: Any = {
        **request.META,  # a WSGI request's META is its environ
        "PATH_INFO": PATH,
        "SCRIPT_NAME": "",
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        ENVIRON_KEY: caller,
    }
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started["status"], started["headers"] = status, headers
        return lambda data: None

    try:
        chunks = _app().wsgi(environ, start_response)
        try:
            content = b"".join(chunks)
        finally:
            with contextlib.suppress(Exception):
                chunks.close()  # type: ignore[attr-defined]
    except Exception as exc:  # the transport itself failed (tools' errors are answered inside)
        message = report(exc, f"POST {PATH}")
        return _rpc_error(503, message, code=-32603)
    response = HttpResponse(content, status=int(started["status"].split()[0]))
    for name, value in started["headers"]:
        if name.lower() not in ("content-length", "connection"):
            response[name] = value
    return response
