"""PostgreSQL whose per-request health check reads the socket instead of sending ``SELECT 1``.

With ``CONN_HEALTH_CHECKS`` Django checks a kept connection before a request's first statement,
and its PostgreSQL backend does that with ``SELECT 1``: a round trip on every request that reads
the database (0.1 ms back to back on loopback, more after a pause, and more again to a database
on another host). A server that ends a connection (a restart, ``pg_terminate_backend``,
``idle_session_timeout``) says so before it closes the socket, so a connection that is still
good has nothing waiting to be read. Only when something is waiting does this check ask the
server, as Django would; a connection with nothing waiting is used, and if the network dropped
it silently the request fails with a database error, as it could have just after ``SELECT 1``.

Under granian it connects with a connection opened and warmed ahead (core.handover).
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base

from core.handover import TakesHandedOver


class DatabaseWrapper(TakesHandedOver, base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            waiting, _, _ = select.select([connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket is gone
            return False
        # Something arrived unasked: a notice, or the server's goodbye before it closed.
        return super().is_usable() if waiting else True
