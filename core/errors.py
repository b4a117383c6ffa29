"""Unexpected errors: the traceback goes to the log, the person gets one line and an error id.

No API answer, compression event or page carries a traceback or a server path; the id is what
an operator greps the log for (``error id 3f9c2a1b``).
"""

from __future__ import annotations

import logging
import uuid

from core.logs import current_request_id

logger = logging.getLogger("hermes.errors")


def report(exc: BaseException, where: str) -> str:
    """Log ``exc`` with its traceback under a fresh error id; return the one-line message to
    show instead (it names the kind of error and the id, never the text of the exception,
    which may hold paths or data)."""
    error_id = uuid.uuid4().hex[:8]
    request_id = current_request_id()
    logger.error(
        "error id %s: unexpected %s in %s%s",
        error_id,
        type(exc).__name__,
        where,
        f" (request {request_id})" if request_id else "",
        exc_info=exc,
        extra={"error_id": error_id},
    )
    return (
        f"Internal error in {where} (error id {error_id}): the server log has the details; "
        "nothing else was changed by the failed step."
    )
