"""Request ids and structured logs.

A request id names one request everywhere it leaves a trace: its response header, its error
answer, its log lines and the log lines of the background tasks it queued. It lives in a context
variable, set by the request middleware or, in the worker, by the task wrapper from the kwarg the
request passed along (``task_kwargs``).

``server.log_format: json`` switches the log to one JSON object per line (``JsonFormatter``):
the stdlib's logging with a formatter of a few lines, rather than a dependency, since all it has
to do is dump the record's fields and the ``extra`` a call passes.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any

REQUEST_ID_HEADER = "X-Request-ID"
# Short and safe to echo into a header, a log line and a JSON body: what load balancers and
# tracing systems send (UUIDs, hex, base64url ids, "trace-span" pairs).
_SAFE_ID = re.compile(r"[A-Za-z0-9._:\-]{1,64}")

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hermes_request_id", default=None
)


def accept_request_id(incoming: str | None) -> str:
    """The caller's id if it is short and safe, else a fresh one (never an error: a bad id
    from a proxy must not fail the request)."""
    if incoming and _SAFE_ID.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    return _request_id.get()


def bind_request_id(request_id: str | None) -> contextvars.Token:
    """Set the id for this thread's (or task's) context; pass the token to ``unbind``."""
    return _request_id.set(request_id)


def unbind(token: contextvars.Token) -> None:
    _request_id.reset(token)


def task_kwargs() -> dict[str, str]:
    """Keyword arguments that carry the current request id into a queued task."""
    request_id = current_request_id()
    return {"request_id": request_id} if request_id else {}


class RequestIdFilter(logging.Filter):
    """Stamps every record with the request id of the context it was logged in, or of the
    request it names (Django logs a 4xx/5xx answer after the middleware has returned), or None."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            request_id = current_request_id()
            if request_id is None:
                request_id = getattr(getattr(record, "request", None), "request_id", None)
            record.request_id = request_id
        return True


class WithoutTraceback(logging.Filter):
    """For what a client did wrong and Django logs with its traceback (``django.security.*``: a
    ``Host`` header this service does not answer to, which every scanner sends): one line, as a
    warning. On the handler, since a logger's filters do not see its children's records."""

    PREFIX = "django.security."

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.PREFIX):
            return True
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


# LogRecord's own attributes: everything else on a record came from ``extra=``.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the request id, whatever the
    call passed in ``extra``, and the traceback (as one string) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
