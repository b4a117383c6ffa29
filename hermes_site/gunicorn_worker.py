"""The web server's worker: gunicorn's threads, with the errors gunicorn answers itself (before
Django sees the request) in the API's JSON shape instead of an HTML page, and each thread's
database connection warmed again, after the answer, once a request's end has closed it.

A request line over ``limit_request_line`` (a long query sent with GET), headers over their
limits or a request gunicorn cannot parse never reach Django, so no middleware can shape their
answer; a client of a JSON API should still get ``{"detail": ...}`` it can show."""

from __future__ import annotations

import json
from concurrent import futures
from functools import partial
from typing import Any

from gunicorn import util
from gunicorn.http import errors
from gunicorn.workers.gthread import ThreadWorker

# The requests gunicorn refuses as the client's, with what it answers them (others -- an
# unsupported transfer coding, a failed expectation, a proxy line -- keep gunicorn's answer).
REFUSED: tuple[tuple[type[Exception], int, str], ...] = (
    (errors.LimitRequestLine, 414, "URI Too Long"),
    (errors.LimitRequestHeaders, 431, "Request Header Fields Too Large"),
    *(
        (kind, 400, "Bad Request")
        for kind in (
            errors.InvalidRequestLine,
            errors.InvalidRequestMethod,
            errors.InvalidHTTPVersion,
            errors.InvalidHeader,
            errors.InvalidHeaderName,
            errors.ObsoleteFolding,
            errors.InvalidChunkSize,
            errors.ChunkMissingTerminator,
            errors.InvalidChunkExtension,
        )
    ),
)


def refusal(exc: BaseException, limit_request_line: int) -> tuple[int, str, str] | None:
    """(status, reason, detail) for a request gunicorn could not take, or None where gunicorn's
    own answer stands."""
    found = next(((s, r) for kind, s, r in REFUSED if isinstance(exc, kind)), None)
    if found is None:
        return None
    status, reason = found
    if status == 414:
        detail = (
            f"The request line is over {limit_request_line:,} bytes; send a long search as "
            "POST /api/v1/search with a JSON body."
        )
    elif status == 431:
        detail = "The request's headers are too large or too many."
    else:
        detail = f"The request could not be read as HTTP: {exc}"
    return status, reason, detail[:500]


class JsonErrorsWorker(ThreadWorker):
    def enqueue_req(self, conn: Any) -> None:
        """gunicorn's, but for the end: the connection goes back to the poller (or is closed) as
        soon as the answer is written, as gunicorn's own callback does, and only then, on the
        same thread, is its database connection warmed again where the request's end closed it
        (hermes_site.warm.rewarm_if_closed): a client's next request on this connection goes
        to another thread meanwhile instead of waiting for the warm-up."""
        task = self.tpool.submit(self._serve, conn)
        task.add_done_callback(partial(self._cancelled, conn))

    def _cancelled(self, conn: Any, task: futures.Future) -> None:
        """A task the pool cancelled never ran: finish_request closes its connection."""
        if task.cancelled():
            self.method_queue.defer(self.finish_request, conn, task)

    def _serve(self, conn: Any) -> None:
        done: futures.Future = futures.Future()
        try:
            done.set_result(self.handle(conn))
        except BaseException as exc:  # as the pool's future would hold it: finish_request reads it
            done.set_exception(exc)
        self.method_queue.defer(self.finish_request, conn, done)
        try:
            from hermes_site.warm import rewarm_if_closed

            rewarm_if_closed()
        except Exception as exc:  # a warm-up is never worth a thread: the next request opens it
            self.log.warning("warming a request thread's connection failed: %s", exc)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        found = refusal(exc, self.cfg.limit_request_line)
        if found is None:
            super().handle_error(req, client, addr, exc)
            return
        status, reason, detail = found
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        body = json.dumps({"detail": detail}).encode()
        head = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        try:
            util.write_nonblock(client, head + body)
        except OSError:
            self.log.debug("Failed to send error message.")
