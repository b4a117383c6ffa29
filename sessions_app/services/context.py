"""The live context: what the model sees next (head + summary + tail)."""

from __future__ import annotations

from typing import Any

from sessions_app.models import Message, Session


def live_rows(session: Session) -> list[Message]:
    """In conversation order. A summary sorts before a live original at its own position, which
    only happens when a fold stored its summary but could not archive what it covered."""
    return list(
        Message.objects.filter(session=session, active=True).order_by(
            "position", "-is_summary", "id"
        )
    )


def live_context(session: Session) -> list[dict[str, Any]]:
    """The live rows as an OpenAI ``messages`` array, ready to send."""
    return [row.as_openai() for row in live_rows(session)]
