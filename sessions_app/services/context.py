"""The live context: what the model sees next (head + summary + tail)."""

from __future__ import annotations

from collections.abc import Iterator
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


def sent(rows: list[Message]) -> Iterator[tuple[Message, dict[str, Any]]]:
    """Each message the live context sends, with the row it comes from: a summary marked
    ``prefixes_next`` goes ahead of the next row's own text, in the same message (alone only
    if nothing follows it)."""
    prefix: Message | None = None
    for row in rows:
        message = row.as_openai()
        if prefix is not None:
            message["content"] = _prepend(prefix.content or "", message.get("content"))
            prefix = None
        if row.is_summary and row.prefixes_next:
            prefix = row
            continue
        yield row, message
    if prefix is not None:
        yield prefix, prefix.as_openai()


def as_messages(rows: list[Message]) -> list[dict[str, Any]]:
    """Rows as an OpenAI ``messages`` array, ready to send."""
    return [message for _, message in sent(rows)]


def _prepend(prefix: str, content: Any) -> Any:
    if isinstance(content, list):
        return [{"type": "text", "text": prefix}, *content]
    return f"{prefix}\n\n{content}" if content else prefix


def live_context(session: Session) -> list[dict[str, Any]]:
    """The live rows as an OpenAI ``messages`` array, ready to send."""
    return as_messages(live_rows(session))
