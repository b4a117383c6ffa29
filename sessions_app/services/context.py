"""The live context: what the model sees next (head + summary + tail)."""

from __future__ import annotations

from typing import Any

from sessions_app.models import Message, Session


def live_rows(session: Session) -> list[Message]:
    return list(Message.objects.filter(session=session, active=True).order_by("position", "id"))


def live_context(session: Session) -> list[dict[str, Any]]:
    """The live rows as an OpenAI ``messages`` array, ready to send."""
    return [row.as_openai() for row in live_rows(session)]
