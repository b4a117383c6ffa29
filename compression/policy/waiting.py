"""Waiting on a queued compression: a caller that asked to wait gets the task's answer once
the worker has run it. The queue's record is polled every 0.2 s (django-q's own ``fetch(wait=)``
polls every 10 ms: twenty times the queries)."""

from __future__ import annotations

import time
from typing import Any

from django.utils import timezone
from django_q.tasks import fetch

from sessions_app.models import Session
from sessions_app.services import StateConflict


def result_of(task_id: str, session: Session, seconds: float | None) -> dict[str, Any] | None:
    """A compression task's answer once the worker has run it, waiting at most ``seconds``
    (None: not at all); None if it has not finished by then."""
    if seconds is None:
        return None
    deadline = time.monotonic() + seconds
    while True:
        task = fetch(task_id)
        if task is not None:
            body: dict[str, Any] = (
                dict(task.result or {})
                if task.success
                else {
                    # The worker's result is a traceback: it stays in the task record.
                    "session_id": str(session.pk),
                    "outcome": "failed",
                    "error": f"The compression task {task_id} did not finish (the worker "
                    "stopped or timed out); the server log and the admin's failed tasks "
                    "have the details.",
                }
            )
            body["task_id"] = task_id
            return body
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


RUNNING = "A compression of this session is already running."


def refuse_while_running(session: Session) -> None:
    """A manual compression asked for while one runs starts nothing: 409, for every caller."""
    if session.compressing_until and session.compressing_until > timezone.now():
        raise StateConflict(RUNNING)


def manual_result(task_id: str, session: Session, seconds: float | None) -> dict[str, Any] | None:
    """``result_of`` for a manual compression, whoever asked (the API, MCP): one that found
    another running, or stopped at a failed pre-compact checkpoint, is a state conflict."""
    body = result_of(task_id, session, seconds)
    if body is None:
        return None
    if body.get("outcome") == "running":
        raise StateConflict(body.get("error") or RUNNING)
    if body.get("needs_confirmation"):
        refused = body["passes"][-1]
        raise StateConflict(
            f"The pre-compact checkpoint failed ({refused['error']}) and "
            "compression.checkpoint_required is set, so nothing was changed. Send "
            '"confirm": true to compress without the checkpoint.'
        )
    return body
