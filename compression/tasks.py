"""django-q2 tasks. Idempotent: a task for a session already being compressed reports
"already running" instead of producing a second summary."""

from __future__ import annotations

from typing import Any

from compression.engine import AlreadyRunning, CompressionResult, compress
from sessions_app.models import Session


def result_dict(result: CompressionResult) -> dict[str, Any]:
    return {
        "session_id": str(result.session.pk),
        "outcome": result.outcome,
        "passes": [
            {
                "outcome": p.outcome,
                "event_id": p.event.pk,
                "tokens_before": p.event.tokens_before,
                "tokens_after": p.event.tokens_after,
                "rows_archived": p.event.rows_archived,
                "summary_message_id": p.summary.pk if p.summary else None,
                "reason": p.event.reason,
                "error": p.event.error,
            }
            for p in result.passes
        ],
        "continued_in": str(result.continued_in.pk) if result.continued_in else None,
        "live_tokens": result.session.live_tokens,
        "live_messages": result.session.live_messages,
    }


def compress_task(
    session_id: str,
    trigger: str,
    focus: str | None = None,
    around_position: int | None = None,
) -> dict[str, Any]:
    session = Session.objects.filter(pk=session_id).first()
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    try:
        result = compress(session, trigger=trigger, focus=focus, around_position=around_position)
    except AlreadyRunning as exc:
        return {"session_id": session_id, "outcome": "running", "error": exc.message}
    return result_dict(result)


def automatic_task(session_id: str, trigger: str) -> dict[str, Any]:
    """An automatic trigger's compression, re-checking the guards when it runs."""
    from compression.triggers import run_automatic

    session = Session.objects.filter(pk=session_id).first()
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    decision = run_automatic(session, trigger)
    if decision.result is not None:
        return result_dict(decision.result)
    return {"session_id": session_id, "outcome": decision.action, "error": decision.reason}
