"""The service's WSGI application as granian serves it (``manage.py serve`` under
``server.web_server: granian``, the default): :func:`application` is granian's factory, called
once in each web process before it takes a request.

It does for granian what gunicorn's ``post_worker_init`` does (hermes_site.gunicorn_conf): loads
what a process's first request would wait for, and has a connection opened and warmed for each
request thread before the first request (hermes_site.warm.warm_ahead: granian's threads start
with requests, out of the application's reach).

It also reads what is left of each request body before answering (:func:`reads_whole_bodies`),
and hands the application each request's own variables, not the process environment granian
merges into them (:func:`without_process_environment`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_CHUNK = 64 * 1024


def reads_whole_bodies(app: WSGIApp, limit: int) -> WSGIApp:
    """``app``, reading the rest of a request body it answered without reading (a refused key,
    a wrong method) before the answer goes out.

    granian closes a keep-alive connection whose last request body was left unread, and now
    and then does so without saying ``Connection: close`` in the answer; a client that sends
    its next request on that connection (the MCP SDK's client does, after a 401) then sees the
    server hang up without an answer. gunicorn reads such a body itself. A body declared
    larger than ``limit`` (``server.max_request_bytes``, refused unread with a 413) is not
    read: its answer says ``Connection: close``."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]):
        declared = environ.get("CONTENT_LENGTH") or ""
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked and declared in ("", "0"):
            return app(environ, start_response)  # no body: the common GET
        too_big = declared.isdigit() and int(declared) > limit
        if too_big:

            def closing(status: str, headers: list[tuple[str, str]], *exc_info: Any) -> Any:
                return start_response(status, [*headers, ("Connection", "close")], *exc_info)

            return app(environ, closing)
        answer = app(environ, start_response)
        stream, left = environ["wsgi.input"], limit + 1
        try:
            while left > 0 and (chunk := stream.read(min(_CHUNK, left))):
                left -= len(chunk)
        except Exception:  # noqa: S110 - the client went away mid-body: granian drops
            pass  # the connection anyway, and the answer is the application's
        return answer

    return application


# What granian's scope sets on every request, whatever the environment holds: never dropped.
_SCOPE_KEYS = frozenset(
    {
        "REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "SERVER_NAME",
        "SERVER_PORT", "SERVER_PROTOCOL", "REMOTE_ADDR", "GATEWAY_INTERFACE", "SERVER_SOFTWARE",
    }
)  # fmt: skip
# Names a request may carry itself (its headers, its body's type and length): dropped only
# where the request's value is the environment's.
_HEADER_PREFIXES = ("HTTP_", "CONTENT_")


def without_process_environment(app: WSGIApp, inherited: Mapping[str, str]) -> WSGIApp:
    """``app``, handed each request's own variables without the process environment
    (``inherited``: ``os.environ`` as the process starts).

    granian merges its process's whole environment into every request's (``dict(os.environ) |
    scope``). A variable named as a header then reads as one on every request that does not
    send it: ``HTTP_PROXY`` as a ``Proxy`` header, ``HTTP_X_REQUEST_ID`` as the request id,
    ``HTTP_AUTHORIZATION`` as a key the client never presented. And ``request.META`` carries
    every variable of the server's environment, its secrets with them. gunicorn builds a
    request's variables from the request alone. A header whose value is exactly that of the
    same-named variable cannot be told from it, and is dropped with it."""
    always = tuple(
        name
        for name in inherited
        if name not in _SCOPE_KEYS
        and not name.startswith(_HEADER_PREFIXES)
        and not name.startswith("wsgi.")
    )
    alike = tuple(
        (name, value) for name, value in inherited.items() if name.startswith(_HEADER_PREFIXES)
    )

    def application(environ: dict[str, Any], start_response: Callable[..., Any]):
        for name in always:
            environ.pop(name, None)
        for name, value in alike:
            if environ.get(name) == value:
                del environ[name]
        return app(environ, start_response)

    return application


def application():
    from django.conf import settings
    from django.core.wsgi import get_wsgi_application

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
    app = get_wsgi_application()

    from core.config import get_config
    from hermes_site.warm import close_aged_after_answers, warm_ahead, warm_process

    warm_process()
    warm_ahead(get_config().server.web_threads)
    close_aged_after_answers()  # where connections are warmed (it checks), as under gunicorn
    return without_process_environment(
        reads_whole_bodies(app, settings.DATA_UPLOAD_MAX_MEMORY_SIZE), dict(os.environ)
    )
