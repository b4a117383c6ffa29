"""The HTTP path's floor for bench/search.py: a WSGI app answering a constant, served by the same
gunicorn worker class and threads as the service, so what gunicorn and the client cost alone is
measured beside the service's answers."""

from __future__ import annotations

BODY = b'{"status": "ok"}'


def app(environ, start_response):
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
    )
    return [BODY]
