"""The service's WSGI application as granian serves it (``manage.py serve`` under
``server.web_server: granian``, the default): :func:`application` is granian's factory, called
once in each web process before it takes a request.

It does for granian what gunicorn's ``post_worker_init`` does (hermes_site.gunicorn_conf): loads
what a process's first request would wait for, and has a connection opened and warmed for each
request thread before the first request (hermes_site.warm.warm_ahead: granian's threads start
with requests, out of the application's reach).

It also reads what is left of each request body before answering (:func:`reads_whole_bodies`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
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
    return reads_whole_bodies(app, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
