"""The HTTP path's floors for bench/search.py: a WSGI app answering a constant, served by the same
gunicorn worker class and threads as the service, so what gunicorn and the client cost alone is
measured beside the service's answers; and, run as a script (``_wsgi_floor.py PORT``), the same
constant answered by one Python thread on a socket, no HTTP server at all: what the machine
itself costs a request (two processes waking, the loopback, the client), after a pause too."""

from __future__ import annotations

import socket
import sys

BODY = b'{"status": "ok"}'
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)


def app(environ, start_response):
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
    )
    return [BODY]


def serve_raw(port: int) -> None:
    """One connection at a time, each request (headers only: the benchmark sends GETs) answered
    with RESPONSE as soon as its blank line arrives."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = b""
        while chunk := conn.recv(65536):
            pending += chunk
            while b"\r\n\r\n" in pending:
                _, _, pending = pending.partition(b"\r\n\r\n")
                conn.sendall(RESPONSE)
        conn.close()


if __name__ == "__main__":
    serve_raw(int(sys.argv[1]))
