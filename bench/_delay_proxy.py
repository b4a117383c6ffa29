"""A TCP proxy on loopback that holds each chunk for a moment each way: the database as if it ran
on another host (``bench/search.py --pg-delay-ms``). This machine has no ``tc netem``.

    python bench/_delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_SECONDS

Each direction of each connection is one thread that reads a chunk, sleeps, and sends it on, so
a round trip of the PostgreSQL protocol (a query, its answer) pays the delay twice, plus the
sleeps' own overshoot and two thread wake-ups: the benchmark measures and prints the round trip
it gets. Bytes are forwarded unchanged and in order.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time


def _pump(source: socket.socket, sink: socket.socket, delay: float) -> None:
    try:
        while data := source.recv(65536):
            time.sleep(delay)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def serve(listen_port: int, target_port: int, delay: float) -> None:
    server = socket.create_server(("127.0.0.1", listen_port), backlog=64)
    while True:
        client, _ = server.accept()
        upstream = socket.create_connection(("127.0.0.1", target_port))
        for end in (client, upstream):
            end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(source, sink, delay), daemon=True).start()


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
