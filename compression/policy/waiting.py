"""Waiting on a queued compression: a caller that asked to wait gets the task's answer once
the worker has run it. The queue's record is polled every 0.2 s (django-q's own ``fetch(wait=)``
polls every 10 ms: twenty times the queries)."""

from __future__ import annotations

import time
from typing import Any

from django_q.tasks import fetch

from sessions_app.models import Session


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
